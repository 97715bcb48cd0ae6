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
"""What every binary in `run_scripts/` shares: one-line errors.

Bad input must end a binary with one line naming the flag (or file) and what
is allowed, exit status 2, and no traceback. absl's own parser prints several
lines and exits 1, so binaries pass `parse_flags` to `app.run` and raise
`UsageError` (or call `fail`) for checks made after parsing.

The binaries' other shared concerns are a module each: `run_flags` (the
flags every run and audit defines, and how a `main` begins), `resume` (runs
trained into their folders, resumed, their results written),
`output_dirs` (checked and claimed folders) and `subprocess_jobs` (the sweeps'
subprocesses).
"""

import atexit
import gc
import os
import sys
from typing import Callable, NoReturn, Sequence

from absl import flags
from absl import logging

# This module is `tff_hdp.run_scripts.cli` (setup.py installs the folder
# run_scripts/ as `tff_hdp.run_scripts`), so importing it runs
# tff_hdp/__init__.py first: its TensorFlow settings (oneDNN) are in place
# before any binary imports TensorFlow. Binaries need no import path set-up.

# The folder holding run_scripts/: the repository root in a checkout (and its
# editable install), the installed `tff_hdp/` otherwise. Sweeps run their
# sibling binaries as `REPO_ROOT/run_scripts/<name>.py`.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

EXIT_USAGE = 2
EXIT_RUNTIME = 1


class UsageError(ValueError):
  """Bad input from the command line; the message is the one line shown."""


def fail(message: str, status: int = EXIT_USAGE) -> NoReturn:
  """Prints `error: <message>` on one line to stderr and exits with
  `status` (2, bad input, unless told)."""
  prog = os.path.basename(sys.argv[0]) if sys.argv else 'tff_hdp'
  sys.stderr.write(f'{prog}: error: {message}\n')
  sys.stderr.flush()
  sys.exit(status)


def parse_flags(argv: Sequence[str]) -> Sequence[str]:
  """An `app.run` flags_parser whose errors are one line and exit 2."""
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    fail(str(e).splitlines()[0])


def parser_refusing(prefix: str, only: str) -> Callable[[Sequence[str]],
                                                         Sequence[str]]:
  """`parse_flags`, refusing flags that start with `prefix` by name (an
  audit's planted fault, which only the binary `only` takes)."""

  def parse(argv):
    for arg in argv[1:]:
      if arg.lstrip('-').startswith(prefix):
        fail(f'{arg.split("=")[0]} is an audit self-check that breaks the '
             f'privacy guarantee; only run_scripts/{only} takes it')
    return parse_flags(argv)

  return parse


def run_main(main: Callable[[Sequence[str]], None]) -> Callable[
    [Sequence[str]], None]:
  """Wraps `main` so that a `UsageError` it raises becomes `fail(...)`, and a
  TFF worker lost mid-run (`tff_hdp.distributed.WorkerLostError`, raised
  before the round is saved) one line and exit status 1."""

  def wrapped(argv):
    _skip_the_collections_at_exit()
    try:
      return main(argv)
    except UsageError as e:
      fail(str(e))
    except ConnectionError as e:
      # Imported by the run if it used workers; not imported here, since it
      # loads TensorFlow.
      distributed = sys.modules.get('tff_hdp.distributed')
      if distributed is None or not isinstance(e, distributed.WorkerLostError):
        raise
      fail(str(e), EXIT_RUNTIME)

  return wrapped


def _skip_the_collections_at_exit() -> None:
  """Makes the end of a binary's process quick: once the atexit handlers
  registered after this one (a TFF worker's `stop`, ...) have run, every
  object is frozen (`gc.freeze`), so the collections Python runs while it
  shuts down skip the millions of objects TensorFlow and TFF keep (some
  1.3 s of a process that loaded them, after its last output). Only
  garbage in reference cycles left at exit is then not collected, which
  Python never promises to finalize; what a binary writes is closed before
  it returns (the TensorBoard writer, results.json, the checkpoints). At
  exit only: a process that runs a binary's `main` and goes on keeps its
  collections."""
  global _FREEZE_REGISTERED
  if not _FREEZE_REGISTERED:
    atexit.register(gc.freeze)
    _FREEZE_REGISTERED = True


_FREEZE_REGISTERED = False


def _log_warnings_only() -> None:
  """Logs warnings and errors only unless --verbosity is given (TFF's
  program-state manager logs every checkpoint at INFO)."""
  if not flags.FLAGS['verbosity'].present:
    logging.set_verbosity(logging.WARNING)






def check_no_arguments(argv: Sequence[str]) -> None:
  """Refuses positional arguments: `main`'s `argv` beyond the program."""
  check(len(argv) <= 1, f'unexpected arguments: {" ".join(argv[1:])}')


def algorithms(value: str, allowed: Sequence[str]) -> tuple[str, ...]:
  """The runs `--algorithm` names: 'all' (every one of `allowed`, in order),
  or one or more of them, comma-separated, in the order given."""
  if value == 'all':
    return tuple(allowed)
  names = [v.strip() for v in value.split(',')]
  unknown = [n for n in names if n not in allowed]
  if unknown or len(set(names)) < len(names):
    raise UsageError(
        f'--algorithm={value}: give all, or distinct names from '
        f'{", ".join(allowed)} (comma-separated)')
  return tuple(names)


def check_names(names: Sequence[str], allowed: Sequence[str], flag: str,
                kind: str) -> None:
  """Refuses a name in `names`, the value of the list flag --`flag`, that is
  not one of `allowed` (names of a `kind`)."""
  for name in names:
    check(name in allowed, f'unknown {kind} {name!r} for --{flag}; '
          f'allowed: {", ".join(allowed)}')


def check(condition: bool, message: str) -> None:
  """Raises `UsageError(message)` unless `condition` holds."""
  if not condition:
    raise UsageError(message)


