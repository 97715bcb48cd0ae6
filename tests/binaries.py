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
import json
import os
import subprocess
import sys
from typing import Optional, Sequence

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


# Printed (on a line of its own, to stdout and to stderr) before each run of
# `run_in_one_process` and, with the run's exit status, after it; then, to
# stdout, its --output_dir's results.json as the run left it (or null).
_BEGIN = '@@ tests.binaries: run {} begins @@'
_END = '@@ tests.binaries: run {} exits {} @@'
_RESULTS = '@@ tests.binaries: run {} results.json @@ '

_IN_ONE_PROCESS = """
import json, os, runpy, sys, traceback
import numpy as np
from absl import flags
from tff_hdp.privacy import mechanism_key

drawn = mechanism_key.new_key


def run(path, args, key):
  if key is None:
    mechanism_key.new_key = drawn
  else:
    fixed = np.array(key, np.int64)
    mechanism_key.new_key = lambda mechanism_seed=None: fixed.copy()
  flags.FLAGS.unparse_flags()  # Each run parses its own flags afresh.
  sys.argv = [path, *args]
  try:
    runpy.run_path(path, run_name='__main__')
  except SystemExit as e:
    if e.code is None or isinstance(e.code, int):
      return e.code or 0
    print(e.code, file=sys.stderr)
  except BaseException:  # pylint: disable=broad-except
    traceback.print_exc()
  return 1


def end_of_process():
  # What the process's exit would do: release its --output_dir's lock.
  from tff_hdp.run_scripts import output_dirs
  for lock in output_dirs._OUTPUT_LOCK:  # pylint: disable=protected-access
    lock.close()
  output_dirs._OUTPUT_LOCK.clear()  # pylint: disable=protected-access


for i, (path, args, key) in enumerate(RUNS):
  for stream in (sys.stdout, sys.stderr):
    print(BEGIN.format(i), file=stream, flush=True)
  status = run(path, args, key)
  end_of_process()
  for stream in (sys.stdout, sys.stderr):
    print(END.format(i, status), file=stream, flush=True)
  found = None
  for arg in args:
    if arg.startswith('--output_dir='):
      written = os.path.join(arg.split('=', 1)[1], 'results.json')
      if os.path.exists(written):
        with open(written) as f:
          found = json.load(f)
  print(RESULTS.format(i) + json.dumps(found), flush=True)
"""


def _segment(text: str, i: int) -> tuple[Optional[str], Optional[int]]:
  """Run `i`'s part of `text` and its exit status, if it ended."""
  begin = _BEGIN.format(i) + '\n'
  if begin not in text:
    return None, None
  part = text.split(begin, 1)[1]
  end = '@@ tests.binaries: run %d exits ' % i
  if end not in part:
    return part, None
  part, rest = part.split(end, 1)
  return part, int(rest.split(' ', 1)[0])


