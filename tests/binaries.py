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
import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
from typing import Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def script_path(script: str) -> str:
  """The path of run_scripts/`script`."""
  return os.path.join(REPO, 'run_scripts', script)


def run(script: str, args, timeout: float = 600) -> subprocess.CompletedProcess:
  """Runs run_scripts/`script` with `args` from the repository's root, as
  `python <script> <args>` would, in a process of its own forked from one
  that has loaded TensorFlow (`run_python`)."""
  return run_python([script_path(script), *args], timeout)


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
  nothing to its --output_dir, `output_dir` (run by
  `run_before_tensorflow`)."""
  result = run_before_tensorflow(script,
                                 [*args, f'--output_dir={output_dir}'])
  assert_usage_error(result, message)
  assert not os.path.exists(output_dir)


# The kept processes below run a command so: `path` as `__main__` with
# `args` (or `-c`'s code), its exit status as `python <path>` would give it
# (a SystemExit's code, a message printed as exit 1, a traceback for
# anything else).
_RUN_AS_MAIN = """
import runpy, sys, traceback


def exit_status(main):
  try:
    main()
    return 0
  except SystemExit as e:
    if e.code is None or isinstance(e.code, int):
      return e.code or 0
    print(e.code, file=sys.stderr)
  except BaseException:  # pylint: disable=broad-except
    traceback.print_exc()
  return 1


def run_as_main(path, args):
  sys.argv = [path, *args]
  return exit_status(lambda: runpy.run_path(path, run_name='__main__'))


def run_code(code, args):
  sys.argv = ['-c', *args]
  return exit_status(lambda: exec(compile(code, '<string>', 'exec'),
                                  {'__name__': '__main__'}))
"""


# What `run_python`'s process runs. It loads TensorFlow as a binary does
# (after what every binary sets before it: TF_CPP_MIN_LOG_LEVEL and
# tff_hdp's TF_ENABLE_ONEDNN_OPTS), without starting it: no op has run, so
# neither its thread pools nor its devices exist (they start at a process's
# first op). Then, per line of stdin ([argv after `python`, working
# directory, environment, stdout and stderr files], as JSON), it forks a
# child, answers its pid, and once it has ended its exit status (as
# `subprocess` gives it: negative for a signal). The child takes the
# command's directory, environment and output files, runs it as `python`
# would (`sys.path[0]` its script's folder, or '' for -c), then ends as
# Python's exit does: it waits for the command's threads and runs its
# atexit functions (tff_hdp's runtime ends its TFF worker there).
_PRELOADED = _RUN_AS_MAIN + """
import atexit, json, os, sys, threading
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
import tff_hdp  # pylint: disable=unused-import
import tensorflow  # pylint: disable=unused-import

answer = os.fdopen(os.dup(1), 'w')


def child(argv, cwd, env, out, err):
  os.setpgid(0, 0)  # Its own group, which a timeout ends whole.
  answer.close()
  sys.stdin.close()
  sys.stdin = open(os.devnull)
  os.dup2(sys.stdin.fileno(), 0)
  for fd, path in ((1, out), (2, err)):
    opened = os.open(path, os.O_WRONLY | os.O_TRUNC)
    os.dup2(opened, fd)
    os.close(opened)
  os.chdir(cwd)
  os.environ.clear()
  os.environ.update(env)
  if argv[0] == '-c':
    sys.path[0] = ''
    status = run_code(argv[1], argv[2:])
  else:
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    status = run_as_main(argv[0], argv[1:])
  threading._shutdown()  # pylint: disable=protected-access
  atexit._run_exitfuncs()  # pylint: disable=protected-access
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(status & 0xFF)  # pylint: disable=protected-access


for line in sys.stdin:
  request = json.loads(line)
  pid = os.fork()
  if pid == 0:
    child(*request)
  answer.write(f'{pid}\\n')
  answer.flush()
  _, wait_status = os.waitpid(pid, 0)
  answer.write(f'{os.waitstatus_to_exitcode(wait_status)}\\n')
  answer.flush()
