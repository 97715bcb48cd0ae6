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
"""What every binary in `run_scripts/` shares: flag errors and presets.

Bad input must end a binary with one line naming the flag (or file) and what
is allowed, exit status 2, and no traceback. absl's own parser prints several
lines and exits 1, so binaries pass `parse_flags` to `app.run` and raise
`UsageError` (or call `fail`) for checks made after parsing.
"""

import concurrent.futures
import dataclasses
import fcntl
import json
import os
import subprocess
import sys
from typing import (Any, Callable, Mapping, NamedTuple, NoReturn, Optional,
                    Sequence, TextIO)

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


def _log_warnings_only() -> None:
  """Logs warnings and errors only unless --verbosity is given (TFF's
  program-state manager logs every checkpoint at INFO)."""
  if not flags.FLAGS['verbosity'].present:
    logging.set_verbosity(logging.WARNING)


def begin_main(argv: Sequence[str], run: 'RunFlags') -> None:
  """What a `run_<system>.py`'s `main` does first: warnings only, refuses
  positional arguments and checks the shared flags `run`
  (`check_run_flags`)."""
  _log_warnings_only()
  check_no_arguments(argv)
  check_run_flags(run)


def begin_audit(argv: Sequence[str], quick: Mapping[str, Any]) -> None:
  """What an `audit_<system>.py`'s `main` does first: warnings only,
  refuses positional arguments, checks --output_dir and, with --quick,
  gives each flag of `quick` its value unless the command line set it."""
  _log_warnings_only()
  check_no_arguments(argv)
  check_output_dir(flags.FLAGS.output_dir)
  if flags.FLAGS.quick:
    for name, value in quick.items():
      if not flags.FLAGS[name].present:
        flags.FLAGS[name].value = value


def check_canaries(flag: str, canaries: int,
                   planted_noise_scale: float) -> None:
  """An audit's canary count (--`flag`, >= 2) and --planted_noise_scale
  (> 0)."""
  check(canaries >= 2, f'--{flag} must be >= 2, got {canaries}')
  check(planted_noise_scale > 0,
        f'--planted_noise_scale must be > 0, got {planted_noise_scale}')


def check_no_arguments(argv: Sequence[str]) -> None:
  """Refuses positional arguments: `main`'s `argv` beyond the program."""
  check(len(argv) <= 1, f'unexpected arguments: {" ".join(argv[1:])}')


def apply_preset(preset, flag_for_field: Mapping[str, str]) -> None:
  """Fills flags the user did not set from `preset`.

  Args:
    preset: A `tff_hdp.fedhdp.presets.Preset`.
    flag_for_field: Maps a preset attribute to the name of the flag it fills.
      An attribute may be a property (e.g. `clients_per_round`).
  """
  for field, flag_name in flag_for_field.items():
    if not flags.FLAGS[flag_name].present:
      flags.FLAGS[flag_name].value = getattr(preset, field)


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


def define_accountant_flag(drives: str):
  """--accountant=rdp|pld; `drives`: what it computes in this binary."""
  from tff_hdp.privacy import accounting  # pylint: disable=g-import-not-at-top
  return flags.DEFINE_enum(
      'accountant', 'rdp', list(accounting.ACCOUNTANTS),
      f'The accountant of {drives}: RDP (the papers\') or dp_accounting\'s '
      'PLD accountant (the tightest: a smaller epsilon for the same noise).')


class RunFlags(NamedTuple):
  """The flags every `run_<system>.py` shares (absl flag holders)."""
  seed: flags.FlagHolder
  mechanism_seed: flags.FlagHolder
  backend: flags.FlagHolder
  output_dir: flags.FlagHolder
  progress: flags.FlagHolder
  checkpoint_every: flags.FlagHolder
  keep_checkpoints: flags.FlagHolder
  tff_workers: flags.FlagHolder


