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
r"""Prints the (epsilon, delta) of each private group, or solves for its noise.

Accounting: RDP of the Poisson-subsampled Gaussian mechanism at rate q with the
effective noise multiplier z_eff over T rounds (see `tff_hdp.privacy.accounting`).
Paper 001's Table 7 settings:

  python run_scripts/privacy_report.py --preset=mnist    # eps ~ 3.6
  python run_scripts/privacy_report.py --preset=fmnist   # eps ~ 0.6
  python run_scripts/privacy_report.py --preset=femnist  # eps ~ 4.1

Several privacy levels (one value per private group):

  python run_scripts/privacy_report.py --sampling_rate=0.05 --rounds=500 \
      --noise_multiplier=1.0,1.5,4.0
  python run_scripts/privacy_report.py --preset=mnist --target_epsilon=1,3.6

A fixed cohort of round(qN) clients drawn without replacement (paper 001's
Algorithm 2 as printed, `run_fedhdp.py --nopoisson_sampling`) is bounded
under replace-one neighbours instead, a much larger epsilon for the same
noise; Table 7's epsilons above are the Poisson figures the paper reports:

  python run_scripts/privacy_report.py --preset=mnist --fixed_cohort  # ~22.4

Prints one line per private group, `group=<name> epsilon=<eps>
noise_multiplier=<z>`; groups are `private` for one level, else `private_1`,
`private_2`, ... With --target_epsilon, z is the solved noise multiplier and
epsilon the one it achieves.

`--mechanism=dp_sgd` accounts paper 003's clients instead (Robust-HDP): each
client runs DP-SGD on its N examples with batch size b, Poisson-sampled at
q = b/N, for E rounds x K ceil(N/b) steps (sample-level DP of its dataset,
accounted on `tff_hdp.robust_hdp.privacy_preferences.ORDERS`):

  python run_scripts/privacy_report.py --mechanism=dp_sgd --dataset_size=2400 \
      --batch_size=16,32,64,128 --local_epochs=1 --rounds=200 --target_epsilon=1

--dataset_size, --batch_size, --noise_multiplier and --target_epsilon take one
value per client, or one value for all. Prints `client=<i> epsilon=<eps>
noise_multiplier=<z>` per client. TensorFlow is not imported.
"""

import decimal

# pylint: disable=g-import-not-at-top,wrong-import-position
from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import run_flags
from tff_hdp.privacy import accounting
from tff_hdp.fedhdp import presets
from tff_hdp.fedhdp import privacy_groups
from tff_hdp.robust_hdp import privacy_preferences
# pylint: enable=g-import-not-at-top,wrong-import-position

_PRESET = flags.DEFINE_string(
    'preset', None,
    'Paper preset filling q, z, rounds and delta: one of '
    f'{", ".join(sorted(presets.PRESETS))}. Explicit flags override it.')
_SAMPLING_RATE = flags.DEFINE_float(
    'sampling_rate', None,
    'Poisson sampling rate q in (0, 1] of a client per round (Table 5).')
_NOISE_MULTIPLIER = flags.DEFINE_list(
    'noise_multiplier', None,
    'Effective noise multiplier z_eff >= 0 (Table 7), comma-separated: one per '
    'private group.')
_FIXED_COHORT = flags.DEFINE_bool(
    'fixed_cohort', False, 'Account a fixed cohort of qN clients out of N '
    'drawn without replacement (paper 001\'s Algorithm 2, run_fedhdp.py '
    '--nopoisson_sampling): replace-one neighbours, rdp only. N is '
    '--population, else the preset\'s.')
_POPULATION = flags.DEFINE_integer(
    'population', None, 'N, the clients a fixed cohort is drawn from.')
_ROUNDS = flags.DEFINE_integer('rounds', None, 'Training rounds T >= 0.')
_DELTA = flags.DEFINE_float(
    'delta', None, 'Target delta in (0, 1); the preset\'s, else 1e-4.')
_TARGET_EPSILON = flags.DEFINE_list(
    'target_epsilon', None,
    'Solve for the noise multiplier reaching these epsilons > 0 instead, '
    'comma-separated: one per private group.')

_ACCOUNTANT = run_flags.define_accountant_flag('the printed epsilons')
_MECHANISM = flags.DEFINE_enum(
    'mechanism', 'fedhdp', ['fedhdp', 'dp_sgd'],
    'fedhdp: a private group of paper 001 (user-level, per round); dp_sgd: '
    'a client of paper 003 running DP-SGD (sample-level, per step).')
_DATASET_SIZE = flags.DEFINE_list(
    'dataset_size', None, 'dp_sgd: N, examples per client (one or per client).')
_BATCH_SIZE = flags.DEFINE_list(
    'batch_size', None, 'dp_sgd: b, the batch size (one or per client).')
