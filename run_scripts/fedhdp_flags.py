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
"""The flags of FedHDP's binaries (`run_fedhdp.py`, `audit_fedhdp.py`), and
the checked configs and data they give.

A preset of `tff_hdp.fedhdp.presets` (paper 001's Table 7, or an offline
one; `presets.DEFAULT`, mnist5k, unless --preset or --dataset names one)
fills every hyperparameter flag the command line does not set; a flag
that is a field of `FedHdpConfig` and not a preset's takes the config's
default. --dataset takes every dataset FedHDP can load
(`tff_hdp.datasets.names('fedhdp')`); one without a preset of its name takes
`presets.DEFAULT`'s. Importing this module defines the flags; bad values
raise `cli.UsageError`.
"""

from absl import flags

from tff_hdp import datasets
from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import run_flags
from tff_hdp.privacy import accounting
from tff_hdp.fedhdp import config as config_lib
from tff_hdp.fedhdp import algorithm_registry
from tff_hdp.fedhdp import presets
import tff_hdp.fedhdp.algorithms  # pylint: disable=unused-import  # Registered.

# Paper 001's four, in its tables' order (`--algorithm=all` runs every
# registered one, a variant of yours too).
ALGORITHMS = algorithm_registry.names()

_PRESET = flags.DEFINE_enum('preset', None, sorted(presets.PRESETS),
                            'Hyperparameters of a dataset (paper 001 Table 7, '
                            'or the offline mnist5k and digits). Default: the '
                            'preset named like --dataset, else '
                            f'{presets.DEFAULT}.')
DATASET = flags.DEFINE_string(
    'dataset', None, f'Dataset: {", ".join(datasets.names("fedhdp"))}. '
    f'Default: the preset\'s ({presets.DEFAULT} without --preset).')
_DATA_DIR = flags.DEFINE_string(
    'data_dir', None, 'Directory holding mnist.npz (mnist) or '
    'emnist_all.sqlite (fmnist, femnist). Default: the Keras / TFF cache.')
_DRAW = flags.DEFINE_enum(
    'client_draw', 'disjoint', ['disjoint', 'independent'],
    'How mnist and skewed_mnist clients get their images of their digit: '
    'disjoint (no image on two clients) or independent (each client draws '
    'its own, so clients share images; one reading of paper 001\'s '
    '"assigned samples randomly").')
_EXAMPLES_PER_CLIENT = flags.DEFINE_integer(
    'examples_per_client', None,
    'With --client_draw=independent: how many training images of its digit '
    'each client draws (default: 27, as the disjoint split gives).')


def _default(name):
  """The default of `FedHdpConfig`'s field `name`: one default per
  hyperparameter, the same in the binary and in build_fedhdp_process."""
  return run_flags.config_default(config_lib.FedHdpConfig, name)


_ALGORITHM = flags.DEFINE_string(
    'algorithm', _default('algorithm'),
    f'One of {", ".join(ALGORITHMS)}, or "all" for the four in turn.')
_DITTO = flags.DEFINE_bool('ditto', _default('ditto'),
                           'Train Ditto personal models (--noditto: off).')
_DITTO_INIT = flags.DEFINE_enum(
    'ditto_init', _default('ditto_init'), list(config_lib.DITTO_INITS),
    "Where a client's Ditto model starts: first_round, the global model "
    'theta^t of the first round it takes part in (Algorithm 2 as printed); '
    "initial, the initial model theta^0 (Ditto's reference code).")
_R = flags.DEFINE_list(
    'r', [str(r) for r in config_lib.FedHdpConfig().ratios],
    'FedHDP ratio r in [0, 1], or one r per private level.')
_LAMBDA_P = flags.DEFINE_float('lambda_p', _default('lambda_p'),
                               'Ditto lambda_p >= 0.')
_LAMBDA_NP = flags.DEFINE_float('lambda_np', _default('lambda_np'),
                                'Ditto lambda_np >= 0.')
_CLIENTS_PER_ROUND = flags.DEFINE_integer(
    'clients_per_round', None, 'Cohort size (default round(qN)).')
_NUM_CLIENTS = flags.DEFINE_integer(
    'num_clients', None, 'Population N of the one-digit-per-client splits '
    '(mnist5k, digits, mnist); the first N writers of the EMNIST datasets.')
_LOCAL_EPOCHS = flags.DEFINE_integer('local_epochs', None, 'Local epochs E.')
_BATCH_SIZE = flags.DEFINE_integer('batch_size', None, 'Local batch size.')
_LEARNING_RATE = flags.DEFINE_float('learning_rate', None, 'Client eta > 0.')
_PERSONAL_LR = flags.DEFINE_float('personal_learning_rate', None,
                                  'Ditto eta_p >= 0.')
_LR_DECAY = flags.DEFINE_float('lr_decay_factor', None,
                               'Multiply eta, eta_p by this every '
                               '--lr_decay_rounds rounds.')
_LR_DECAY_ROUNDS = flags.DEFINE_integer('lr_decay_rounds', None,
                                        'See --lr_decay_factor.')