def define_run_flags(*, output_dir: str, backends: Sequence[str],
                     backend: str, backend_help: str,
                     merged: str) -> RunFlags:
  """--seed, --mechanism_seed, --backend (one of `backends`, default
  `backend`), --output_dir (default `output_dir`), --progress,
  --checkpoint_every, --keep_checkpoints and --tff_workers (see
  `define_tff_workers_flag` for `merged`)."""
  return RunFlags(
      seed=define_seed_flag(),
      mechanism_seed=define_mechanism_seed_flag(),
      backend=flags.DEFINE_enum('backend', backend, list(backends),
                                f'How rounds run: {backend_help}'),
      output_dir=flags.DEFINE_string('output_dir', output_dir,
                                     'Where results are written.'),
      progress=flags.DEFINE_bool('progress', True, 'Show a progress bar.'),
      checkpoint_every=flags.DEFINE_integer(
          'checkpoint_every', 10, 'Save progress every k rounds under '
          '<output_dir>/checkpoints/ (secret: they hold the run\'s key; '
          'files 0600 in 0700 folders); the same command run again after a '
          'kill resumes exactly.'),
      keep_checkpoints=flags.DEFINE_bool(
          'keep_checkpoints', False, 'Keep <output_dir>/checkpoints/ once '
          'results.json is written. By default it is deleted then, so that '
          'a finished output directory holds no secret (docs/secrets.md).'),
      tff_workers=define_tff_workers_flag(merged))


def define_seed_flag():
  """--seed: the public randomness, published with the results."""
  return flags.DEFINE_integer(
      'seed', 0, 'The public seed, written to results.json: the data split, '
      'opt-outs and privacy levels, the initial model, dropout. No privacy '
      'guarantee rests on it (see --mechanism_seed).')


def define_mechanism_seed_flag():
  """--mechanism_seed: None (a secret key), or a reproducible run."""
  return flags.DEFINE_integer(
      'mechanism_seed', None, 'Unset (the default): every noise draw, cohort '
      'and DP-SGD batch comes from a secret 128-bit key drawn from the '
      'operating system at the start of the run and written nowhere but '
      'its checkpoints, if any, which are deleted when the command '
      'finishes (docs/secrets.md). Set: they are reproducible from this '
      'integer, which results.json publishes, so anyone can regenerate the '
      'noise; the table, the claim line and results.json then say epsilon '
      'is the mechanism\'s, not a guarantee for the run\'s outputs '
      '(research reproduction only).', lower_bound=0)


def mechanism_notice(mechanism_seed) -> None:
  """Says, at the start of a reproducible run, what it costs (as Opacus
  warns whenever its secure mode is off)."""
  if mechanism_seed is not None:
    from tff_hdp.privacy import mechanism_key  # pylint: disable=g-import-not-at-top
    print(f'note: --mechanism_seed={mechanism_seed}: '
          f'{mechanism_key.not_a_guarantee(mechanism_seed)}', flush=True)


def check_run_flags(run: RunFlags) -> None:
  """The shared flags' checks that need no work: the output directory, k,
  and the workers' addresses (`check_tff_workers` then reaches them)."""
  check_output_dir(run.output_dir.value)
  check(run.checkpoint_every.value >= 1,
        f'--checkpoint_every must be >= 1, got {run.checkpoint_every.value}')
  if run.tff_workers.value:
    from tff_hdp import worker_addresses  # pylint: disable=g-import-not-at-top
    try:
      worker_addresses.parse_workers(','.join(run.tff_workers.value))
    except ValueError as e:
      raise UsageError(f'--{e}') from None


def train_each(run: RunFlags, named_configs, train: Callable[..., dict],
               data, describe: Callable[[dict], str],
               extra_arguments: Optional[Callable[[Any, str], dict]] = None
               ) -> list[dict]:
  """What every `run_<system>.py` does once its input is checked: claims the
  output directory, then trains each (name, config) on `data` with its
  TensorBoard summaries under `tensorboard/<name>/` and its checkpoints
  under `checkpoints/<name>/` (a 0700 folder; resuming from them), in our
  TFF context, printing `<name>: <describe(record)>` after each.

  The checkpoints are kept until `train_and_write` has written results.json:
  a command of several runs killed after the first resumes each exactly. A
  run that results.json already holds, finished with the same configuration
  and without a checkpoint left, is not run again: its record is reused.

  Args:
    run: The binary's `define_run_flags`.
    named_configs: (name, config) pairs.
    train: The system's `training.train`.
    data: The federated data.
    describe: A record's one-line summary.
    extra_arguments: (config, name) -> more keyword arguments of `train`.

  Returns:
    The records, each with its 'name'.
  """
  output_dir = run.output_dir.value
  claim_output_dir(output_dir)
  finished = _finished_records(output_dir)
  reused = {name: _reusable(finished.get(name), name, config, output_dir)
            for name, config in named_configs}
  mechanism_notice(run.mechanism_seed.value)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tff_hdp import checkpoint  # pylint: disable=g-import-not-at-top
  from tff_hdp import runtime  # pylint: disable=g-import-not-at-top
  records = []
  with runtime.local_cpp_context():
    for name, config in named_configs:
      if reused[name] is not None:
        records.append(reused[name])
        print(f'{name}: {describe(reused[name])} (finished: from '
              'results.json)', flush=True)
        continue
      checkpoint.make_private_dir(os.path.join(output_dir, CHECKPOINTS))
      checkpoint_dir = os.path.join(output_dir, CHECKPOINTS, name)
      writer = tf.summary.create_file_writer(
          os.path.join(output_dir, 'tensorboard', name))
      try:
        record = train(
            config, data, summary_writer=writer, progress=run.progress.value,
            checkpoint_dir=checkpoint_dir,
            checkpoint_every=run.checkpoint_every.value,
            keep_checkpoints=True,  # Until results.json is written.
            **(extra_arguments(config, name) if extra_arguments else {}))
      except checkpoint.CheckpointMismatchError as e:
        raise UsageError(str(e)) from None
      finally:
        writer.close()
      record['name'] = name
      records.append(record)
      print(f'{name}: {describe(record)}', flush=True)
  return records