def run_in_one_process(script: str, runs: Sequence[tuple[Sequence[str],
                                                         Optional[Sequence]]],
                       timeout: float = 900
                       ) -> list[subprocess.CompletedProcess]:
  """Runs run_scripts/`script` once per (args, key) of `runs`, one after the
  other in one Python process: what `run` (key None: the operating system
  draws it) or `run_with_key` does for each, with one start-up of
  TensorFlow and TFF for all. Each run parses its flags afresh (absl's
  `unparse_flags`), so none inherits another's. For binaries whose flags are
  defined by the modules they import (run_fedhdp.py, run_robust_hdp.py,
  run_udp.py), not by the script itself, which a second run would define
  twice.

  A run in a process that ran others is no fresh process: a test whose
  claim needs one (e.g. two processes agree bit for bit) puts the runs it
  compares first in their processes.

  Returns:
    One `CompletedProcess` per run: its exit status, the stdout and stderr
    it printed (TensorFlow's own log lines may land in a neighbour's) and,
    as `results_json`, its --output_dir's results.json as the run left it
    (None if there was none), before the next run could write over it.

  Raises:
    AssertionError: If the process did not finish every run (it crashed or
      timed out), with its stderr's end.
  """
  path = script_path(script)
  listed = [(path, list(args), None if key is None else [int(w) for w in key])
            for args, key in runs]
  code = (f'RUNS = {listed!r}\nBEGIN = {_BEGIN!r}\nEND = {_END!r}\n'
          f'RESULTS = {_RESULTS!r}\n' + _IN_ONE_PROCESS)
  done = subprocess.run([sys.executable, '-c', code], capture_output=True,
                        text=True, timeout=timeout, cwd=REPO, check=False)
  results = []
  for i, (_, args, _) in enumerate(listed):
    stdout, status = _segment(done.stdout, i)
    stderr, _ = _segment(done.stderr, i)
    assert status is not None and stderr is not None, (
        f'run {i} of {script} did not finish (exit {done.returncode}):\n'
        + done.stderr[-3000:])
    result = subprocess.CompletedProcess([path, *args], status, stdout,
                                         stderr)
    line = done.stdout.split(_RESULTS.format(i), 1)[1].split('\n', 1)[0]
    result.results_json = json.loads(line)
    results.append(result)
  return results


# What `ScriptSession`'s process runs: one command of its script per line of
# stdin (its arguments, as JSON), answered by one line of stdout
# ([exit status, its stdout, its stderr], as JSON).
_SESSION = """
import contextlib, io, json, runpy, sys, traceback
from absl import app, flags

app.define_help_flags()  # What app.run defines once per process.
pristine = set(flags.FLAGS)
answer = sys.stdout


def run(args):
  for name in set(flags.FLAGS) - pristine:  # The last command's own flags.
    delattr(flags.FLAGS, name)
  flags.FLAGS.unparse_flags()
  sys.argv = [PATH, *args]
  try:
    runpy.run_path(PATH, run_name='__main__')
  except SystemExit as e:
    if e.code is None or isinstance(e.code, int):
      return e.code or 0
    print(e.code, file=sys.stderr)
  except BaseException:  # pylint: disable=broad-except
    traceback.print_exc()
  return 1


for line in sys.stdin:
  out, err = io.StringIO(), io.StringIO()
  with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    status = run(json.loads(line))
  answer.write(json.dumps([status, out.getvalue(), err.getvalue()]) + '\\n')
  answer.flush()
"""


class ScriptSession:
  """One Python process that runs run_scripts/`script` once per `run`, as
  its own `__main__` with its own flags (those it defines are removed from
  absl's FLAGS before the next command): a script's commands without a
  Python start-up each. For TensorFlow-free scripts whose output is Python's
  (print, sys.stderr), which the session captures; what they import stays
  imported for the next command, so a test of what a fresh process imports
  needs a process of its own.
  """

  def __init__(self, script: str):
    self._path = script_path(script)
    self._process = None

  def run(self, *args: str, timeout: float = 300
          ) -> subprocess.CompletedProcess:
    """The command `script args...`: its exit status, stdout and stderr."""
    if self._process is None:
      self._process = subprocess.Popen(  # pylint: disable=consider-using-with
          [sys.executable, '-c', f'PATH = {self._path!r}\n' + _SESSION],
          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)
    self._process.stdin.write(json.dumps(list(args)) + '\n')
    self._process.stdin.flush()
    line = self._process.stdout.readline()
    assert line, f'the session of {self._path} ended (exit ' \
        f'{self._process.wait(timeout)})'
    status, stdout, stderr = json.loads(line)
    return subprocess.CompletedProcess([self._path, *args], status, stdout,
                                       stderr)

  def close(self) -> None:
    """Ends the process (it exits when its stdin closes)."""
    if self._process is not None:
      self._process.stdin.close()
      self._process.wait(60)
      self._process.stdout.close()
      self._process = None
