# Copyright 2026, The tff_hdp Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""`binaries.run_python` runs a command as `python` would, in a process of
its own forked from one that has loaded TensorFlow and not started it."""

import json
import os
import subprocess
import sys

import pytest

from tests import binaries

_REPORT = """
import atexit, json, os, sys, threading, time
import tensorflow as tf
from tensorflow.python.eager import context
print('to stderr', file=sys.stderr)
started = context.context()._initialized  # pylint: disable=protected-access
report = dict(argv=sys.argv, cwd=os.getcwd(), path0=sys.path[0],
              pid=os.getpid(), env=os.environ.get('TFF_HDP_TEST_VALUE'),
              started=started, stdin=sys.stdin.read())
tf.constant(1.0) + 1.0  # This process starts TensorFlow: its own threads.
print(json.dumps(report), flush=True)
# Python's exit waits for the threads and then runs the atexit functions.
threading.Thread(target=lambda: (time.sleep(0.2), print('thread ended'))
                 ).start()
atexit.register(lambda: print('atexit ran', flush=True))
sys.exit(int(sys.argv[1]))
"""


def test_a_command_runs_as_python_would_in_a_fresh_process(monkeypatch):
  monkeypatch.setenv('TFF_HDP_TEST_VALUE', 'given')
  first = binaries.run_python(['-c', _REPORT, '3'])
  second = binaries.run_python(['-c', _REPORT, '0'])
  assert first.returncode == 3 and second.returncode == 0, first.stderr
  lines = first.stdout.splitlines()
  report = json.loads(lines[0])
  assert lines[1:] == ['thread ended', 'atexit ran']
  assert 'to stderr' in first.stderr
  assert report == dict(argv=['-c', '3'], cwd=binaries.REPO, path0='',
                        pid=report['pid'], env='given', started=False,
                        stdin='')
  # Each command its own process, TensorFlow not started by the one before.
  assert json.loads(second.stdout.splitlines()[0])['pid'] != report['pid']
  assert json.loads(second.stdout.splitlines()[0])['started'] is False
  assert report['pid'] != os.getpid()


def test_a_script_sees_its_folder_first_on_the_path(tmp_path):
  script = tmp_path / 'script.py'
  script.write_text('import sys\nprint(sys.path[0], sys.argv[1:])\n'
                    'raise ValueError("no")\n')
  result = binaries.run_python([str(script), '--a=1'])
  assert result.returncode == 1
  assert result.stdout == f"{tmp_path} ['--a=1']\n"
  assert result.stderr.rstrip().endswith('ValueError: no')
  assert 'Traceback' in result.stderr


def test_a_signal_and_a_timeout_are_reported_as_subprocess_does():
  killed = binaries.run_python(
      ['-c', 'import os, signal; os.kill(os.getpid(), signal.SIGTERM)'])
  assert killed.returncode == -15
  with pytest.raises(subprocess.TimeoutExpired):
    binaries.run_python(['-c', 'import time; time.sleep(60)'], timeout=1)
  # A new kept process serves the next command, which ends normally.
  ended = binaries.run_python(['-c', 'print(1)'])
  assert (ended.returncode, ended.stdout) == (0, '1\n')


def test_tensorflow_is_loaded_before_the_command_and_tff_is_not():
  # TFF starts a thread when imported, which a forked child would lack.
  result = binaries.run_python(['-c', (
      'import sys; print("tensorflow" in sys.modules, '
      '"tensorflow_federated" in sys.modules)')])
  assert result.stdout.split() == ['True', 'False']
  assert result.args[0] == sys.executable