# A binary's checkpoints: <output_dir>/CHECKPOINTS/<run>/.
CHECKPOINTS = 'checkpoints'


def check_finished(run: RunFlags, named_configs) -> None:
  """Refuses, in one line, a (name, config) of `named_configs` that
  --output_dir's results.json holds finished under another configuration
  (`train_each` reuses one of the same). A binary calls it before it loads
  TensorFlow, whose import prints lines of its own."""
  output_dir = run.output_dir.value
  finished = _finished_records(output_dir)
  for name, config in named_configs:
    _reusable(finished.get(name), name, config, output_dir)


def _finished_records(output_dir: str) -> dict[str, dict]:
  """{name: record} of the runs in `output_dir`'s results.json ({} if it
  has none, or cannot be read)."""
  try:
    with open(os.path.join(output_dir, 'results.json')) as f:
      runs = json.load(f).get('runs', [])
    return {r['name']: r for r in runs if isinstance(r, dict) and 'name' in r}
  except (OSError, ValueError, AttributeError):
    return {}


def _reusable(record: Optional[dict], name: str, config,
              output_dir: str) -> Optional[dict]:
  """`record`, a finished run's in results.json, if `name` needs no
  training: it has no checkpoint left (a run with one resumes from it) and
  the same configuration (another is refused, as its checkpoint was)."""
  if record is None or os.path.isdir(
      os.path.join(output_dir, CHECKPOINTS, name)):
    return None
  from tff_hdp import checkpoint  # pylint: disable=g-import-not-at-top
  if checkpoint.identity(record.get('config', {})) != checkpoint.identity(
      dataclasses.asdict(config)):
    raise UsageError(
        f'{os.path.join(output_dir, "results.json")} holds a finished run '
        f'{name} of another configuration; use another --output_dir or '
        'delete it')
  return record


def retire_checkpoints(output_dir: str, names: Sequence[str]) -> None:
  """Deletes the checkpoints of the runs `names` (they hold their runs'
  keys), and <output_dir>/checkpoints/ if nothing else is left in it."""
  from tff_hdp import checkpoint  # pylint: disable=g-import-not-at-top
  for name in names:
    checkpoint.retire(os.path.join(output_dir, CHECKPOINTS, name))
  try:
    os.rmdir(os.path.join(output_dir, CHECKPOINTS))
  except OSError:
    pass  # Missing, or holding another command's runs.


def train_and_write(
    run: RunFlags, named_configs, train: Callable[..., dict], data, rows,
    title: str, extra_arguments: Optional[Callable[[Any, str], dict]] = None,
    **extra) -> None:
  """`train_each`, then `write_results` of the records under `title`, then
  the runs' checkpoints are deleted unless --keep_checkpoints.

  Args:
    run: The binary's `define_run_flags`.
    named_configs: (name, config) pairs.
    train: The system's `training.train`.
    data: The federated data.
    rows: The system's `table_rows` module: its `summary` describes a record,
      its `table` the records.
    title: The table's title.
    extra_arguments: (config, name) -> more keyword arguments of `train`.
    **extra: More entries of `results.json`.
  """
  records = train_each(run, named_configs, train, data, rows.summary,
                       extra_arguments)
  write_results(run.output_dir.value, title, rows.table(records), records,
                **extra)
  if not run.keep_checkpoints.value:
    retire_checkpoints(run.output_dir.value,
                       [name for name, _ in named_configs])


