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
"""The flags every run and audit binary shares, defined and checked once.

`define_run_flags` (the fields of `tff_hdp.run_config.RunConfig` every
system's config shares, with the system's defaults, and the driver's
output and checkpoint directories and progress), `shared_config` (the
`RunConfig` they give) and the audits' flags; `begin_main` and
`begin_audit`, what a binary's `main` does first.
"""

import dataclasses
from typing import Any, Mapping, NamedTuple, Optional, Sequence

from absl import flags

from tff_hdp import run_config
from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import output_dirs


def begin_main(argv: Sequence[str], run: 'RunFlags') -> None:
  """What a `run_<system>.py`'s `main` does first: warnings only, refuses
  positional arguments and checks the shared flags `run`
  (`check_run_flags`)."""
  cli._log_warnings_only()
  cli.check_no_arguments(argv)
  check_run_flags(run)


def begin_audit(argv: Sequence[str], quick: Mapping[str, Any]) -> None:
  """What an `audit_<system>.py`'s `main` does first: warnings only,
  refuses positional arguments, checks --output_dir and, with --quick,
  gives each flag of `quick` its value unless the command line set it."""
  cli._log_warnings_only()
  cli.check_no_arguments(argv)
  output_dirs.check_output_dir(flags.FLAGS.output_dir)
  if flags.FLAGS.quick:
    for name, value in quick.items():
      if not flags.FLAGS[name].present:
        flags.FLAGS[name].value = value


def check_canaries(flag: str, canaries: int,
                   planted_noise_scale: float) -> None:
  """An audit's canary count (--`flag`, >= 2) and --planted_noise_scale
  (> 0)."""
  cli.check(canaries >= 2, f'--{flag} must be >= 2, got {canaries}')
  cli.check(planted_noise_scale > 0,
        f'--planted_noise_scale must be > 0, got {planted_noise_scale}')


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


def config_default(config_class, name: str) -> Any:
  """The default of the field `name` of the dataclass `config_class` (a
  system's config): a flag mapping one to one onto the field takes it, so
  the binary and the Python API share one default."""
  field = {f.name: f for f in dataclasses.fields(config_class)}[name]
  if field.default_factory is not dataclasses.MISSING:
    return field.default_factory()
  if field.default is dataclasses.MISSING:
    raise ValueError(f'{config_class.__name__}.{name} has no default')
  return field.default


def define_accountant_flag(drives: str, default: str = 'rdp'):
  """--accountant=rdp|pld; `drives`: what it computes in this binary."""
  from tff_hdp.privacy import accounting  # pylint: disable=g-import-not-at-top
  return flags.DEFINE_enum(
      'accountant', default, list(accounting.ACCOUNTANTS),
      f'The accountant of {drives}: RDP (the papers\') or dp_accounting\'s '
      'PLD accountant (the tightest: a smaller epsilon for the same noise).')


class RunFlags(NamedTuple):
  """The flags every `run_<system>.py` shares (absl flag holders): one per
  field of `tff_hdp.run_config.RunConfig`, and the driver's options."""
  seed: flags.FlagHolder
  mechanism_seed: flags.FlagHolder
  backend: flags.FlagHolder
  output_dir: flags.FlagHolder
  progress: flags.FlagHolder
  checkpoint_every: flags.FlagHolder
  keep_checkpoints: flags.FlagHolder
  tff_workers: flags.FlagHolder
  tff_worker_timeout: flags.FlagHolder
  rounds: flags.FlagHolder
  eval_every: flags.FlagHolder
  delta: flags.FlagHolder
  accountant: flags.FlagHolder


# The help of the shared flags not defined by a function of their own.
_HELP = {
    'rounds': 'Training rounds (T; paper 003\'s E).',
    'eval_every': 'Evaluate every k rounds (and after the last).',
    'delta': 'delta in (0, 1) of every epsilon reported (or calibrated).',
}