"""

# The process of `run_python`, started on first use.
_PRELOADED_PROCESS = []


def _end(kept: list) -> None:
  """Ends the kept process in `kept` (its loop ends with its stdin)."""
  for process in kept:
    process.stdin.close()
    process.wait(60)
    process.stdout.close()
  kept.clear()


def _kept(kept: list, code: str) -> subprocess.Popen:
  """The live process in `kept`, running `code`; started if none is."""
  if kept and kept[0].poll() is not None:
    _end(kept)
  if not kept:
    kept.append(subprocess.Popen(  # pylint: disable=consider-using-with
        [sys.executable, '-c', code], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True, cwd=REPO))
  return kept[0]


atexit.register(_end, _PRELOADED_PROCESS)


def _answer(process, timeout: Optional[float]) -> Optional[int]:
  """The next line `process` answers, as an int; None on a timeout."""
  ready, _, _ = select.select([process.stdout], [], [], timeout)
  line = process.stdout.readline() if ready else ''
  return int(line) if line else None


def run_python(argv: Sequence[str], timeout: float = 600,
               env: Optional[dict[str, str]] = None
               ) -> subprocess.CompletedProcess:
  """`subprocess.run([sys.executable, *argv], capture_output=True,
  text=True, timeout=timeout, cwd=REPO, env=env)`, in a process forked from a kept
  one that has loaded TensorFlow (`_PRELOADED`): the command's own start-up
  but for TensorFlow's import, some 5 s a command on the two-core machine.
  The child is a fresh process in all that a run starts: TensorFlow's
  context, threads and devices, TFF and its worker, the mechanism key, the
  flags.

  Its stdout and stderr go to files, not pipes: a TFF worker that inherited
  them and outlived the command could not hold this call open.

  Raises:
    subprocess.TimeoutExpired: If the command ran over `timeout` seconds
      (its process group is killed first).
  """
  process = _kept(_PRELOADED_PROCESS, _PRELOADED)
  with tempfile.TemporaryDirectory() as folder:
    paths = [os.path.join(folder, name) for name in ('stdout', 'stderr')]
    for path in paths:
      open(path, 'w').close()  # pylint: disable=consider-using-with
    environment = dict(os.environ if env is None else env)
    process.stdin.write(json.dumps([list(argv), REPO, environment, *paths])
                        + '\n')
    process.stdin.flush()
    pid = _answer(process, 120)
    status = None if pid is None else _answer(process, timeout)
    if status is None:
      if pid is not None:
        with contextlib.suppress(ProcessLookupError):  # It just ended.
          os.killpg(pid, signal.SIGKILL)
      process.kill()
      _end(_PRELOADED_PROCESS)
      raise subprocess.TimeoutExpired([sys.executable, *argv], timeout)
    outputs = []
    for path in paths:
      with open(path, errors='replace') as f:
        outputs.append(f.read())
  return subprocess.CompletedProcess([sys.executable, *argv], status,
                                     *outputs)


# What `run_before_tensorflow`'s process runs: one command per line of
# stdin ([script path, its arguments], as JSON), each as that script's
# `__main__` with its stdout and stderr (file descriptors 1 and 2, so C++
# output too) captured, answered by one line ([exit status, stdout, stderr,
# whether TensorFlow is still unloaded], as JSON) on a copy of the original
# stdout. After each, what the command defined is forgotten: its flags, and
# the modules of tff_hdp.run_scripts it imported (which define flags when
# imported).
_BEFORE_TENSORFLOW = _RUN_AS_MAIN + """
import json, os, runpy, sys, tempfile, traceback
from absl import app, flags

app.define_help_flags()  # What app.run defines once per process.
pristine = set(flags.FLAGS)
answer = os.fdopen(os.dup(1), 'w')


def run(path, args):
  sys.path[0] = os.path.dirname(path)  # As `python <path>` has it.
  return run_as_main(path, args)