def write_results(output_dir: str, title: str, table: str,
                  records: Sequence[dict], **extra) -> None:
  """Prints the table under its title and writes `results.json` (`extra`,
  the command line, where it ran (`tff_hdp.machine.provenance`: the commit,
  the CPU and, after a run of 5 minutes or more, the matmul peak) and the
  records) and `table.txt`."""
  print('\n' + title + '\n' + table)
  from tff_hdp import machine  # pylint: disable=g-import-not-at-top
  seconds = sum(r.get('wall_clock_seconds') or 0.0 for r in records)
  tf = None
  if seconds >= machine.PEAK_AFTER_SECONDS:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with open(os.path.join(output_dir, 'results.json'), 'w') as f:
    json.dump({**extra, 'argv': sys.argv,
               'provenance': machine.provenance(tf, seconds),
               'runs': list(records)}, f, indent=1)
  with open(os.path.join(output_dir, 'table.txt'), 'w') as f:
    f.write(title + '\n' + table + '\n')
  print(f'\nwrote {os.path.join(output_dir, "results.json")}')


def write_audit(output_dir: str, title: str, lines: Sequence[str],
                results: dict, default=None) -> None:
  """Prints the audit's rows under their title and writes `results.json`
  (`results`; `default` as `json.dump`'s) and `audit.txt`."""
  print(title)
  print('\n'.join(lines), flush=True)
  with open(os.path.join(output_dir, 'results.json'), 'w') as f:
    json.dump(results, f, indent=1, default=default)
  with open(os.path.join(output_dir, 'audit.txt'), 'w') as f:
    f.write(title + '\n' + '\n'.join(lines) + '\n')
  print(f'wrote {os.path.join(output_dir, "results.json")}')


def define_tff_workers_flag(merged: str):
  """--tff_workers=host:port,...; `merged`: what the workers' partial results
  are and what happens once, after the merge, in this binary."""
  return flags.DEFINE_list(
      'tff_workers', [], 'host:port of running TFF worker_binary processes '
      f'(--backend=tff): each round\'s clients are spread over them; {merged}. '
      'Start each with <site-packages>/tensorflow_federated/data/'
      'worker_binary --port=PORT (docs/distributed.md).')


def check_tff_workers(values: Sequence[str]) -> tuple[str, ...]:
  """The --tff_workers addresses, each answering, or one line and exit 2.

  It loads no TensorFlow: call it before the binary does."""
  if not values:
    return ()
  from tff_hdp import worker_addresses  # pylint: disable=g-import-not-at-top
  try:
    addresses = worker_addresses.parse_workers(','.join(values))
    worker_addresses.check_workers(addresses)
  except ValueError as e:
    raise UsageError(f'--{e}') from None
  except ConnectionError as e:
    raise UsageError(str(e)) from None
  return tuple(addresses)


def define_audit_flags(release: str, global_view: Optional[str] = None):
  """An audit binary's --statistic and, if it offers the global observer
  (`global_view` says what that observer sees), --observe.

  Returns:
    (the --observe flag or None, the --statistic flag).
  """
  from tff_hdp.privacy import canary_audit  # pylint: disable=g-import-not-at-top
  observe = None
  if global_view is not None:
    observe = flags.DEFINE_enum(
        'observe', 'release', list(canary_audit.OBSERVERS),
        f'What the auditor sees: {release} (release), or {global_view} '
        '(global).')
  statistic = flags.DEFINE_enum(
      'statistic', 'lr', list(canary_audit.STATISTICS),
      'Per canary: the likelihood ratio of its projections on the releases '
      f'({"lr" if global_view is not None else release + "; lr"}), or the '
      'max or sum / sqrt(T) of its projections' +
      (' (cosines of the global observer\'s, which has no lr).'
       if global_view is not None else '.'))
  return observe, statistic


def check_audit_flags(observe: str, statistic: str) -> None:
  """One line and exit 2 for a statistic the observer cannot use."""
  from tff_hdp.privacy import canary_audit  # pylint: disable=g-import-not-at-top
  try:
    canary_audit.check_observer(observe, statistic)
  except ValueError as e:
    raise UsageError(f'--statistic={statistic}: {e}') from None


