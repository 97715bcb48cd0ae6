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
"""Output folders: checked before anything runs, and claimed (an flock) so
that two runs never write one folder; results folders read back.
"""

import fcntl
import os
from typing import Callable, Sequence, TextIO

from tff_hdp.run_scripts import cli


def check_output_dir(output_dir: str) -> None:
  """Checks an --output_dir flag before any work: not a file, and writable
  (it, or the nearest existing directory above it, if it does not exist)."""
  cli.check(bool(output_dir), '--output_dir is required')
  path = os.path.abspath(output_dir)
  cli.check(not os.path.exists(path) or os.path.isdir(path),
        f'--output_dir={output_dir} is a file, not a directory: name a '
        'directory (it is created if missing)')
  existing = path
  while not os.path.exists(existing):
    existing = os.path.dirname(existing)
  cli.check(os.path.isdir(existing) and os.access(existing, os.W_OK | os.X_OK),
        f'--output_dir={output_dir} cannot be written ({existing} is not a '
        'writable directory)')
  lock_path = os.path.join(path, LOCK_FILE)
  if os.path.isfile(lock_path):  # Refuse a live run's directory early too.
    with open(lock_path, 'a+') as lock:
      _check_not_held(lock, output_dir)


def _check_not_held(lock: TextIO, output_dir: str) -> None:
  """Takes `lock`'s flock (kept while `lock` is open), or raises cli.UsageError
  naming the run that holds it."""
  try:
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
  except BlockingIOError:
    lock.seek(0)
    holder = lock.read().strip() or 'another process'
    raise cli.UsageError(f'--output_dir={output_dir} is in use by a running run '
                     f'({holder}); wait for it to end, or name another '
                     'directory') from None


LOCK_FILE = '.lock'


# The open lock file of this process's output directory, held until it exits
# (the OS releases the lock when the process ends, even by kill -9).
_OUTPUT_LOCK: list[TextIO] = []


def claim_output_dir(output_dir: str) -> None:
  """Creates --output_dir and takes its lock for the life of this process.

  A second run on a directory that a live run is writing is refused with
  one line (both would save the same checkpoint versions). The lock is an
  advisory `flock` on `<output_dir>/.lock`: the OS drops it when the holder
  exits, so resuming after a killed run just works.
  """
  check_output_dir(output_dir)
  os.makedirs(output_dir, exist_ok=True)
  lock = open(os.path.join(output_dir, LOCK_FILE), 'a+')  # pylint: disable=consider-using-with
  try:
    _check_not_held(lock, output_dir)
  except cli.UsageError:
    lock.close()
    raise
  lock.seek(0)
  lock.truncate()
  lock.write(f'pid {os.getpid()}')
  lock.flush()
  _OUTPUT_LOCK.append(lock)


def check_results_dir(results_dir: str) -> None:
  """Checks a --results_dir flag: given, and an existing directory."""
  cli.check(bool(results_dir),
        '--results_dir is required: a directory holding results.json files')
  cli.check(os.path.isdir(results_dir),
        f'--results_dir={results_dir} is not a directory')


def load_runs(results_dir: str, load: Callable[[str], Sequence]) -> Sequence:
  """`load(results_dir)`, the runs found under --results_dir; a results file
  `load` rejects (ValueError), or none at all, is a `cli.UsageError`."""
  try:
    runs = load(results_dir)
  except ValueError as e:
    raise cli.UsageError(str(e)) from None
  cli.check(bool(runs), f'--results_dir={results_dir}: no results.json with '
        'runs found under it')
  return runs