_INITIAL_CLIP = flags.DEFINE_float('initial_clip', None, 'S^0 > 0.')
_TARGET_QUANTILE = flags.DEFINE_float('target_quantile', None,
                                      'kappa in [0, 1].')
_CLIP_LR = flags.DEFINE_float('clip_learning_rate', None, 'eta_b >= 0.')
_NOISE = flags.DEFINE_list(
    'noise_multiplier', None, 'Effective noise multiplier z_eff of each '
    'private level (the accountant\'s value); first = default level.')
_TARGET_EPSILON = flags.DEFINE_list(
    'target_epsilon', None, 'Instead of --noise_multiplier: target epsilon '
    '> 0 of each private level; z_eff is solved with --accountant.')
_LEVEL_FRACTIONS = flags.DEFINE_list(
    'level_fractions', [], 'With several private levels: fraction of the '
    'population at levels 2, 3, ... (level 1 keeps the other private '
    'clients).')
_CLIPPED_COUNT_STDDEV = flags.DEFINE_float(
    'clipped_count_stddev', _default('clipped_count_stddev'),
    'z_b, noise stddev of the clip count (default 0.05 x cohort, as TFF).')
_OPTOUT = flags.DEFINE_float('optout_fraction', None,
                             'Fraction rho_np of clients that opt out, [0, 1).')
_SKEWED = flags.DEFINE_bool('skewed_optout', None,
                            'Draw opt-outs among digit-7 clients (Table 9).')
_POISSON = flags.DEFINE_bool(
    'poisson_sampling', _default('poisson_sampling'),
    'Sample each client independently with '
    'probability q (the default; accounted exactly under add/remove '
    'neighbours). --nopoisson_sampling: a fixed cohort of round(qN), as paper '
    '001\'s Algorithm 2, bounded under replace-one neighbours.')
_DENOMINATORS = flags.DEFINE_enum(
    'denominators', _default('denominators'), list(config_lib.DENOMINATORS),
    'Divide each private group\'s noised sum, the combination weights and the '
    'clip count by the expected counts q N_i (the default) or by the '
    'realised counts N_i^t (paper 001 as printed; with Poisson cohorts its '
    'epsilon is only the Poisson approximation, and is labelled so).')
# --rounds, --eval_every, --delta, --accountant, the seeds, --backend,
# --tff_workers (a RunConfig's), and the driver's.
RUN = run_flags.define_run_flags(
    config_lib.FedHdpConfig, output_dir='results/run',
    backend_help="TFF's runtime, or the same round in plain TensorFlow "
    '(direct: the whole cohort as stacked tensors in one tf.function; same '
    'algorithm and results, faster).',
    merged='the DP noise is added once, after their partial sums are merged',
    accountant_drives='the reported epsilon and of --target_epsilon',
    from_preset=('rounds', 'eval_every', 'delta'))

# Preset attribute -> flag it fills when the flag is not given.
_FROM_PRESET = {
    'rounds': 'rounds',
    'local_epochs': 'local_epochs',
    'batch_size': 'batch_size',
    'learning_rate': 'learning_rate',
    'personal_learning_rate': 'personal_learning_rate',
    'lr_decay_factor': 'lr_decay_factor',
    'lr_decay_rounds': 'lr_decay_rounds',
    'initial_clip': 'initial_clip',
    'target_quantile': 'target_quantile',
    'clip_learning_rate': 'clip_learning_rate',
    'delta': 'delta',
    'optout_fraction': 'optout_fraction',
    'skewed_optout': 'skewed_optout',
    'eval_every': 'eval_every',
    'num_clients': 'num_clients',
}


def _floats(values, flag):
  try:
    return tuple(float(v) for v in values)
  except ValueError:
    raise cli.UsageError(f'--{flag} takes numbers, got {",".join(values)}'
                         ) from None


def _resolve_preset() -> presets.Preset:
  """--preset's, else the one named like --dataset, else the default's
  (a dataset with no preset of its own too)."""
  name = _PRESET.value or DATASET.value or presets.DEFAULT
  if name in presets.PRESETS:
    return presets.get_preset(name)
  allowed = datasets.names('fedhdp')
  cli.check(name in allowed, f'unknown dataset {name!r} for --dataset; '
            f'allowed: {", ".join(allowed)}')
  return presets.get_preset(presets.DEFAULT)


def _noise_multipliers(preset, sampling_rate, rounds, delta, population):
  """z_eff per private level, from --noise_multiplier or --target_epsilon.

  `population`: N when the cohort is fixed (accounted as sampling without
  replacement under replace-one neighbours), else None (Poisson).
  """
  if _NOISE.value and _TARGET_EPSILON.value:
    raise cli.UsageError('give --noise_multiplier or --target_epsilon, not '
                         'both')
  if _TARGET_EPSILON.value:
    epsilons = _floats(_TARGET_EPSILON.value, 'target_epsilon')
    cli.check(all(e > 0 for e in epsilons),
              f'--target_epsilon must be > 0, got {_TARGET_EPSILON.value}')
    return tuple(
        accounting.noise_multiplier_for_epsilon(
            e, sampling_rate, rounds, delta, accountant=RUN.accountant.value,
            population=population)
        for e in epsilons)
  if _NOISE.value:
    z = _floats(_NOISE.value, 'noise_multiplier')
    cli.check(all(v >= 0 for v in z),
              f'--noise_multiplier must be >= 0, got {_NOISE.value}')
    return z
  return (preset.noise_multiplier,)