def check_output_dir(output_dir: str) -> None:
  """Checks an --output_dir flag before any work: not a file, and writable
  (it, or the nearest existing directory above it, if it does not exist)."""
  check(bool(output_dir), '--output_dir is required')
  path = os.path.abspath(output_dir)
  check(not os.path.exists(path) or os.path.isdir(path),
        f'--output_dir={output_dir} is a file, not a directory: name a '
        'directory (it is created if missing)')
  existing = path
  while not os.path.exists(existing):
    existing = os.path.dirname(existing)
  check(os.path.isdir(existing) and os.access(existing, os.W_OK | os.X_OK),
        f'--output_dir={output_dir} cannot be written ({existing} is not a '
        'writable directory)')
  lock_path = os.path.join(path, LOCK_FILE)
  if os.path.isfile(lock_path):  # Refuse a live run's directory early too.
    with open(lock_path, 'a+') as lock:
      _check_not_held(lock, output_dir)


def _check_not_held(lock: TextIO, output_dir: str) -> None:
  """Takes `lock`'s flock (kept while `lock` is open), or raises UsageError
  naming the run that holds it."""
  try:
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
  except BlockingIOError:
    lock.seek(0)
    holder = lock.read().strip() or 'another process'
    raise UsageError(f'--output_dir={output_dir} is in use by a running run '
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
  except UsageError:
    lock.close()
    raise
  lock.seek(0)
  lock.truncate()
  lock.write(f'pid {os.getpid()}')
  lock.flush()
  _OUTPUT_LOCK.append(lock)


def check_results_dir(results_dir: str) -> None:
  """Checks a --results_dir flag: given, and an existing directory."""
  check(bool(results_dir),
        '--results_dir is required: a directory holding results.json files')
  check(os.path.isdir(results_dir),
        f'--results_dir={results_dir} is not a directory')


def load_runs(results_dir: str, load: Callable[[str], Sequence]) -> Sequence:
  """`load(results_dir)`, the runs found under --results_dir; a results file
  `load` rejects (ValueError), or none at all, is a `UsageError`."""
  try:
    runs = load(results_dir)
  except ValueError as e:
    raise UsageError(str(e)) from None
  check(bool(runs), f'--results_dir={results_dir}: no results.json with '
        'runs found under it')
  return runs


def run_logged(command: Sequence[str], output_dir: str,
               threads: Optional[int] = None) -> int:
  """Runs `command` with its output appended to `<output_dir>/log.txt`;
  returns its exit status (the sweeps' one run). `threads`: TensorFlow's
  intra- and inter-op threads in that process (None: its default, every
  core)."""
  os.makedirs(output_dir, exist_ok=True)
  env = None if threads is None else dict(
      os.environ, TF_NUM_INTRAOP_THREADS=str(threads),
      TF_NUM_INTEROP_THREADS=str(threads))
  with open(os.path.join(output_dir, 'log.txt'), 'ab') as log:
    return subprocess.run(list(command), stdout=log, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, env=env,
                          check=False).returncode


def threads_per_job(parallel: int) -> Optional[int]:
  """TensorFlow threads of each of `parallel` runs at a time: the cores
  shared among them (None for one run: TensorFlow's default). k runs of
  every core's threads each oversubscribe the cores, and TensorFlow's
  spinning thread pools then slow each other down."""
  if parallel <= 1:
    return None
  from tff_hdp.bench import parallel as bench_parallel  # pylint: disable=g-import-not-at-top
  return max(1, bench_parallel.available_cores() // parallel)


def run_jobs(jobs: Sequence[tuple[str, Callable[[], int]]],
             parallel: int) -> list[str]:
  """Runs named jobs (each returns an exit status), `parallel` at a time,
  printing `done <name>` or `FAILED (exit <rc>) <name>` as each ends;
  returns the names of the failed ones."""
  failed = []
  with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
    futures = {pool.submit(job): name for name, job in jobs}
    for future in concurrent.futures.as_completed(futures):
      name, rc = futures[future], future.result()
      print(f'{"done" if rc == 0 else f"FAILED (exit {rc})"} {name}',
            flush=True)
      if rc:
        failed.append(name)
  return failed


def exit_if_failed(failed: Sequence[str], jobs: str) -> None:
  """Ends a sweep whose `jobs` ('rows', 'runs') named `failed` failed: one
  line naming them and exit status 1; returns if none did."""
  if failed:
    fail(f'{len(failed)} {jobs} failed (see their log.txt): '
         f'{", ".join(failed)}', EXIT_RUNTIME)