def captured(path, args):
  with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
    saved = os.dup(1), os.dup(2)
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    try:
      status = run(path, args)
    finally:
      sys.stdout.flush()
      sys.stderr.flush()
      for fd, copy in zip((1, 2), saved):
        os.dup2(copy, fd)
        os.close(copy)
    texts = []
    for f in (out, err):
      f.seek(0)
      texts.append(f.read().decode(errors='replace'))
  return [status, *texts]


for line in sys.stdin:
  modules = set(sys.modules)
  result = captured(*json.loads(line))
  for name in set(flags.FLAGS) - pristine:
    delattr(flags.FLAGS, name)
  flags.FLAGS.unparse_flags()
  for name in set(sys.modules) - modules:
    if name.startswith('tff_hdp.run_scripts.'):
      del sys.modules[name]
      parent, _, child = name.rpartition('.')
      if hasattr(sys.modules.get(parent), child):  # Else `from` reuses it.
        delattr(sys.modules[parent], child)
  unloaded = 'tensorflow' not in sys.modules
  answer.write(json.dumps([*result, unloaded]) + '\\n')
  answer.flush()
  if not unloaded:
    break  # Its next command would not print TensorFlow's start-up lines.
"""

# The process of `run_before_tensorflow`, started on first use; a new one
# once TensorFlow is loaded in it.
_KEPT = []
atexit.register(_end, _KEPT)


def run_before_tensorflow(script: str, args, timeout: float = 120
                          ) -> subprocess.CompletedProcess:
  """`run(script, args)` for a command that ends before the script loads
  TensorFlow (a refusal, --list, --helpfull), without a Python start-up of
  its own: such commands run one after another in one process, each as the
  script's `__main__` with its own flags, its stdout and stderr (C++ output
  too) captured. What a fresh process would print that this one does not:
  TensorFlow's start-up lines (the process is replaced once a command loads
  TensorFlow, so the next command that loads it prints them), and warnings
  printed when a module other than tff_hdp.run_scripts' is first imported
  (only the first command that imports it shows them)."""
  process = _kept(_KEPT, _BEFORE_TENSORFLOW)
  process.stdin.write(json.dumps([script_path(script), list(args)]) + '\n')
  process.stdin.flush()
  ready, _, _ = select.select([process.stdout], [], [], timeout)
  line = process.stdout.readline() if ready else ''
  if not line:  # It timed out, or its process ended.
    process.kill()
    _end(_KEPT)
    raise AssertionError(f'{script} {args}: no answer (timeout {timeout} s)')
  status, stdout, stderr, unloaded = json.loads(line)
  if not unloaded:
    _end(_KEPT)
  return subprocess.CompletedProcess([script_path(script), *args], status,
                                     stdout, stderr)


def saved_key(checkpoint_dir):
  """The mechanism key a run's checkpoint in `checkpoint_dir` holds."""
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  from tff_hdp import checkpoint  # pylint: disable=g-import-not-at-top
  manager = tff.program.FileProgramStateManager(str(checkpoint_dir))
  value, _ = asyncio.run(manager.load_latest(checkpoint._TEMPLATE))  # pylint: disable=protected-access
  return checkpoint._arrays_from_bytes(value['key'])[0]  # pylint: disable=protected-access


# Printed (on a line of its own, to stdout and to stderr) before each run of
# `run_in_one_process` and, with the run's exit status, after it; then, to
# stdout, its --output_dir's results.json as the run left it (or null).
_BEGIN = '@@ tests.binaries: run {} begins @@'
_END = '@@ tests.binaries: run {} exits {} @@'
_RESULTS = '@@ tests.binaries: run {} results.json @@ '

_IN_ONE_PROCESS = _RUN_AS_MAIN + """
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
  return run_as_main(path, args)


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
  other in one Python process (`run_python`'s): what `run` does for each
  (key None: the operating system draws it; else the run's mechanism key is `key`, a new
  run of that key, as no flag can give), with one start-up of TensorFlow
  and TFF for all. Each run parses its flags afresh (absl's
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
  done = run_python(['-c', code], timeout)
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