_LOCAL_EPOCHS = flags.DEFINE_integer('local_epochs', 1,
                                     'dp_sgd: K, local epochs per round.')
flags.adopt_module_key_flags(run_flags)  # --help lists --accountant too.
_DP_SGD_ONLY = ('dataset_size', 'batch_size', 'local_epochs')

_DEFAULT_DELTA = 1e-4
_DIGITS = 6  # Significant digits of a printed noise multiplier.


def _round_up(value, digits=_DIGITS):
  """`value` rounded up to `digits` significant digits (more noise is safe)."""
  if value <= 0.0:
    return value
  exponent = decimal.Decimal(value).adjusted() - digits + 1
  return float(
      decimal.Decimal(value).quantize(
          decimal.Decimal(1).scaleb(exponent), rounding=decimal.ROUND_CEILING))


def _parse_list(flag_name, values, minimum, strict):
  """Parses a comma-separated list of floats; `strict` means > minimum."""
  relation = '>' if strict else '>='
  allowed = f'comma-separated numbers {relation} {minimum:g}'
  cli.check(bool(values), f'--{flag_name} must be {allowed}, got empty')
  parsed = []
  for text in values:
    try:
      value = float(text)
    except ValueError:
      raise cli.UsageError(
          f'--{flag_name} must be {allowed}, got {text!r}') from None
    ok = value > minimum if strict else value >= minimum
    cli.check(ok and value < float('inf'),
              f'--{flag_name} must be {allowed} and finite, got {text!r}')
    parsed.append(value)
  return parsed


def _resolve():
  """Returns (q, [z] or None, [eps] or None, rounds, delta) from flags."""
  preset = None
  if _PRESET.value is not None:
    try:
      preset = presets.get_preset(_PRESET.value)
    except ValueError as e:
      raise cli.UsageError(f'--preset: {e}') from None
  cli.check(
      not (flags.FLAGS['noise_multiplier'].present and
           flags.FLAGS['target_epsilon'].present),
      'give either --noise_multiplier or --target_epsilon, not both')

  q = _SAMPLING_RATE.value
  rounds = _ROUNDS.value
  delta = _DELTA.value
  noise = _NOISE_MULTIPLIER.value
  if preset is not None:
    q = q if flags.FLAGS['sampling_rate'].present else preset.sampling_rate
    rounds = rounds if flags.FLAGS['rounds'].present else preset.rounds
    delta = delta if flags.FLAGS['delta'].present else preset.delta
    if noise is None and _TARGET_EPSILON.value is None:
      noise = [str(preset.noise_multiplier)]
  if delta is None:
    delta = _DEFAULT_DELTA

  missing = [
      name for name, value in (('--sampling_rate', q), ('--rounds', rounds))
      if value is None
  ]
  if noise is None and _TARGET_EPSILON.value is None:
    missing.append('--noise_multiplier (or --target_epsilon)')
  cli.check(
      not missing, 'give --preset or all of --sampling_rate, --rounds and '
      f'--noise_multiplier (or --target_epsilon); missing {", ".join(missing)}')

  cli.check(0.0 < q <= 1.0, f'--sampling_rate must be in (0, 1], got {q!r}')
  cli.check(rounds >= 0, f'--rounds must be an integer >= 0, got {rounds!r}')
  cli.check(0.0 < delta < 1.0, f'--delta must be in (0, 1), got {delta!r}')
  if _TARGET_EPSILON.value is not None:
    epsilons = _parse_list('target_epsilon', _TARGET_EPSILON.value, 0.0,
                           strict=True)
    return q, None, epsilons, rounds, delta
  noise = _parse_list('noise_multiplier', noise, 0.0, strict=False)
  return q, noise, None, rounds, delta


def _per_client(flag_name, values, count):
  """`values` (one, or `count`) as a list of `count`."""
  if len(values) == 1:
    return values * count
  cli.check(len(values) == count,
            f'--{flag_name} needs one value or one per client ({count}), got '
            f'{len(values)}')
  return values