def usage_error(error: ValueError) -> cli.UsageError:
  """A config error as a usage error naming the flag (`--name ...`)."""
  message = str(error)
  if message.split(' ', 1)[0] in flags.FLAGS:
    message = '--' + message
  return cli.UsageError(message)


def build_configs():
  """The FedHdpConfig of each requested run, checked; and the preset."""
  preset = _resolve_preset()
  run_flags.apply_preset(preset, _FROM_PRESET)
  known = algorithm_registry.names()  # Yours too, registered since import.
  if _ALGORITHM.value == 'all':
    algorithms = known
  elif _ALGORITHM.value in known:
    algorithms = (_ALGORITHM.value,)
  else:
    raise cli.UsageError(f'unknown algorithm {_ALGORITHM.value!r} for '
                         f'--algorithm; allowed: {", ".join(known)}, all')
  ratios = _floats(_R.value, 'r')  # Their range: the config's validate.
  shared = run_flags.shared_config(RUN, preset)
  cli.check(0.0 < shared.delta < 1.0,  # Before it calibrates any z.
            f'--delta must be in (0, 1), got {shared.delta}')
  cli.check(_NUM_CLIENTS.value is None or _NUM_CLIENTS.value >= 1,
            f'--num_clients must be >= 1, got {_NUM_CLIENTS.value}')
  num_clients = _NUM_CLIENTS.value or preset.num_clients
  clients_per_round = (_CLIENTS_PER_ROUND.value if _CLIENTS_PER_ROUND.present
                       else int(round(preset.sampling_rate * num_clients)))
  sampling_rate = clients_per_round / num_clients
  cli.check(_POISSON.value or shared.accountant != 'pld',
            '--accountant=pld needs --poisson_sampling: a fixed cohort is '
            'accounted by rdp only (no PLD of sampling without replacement)')
  noise = _noise_multipliers(preset, sampling_rate, shared.rounds,
                             shared.delta,
                             None if _POISSON.value else num_clients)
  configs = []
  for algorithm in algorithms:
    config = config_lib.FedHdpConfig(
        **shared.run_fields(),
        algorithm=algorithm,
        ditto=_DITTO.value,
        ditto_init=_DITTO_INIT.value,
        ratio=ratios if len(ratios) > 1 else ratios[0],
        lambda_p=_LAMBDA_P.value,
        lambda_np=_LAMBDA_NP.value,
        model=preset.model,
        clients_per_round=clients_per_round,
        sampling_rate=sampling_rate,
        poisson_sampling=_POISSON.value,
        denominators=_DENOMINATORS.value,
        local_epochs=_LOCAL_EPOCHS.value,
        batch_size=_BATCH_SIZE.value,
        learning_rate=_LEARNING_RATE.value,
        personal_learning_rate=_PERSONAL_LR.value,
        lr_decay_factor=_LR_DECAY.value,
        lr_decay_rounds=_LR_DECAY_ROUNDS.value,
        initial_clip=_INITIAL_CLIP.value,
        clip_learning_rate=_CLIP_LR.value,
        target_quantile=_TARGET_QUANTILE.value,
        noise_multiplier=noise if len(noise) > 1 else noise[0],
        level_fractions=_floats(_LEVEL_FRACTIONS.value, 'level_fractions'),
        clipped_count_stddev=_CLIPPED_COUNT_STDDEV.value,
        optout_fraction=_OPTOUT.value,
        skewed_optout=_SKEWED.value)
    try:
      config.validate(num_clients)
      config_lib.resolve_noise(config)
    except ValueError as e:
      raise usage_error(e) from None
    configs.append(config)
  return configs, preset, num_clients


def examples_per_client():
  """--examples_per_client (None: the split's default)."""
  return _EXAMPLES_PER_CLIENT.value


def load_data(configs, preset: presets.Preset, num_clients: int):
  """The clients' data of --dataset (else the preset's), and `configs`
  checked against it; a bad file or value is a UsageError."""
  dataset = DATASET.value or preset.dataset
  if _EXAMPLES_PER_CLIENT.value is not None and _DRAW.value != 'independent':
    raise cli.UsageError('--examples_per_client needs --client_draw='
                         'independent (disjoint draws give each client the '
                         'same share of its digit: 27 images on mnist)')
  try:
    data = datasets.load_fedhdp_data(
        dataset, data_dir=_DATA_DIR.value, num_clients=num_clients,
        seed=RUN.seed.value, draw=_DRAW.value,
        examples_per_client=_EXAMPLES_PER_CLIENT.value)
  except datasets.DataFileError as e:
    raise cli.UsageError(str(e)) from None
  except ValueError as e:
    raise cli.UsageError(f'--dataset={dataset}: {e}') from None
  for config in configs:
    try:
      config.validate(data.num_clients)
    except ValueError as e:
      raise usage_error(e) from None
  return data