def define_run_flags(config_class, *, output_dir: str, backend_help: str,
                     merged: str, accountant_drives: str,
                     from_preset: Sequence[str] = ()) -> RunFlags:
  """One flag per field of `tff_hdp.run_config.RunConfig`, and the driver's.

  --rounds, --eval_every, --seed, --mechanism_seed, --delta, --accountant
  (`accountant_drives`: what it computes in this binary), --backend
  (`backend_help`: what each backend is here) and --tff_workers (see
  `define_tff_workers_flag` for `merged`, and --tff_worker_timeout with
  it), each defaulting to the field's
  default in `config_class` (the system's config, a `RunConfig`), but
  those named in `from_preset`, which default to None: the binary fills
  them from its dataset's preset (`shared_config`); and --output_dir
  (default `output_dir`), --progress, --checkpoint_every and
  --keep_checkpoints.
  """
  def default(name):
    return None if name in from_preset else config_default(config_class, name)

  def preset_note(name):
    return ' Default: the preset\'s.' if name in from_preset else ''

  numbers = {name: define(name, default(name), _HELP[name] + preset_note(name))
             for name, define in (('rounds', flags.DEFINE_integer),
                                  ('eval_every', flags.DEFINE_integer),
                                  ('delta', flags.DEFINE_float))}
  return RunFlags(
      seed=define_seed_flag(default('seed')),
      mechanism_seed=define_mechanism_seed_flag(default('mechanism_seed')),
      backend=flags.DEFINE_enum(  # The system's default listed first.
          'backend', default('backend'),
          sorted(run_config.BACKENDS, key=lambda b: b != default('backend')),
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
      tff_workers=define_tff_workers_flag(merged,
                                          list(default('tff_workers'))),
      tff_worker_timeout=define_tff_worker_timeout_flag(),
      accountant=define_accountant_flag(accountant_drives,
                                        default('accountant')),
      **numbers)


def shared_config(run: RunFlags, preset=None) -> run_config.RunConfig:
  """The `RunConfig` of the parsed shared flags `run`, for a system's
  config: `FedHdpConfig(**shared_config(RUN).run_fields(), ...)`.

  A flag left None (one of `define_run_flags`'s `from_preset`) takes the
  attribute of the same name of `preset`, the dataset's. Not checked here:
  the system's config checks it (`RunConfig.validate_run`).
  """
  def value(name):
    flag = getattr(run, name)
    return (getattr(preset, name) if flag.value is None and preset is not None
            else flag.value)

  return run_config.RunConfig(
      rounds=value('rounds'), eval_every=value('eval_every'),
      seed=run.seed.value, mechanism_seed=run.mechanism_seed.value,
      delta=value('delta'), accountant=run.accountant.value,
      backend=run.backend.value, tff_workers=tuple(run.tff_workers.value))


def define_seed_flag(default: int = 0):
  """--seed: the public randomness, published with the results."""
  return flags.DEFINE_integer(
      'seed', default,
      'The public seed, written to results.json: the data split, '
      'opt-outs and privacy levels, the initial model, dropout. No privacy '
      'guarantee rests on it (see --mechanism_seed).')


def define_mechanism_seed_flag(default: Optional[int] = None):
  """--mechanism_seed: None (a secret key), or a reproducible run."""
  return flags.DEFINE_integer(
      'mechanism_seed', default,
      'Unset (the default): every noise draw, cohort '
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
  output_dirs.check_output_dir(run.output_dir.value)
  cli.check(run.checkpoint_every.value >= 1,
        f'--checkpoint_every must be >= 1, got {run.checkpoint_every.value}')
  if run.tff_workers.value:
    from tff_hdp import worker_addresses  # pylint: disable=g-import-not-at-top
    try:
      worker_addresses.parse_workers(','.join(run.tff_workers.value))
    except ValueError as e:
      raise cli.UsageError(f'--{e}') from None


def define_tff_workers_flag(merged: str, default: Sequence[str] = ()):
  """--tff_workers=host:port,...; `merged`: what the workers' partial results
  are and what happens once, after the merge, in this binary."""
  return flags.DEFINE_list(
      'tff_workers', list(default),
      'host:port of running TFF worker_binary processes '
      f'(--backend=tff): each round\'s clients are spread over them; {merged}. '
      'Start each with <site-packages>/tensorflow_federated/data/'
      'worker_binary --port=PORT (docs/distributed.md).')


# How long a binary waits for each --tff_workers address to answer.
DEFAULT_WORKER_TIMEOUT = 10.0


def define_tff_worker_timeout_flag():
  """--tff_worker_timeout: seconds to wait for each worker to answer."""
  return flags.DEFINE_float(
      'tff_worker_timeout', DEFAULT_WORKER_TIMEOUT,
      'Seconds to wait, before anything is written, for each --tff_workers '
      'address to answer (a worker just started may need a few); one that '
      'does not is refused in one line (exit 2).', lower_bound=0.0)


def check_tff_workers(values: Sequence[str],
                      timeout: float = DEFAULT_WORKER_TIMEOUT
                      ) -> tuple[str, ...]:
  """The --tff_workers addresses, each answering within `timeout` seconds
  (--tff_worker_timeout), or one line and exit 2.

  It loads no TensorFlow: call it before the binary does."""
  if not values:
    return ()
  from tff_hdp import worker_addresses  # pylint: disable=g-import-not-at-top
  try:
    addresses = worker_addresses.parse_workers(','.join(values))
    worker_addresses.check_workers(addresses, timeout)
  except ValueError as e:
    raise cli.UsageError(f'--{e}') from None
  except ConnectionError as e:
    raise cli.UsageError(str(e)) from None
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
    raise cli.UsageError(f'--statistic={statistic}: {e}') from None