def _dp_sgd_report():
  """One line per DP-SGD client (see module doc)."""
  cli.check(_PRESET.value is None and not flags.FLAGS['sampling_rate'].present,
            '--mechanism=dp_sgd takes --dataset_size and --batch_size, not '
            '--preset or --sampling_rate')
  cli.check(not _FIXED_COHORT.value and _POPULATION.value is None,
            '--fixed_cohort and --population are for --mechanism=fedhdp '
            '(DP-SGD\'s batches are Poisson-sampled)')
  cli.check(
      not (flags.FLAGS['noise_multiplier'].present and
           flags.FLAGS['target_epsilon'].present),
      'give either --noise_multiplier or --target_epsilon, not both')
  missing = [f'--{n}' for n in ('dataset_size', 'batch_size', 'rounds')
             if flags.FLAGS[n].value is None]
  if _NOISE_MULTIPLIER.value is None and _TARGET_EPSILON.value is None:
    missing.append('--noise_multiplier (or --target_epsilon)')
  cli.check(not missing, '--mechanism=dp_sgd needs --dataset_size, '
            '--batch_size, --rounds and --noise_multiplier (or '
            f'--target_epsilon); missing {", ".join(missing)}')
  sizes = _parse_list('dataset_size', _DATASET_SIZE.value, 1, strict=False)
  batches = _parse_list('batch_size', _BATCH_SIZE.value, 1, strict=False)
  for name, values in (('dataset_size', sizes), ('batch_size', batches)):
    cli.check(all(v == int(v) for v in values),
              f'--{name} must be whole numbers >= 1, got '
              f'{",".join(flags.FLAGS[name].value)}')
  cli.check(_ROUNDS.value >= 0, f'--rounds must be >= 0, got {_ROUNDS.value}')
  cli.check(_LOCAL_EPOCHS.value >= 1,
            f'--local_epochs must be >= 1, got {_LOCAL_EPOCHS.value}')
  delta = _DELTA.value if _DELTA.value is not None else _DEFAULT_DELTA
  cli.check(0.0 < delta < 1.0, f'--delta must be in (0, 1), got {delta!r}')
  lists = [sizes, batches]
  if _TARGET_EPSILON.value is not None:
    lists.append(_parse_list('target_epsilon', _TARGET_EPSILON.value, 0.0,
                             strict=True))
  else:
    lists.append(_parse_list('noise_multiplier', _NOISE_MULTIPLIER.value, 0.0,
                             strict=False))
  count = max(len(v) for v in lists)
  names = ('dataset_size', 'batch_size',
           'target_epsilon' if _TARGET_EPSILON.value is not None else
           'noise_multiplier')
  sizes, batches, values = (_per_client(n, v, count)
                            for n, v in zip(names, lists))
  for i, (n, b, value) in enumerate(zip(sizes, batches, values)):
    n, b = int(n), min(int(b), int(n))
    if _TARGET_EPSILON.value is not None:
      (client,) = privacy_preferences.calibrate(
          [value], [b], [n], rounds=_ROUNDS.value,
          local_epochs=_LOCAL_EPOCHS.value, delta=delta,
          accountant=_ACCOUNTANT.value)
      z = _round_up(client.noise_multiplier)
    else:
      z = value
    steps = _ROUNDS.value * _LOCAL_EPOCHS.value * -(-n // b)
    eps = accounting.compute_epsilon(b / n, z, steps, delta,
                                     orders=privacy_preferences.ORDERS,
                                     accountant=_ACCOUNTANT.value)
    print(f'client={i} epsilon={eps:.4f} noise_multiplier={z:.{_DIGITS}g}')


def _population(q):
  """N of --fixed_cohort (checked), or None for Poisson sampling."""
  if not _FIXED_COHORT.value:
    cli.check(_POPULATION.value is None,
              '--population is for --fixed_cohort')
    return None
  cli.check(_ACCOUNTANT.value == 'rdp', '--fixed_cohort is accounted by '
            '--accountant=rdp only (no PLD of sampling without replacement)')
  population = _POPULATION.value
  if population is None and _PRESET.value is not None:
    population = presets.get_preset(_PRESET.value).num_clients
  cli.check(population is not None and population >= 1,
            f'--fixed_cohort needs --population >= 1 (or --preset), got '
            f'{population}')
  try:
    accounting.compute_epsilon(q, 1.0, 0, 0.5, population=population)
  except ValueError as e:
    raise cli.UsageError(f'--fixed_cohort: {e}') from None
  return population


def main(argv):
  cli.check(len(argv) <= 1,
            f'unexpected positional arguments: {" ".join(argv[1:])}')
  if _MECHANISM.value == 'dp_sgd':
    _dp_sgd_report()
    return
  given = [f'--{n}' for n in _DP_SGD_ONLY if flags.FLAGS[n].present]
  cli.check(not given, f'--mechanism=fedhdp does not take {", ".join(given)} '
            '(they are for --mechanism=dp_sgd)')
  q, noise, epsilons, rounds, delta = _resolve()
  population = _population(q)
  if epsilons is not None:
    # Printed z is rounded up, so that using it as printed keeps eps <= target.
    noise = [
        _round_up(
            accounting.noise_multiplier_for_epsilon(
                eps, q, rounds, delta, accountant=_ACCOUNTANT.value,
                population=population))
        for eps in epsilons
    ]
  names = privacy_groups.private_group_names(len(noise))
  for name, z in zip(names, noise):
    eps = accounting.compute_epsilon(q, z, rounds, delta,
                                     accountant=_ACCOUNTANT.value,
                                     population=population)
    print(f'group={name} epsilon={eps:.4f} noise_multiplier={z:.{_DIGITS}g}')


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
