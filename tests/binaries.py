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
"""Runs the binaries of run_scripts/ as a user does, and checks refusals."""

import asyncio
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def script_path(script: str) -> str:
  """The path of run_scripts/`script`."""
  return os.path.join(REPO, 'run_scripts', script)


def run(script: str, args, timeout: float = 600) -> subprocess.CompletedProcess:
  """Runs run_scripts/`script` with `args` from the repository's root."""
  # capture_output: if a TFF worker inherited our pipes and outlived the
  # script, this call would never return.
  return subprocess.run([sys.executable, script_path(script), *args],
                        capture_output=True, text=True, timeout=timeout,
                        cwd=REPO, check=False)


def assert_usage_error(result: subprocess.CompletedProcess,
                       message: str) -> None:
  """`result` exited with status 2 and one line of stderr naming `message`
  (no traceback)."""
  assert result.returncode == 2, result.stderr
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1, result.stderr
  assert message in lines[0], result.stderr
  assert 'Traceback' not in result.stderr


def assert_refused(script: str, args, message: str, output_dir) -> None:
  """run_scripts/`script` refuses `args` (`assert_usage_error`) and writes
  nothing to its --output_dir, `output_dir`."""
  result = run(script, [*args, f'--output_dir={output_dir}'], timeout=120)
  assert_usage_error(result, message)
  assert not os.path.exists(output_dir)


def saved_key(checkpoint_dir):
  """The mechanism key a run's checkpoint in `checkpoint_dir` holds."""
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  from tff_hdp import checkpoint  # pylint: disable=g-import-not-at-top
  manager = tff.program.FileProgramStateManager(str(checkpoint_dir))
  value, _ = asyncio.run(manager.load_latest(checkpoint._TEMPLATE))  # pylint: disable=protected-access
  return checkpoint._arrays_from_bytes(value['key'])[0]  # pylint: disable=protected-access


def run_with_key(script: str, args, key, timeout: float = 600
                 ) -> subprocess.CompletedProcess:
  """`run(script, args)` with the run's mechanism key set to `key`: a new
  run of that key, as no flag can give (a test's monkeypatch of
  `mechanism_key.new_key` in the binary's process)."""
  path = script_path(script)
  code = ('import runpy, sys\n'
          'import numpy as np\n'
          'from tff_hdp.privacy import mechanism_key\n'
          f'key = np.array({[int(w) for w in key]}, np.int64)\n'
          'mechanism_key.new_key = lambda mechanism_seed=None: key.copy()\n'
          f'sys.argv = [{path!r}] + {list(args)!r}\n'
          f'runpy.run_path({path!r}, run_name="__main__")\n')
  return subprocess.run([sys.executable, '-c', code], capture_output=True,
                        text=True, timeout=timeout, cwd=REPO, check=False)
