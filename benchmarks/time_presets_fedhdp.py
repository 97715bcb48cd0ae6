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
"""Measures seconds per round of each paper preset, and extrapolates.

    python benchmarks/time_presets_fedhdp.py --presets=mnist,fmnist,femnist \
        --backends=tff,direct --rounds=3

For each preset and backend: a short FedHDP+Ditto run at the preset's full
scale (Table 5's population and cohort, Table 7's epochs and batch size) on
synthetic data with the dataset's shapes (the cost of a round depends only on
shapes and sizes, not on pixel values): client training sizes as in the real
data (non-IID MNIST: 27 images per client; TFF EMNIST: 341,873 digit images
over 3,383 writers and 671,585 images over 3,400 writers, spread uniformly
between half and 1.5x the mean). The first round (tracing) is not timed.
Prints seconds per round, and per run (T rounds) and per table (rows x T),
both extrapolated from the measured rounds and labelled so.

Against the machine: a 2048x2048 float32 `tf.matmul` is timed in the same
run (before each row and after the last; the best rate is the peak, and
every row's fraction is of it), and each round's
client training is counted as 6 x (forward multiply-adds) FLOPs per example
and epoch (`timing.training_flops`), twice with Ditto. GFLOP/s are given
over the whole round (both backends) and, for the direct backend, over
its client work alone; with the fraction of padded work its batched steps
ran (a client's last, smaller batch of an epoch is padded to the batch
size) and the fraction that padding every client to the largest of its part
would have run.

Evaluation: the timed rounds do not evaluate; the server's evaluation of the
global model (every `eval_every` rounds of the preset, on a test set of the
dataset's size: MNIST's 10,000 images, EMNIST's union of its clients'
test sets) is timed after them (median of 3)
and added to the run's projection, whose fraction of the peak counts it.
The personal models' evaluation, once at the end of a run, is not counted.

`--matmul_ceiling` (on by default) bounds the direct row from above: the
FC NN's first layer (98% of its weights) in the cohort's batched matmuls,
forward x @ W1 and weight gradient x^T dz, timed alone in the same run at
each batch size of a client's epoch (non-IID MNIST: 20 and the last 7). A
round running only them, for both models Ditto trains, would take their
summed time; its fraction of the peak, on the same FLOP count as the rows,
is the most the row could reach if every other pass were free. The same
matmuls are then timed in turn in the form the backend runs and in others
(`fedhdp_fc_step_profile.other_layouts`: the two models' columns side by
side, W1 transposed, XLA), each against the form as run.

`--ditto_updates=fused,ops` times the direct backend twice in the same run:
with Ditto's personal step fused by XLA (`direct_backend.
fused_personal_update`, the default) and as four TensorFlow ops
(`direct_backend.personal_update`, the code before 2026-11-29).
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
import contextlib
import time

from absl import app
from absl import flags
import numpy as np

from tff_hdp.run_scripts import cli
# benchmarks/timing.py: Python searches a script's own folder first.
import fedhdp_fc_step_profile
import timing
from tff_hdp.fedhdp import config as config_lib
from tff_hdp.data import federated_data
from tff_hdp.fedhdp import paper_tables
from tff_hdp.fedhdp import presets

# Mean training examples per client of each dataset (see module docstring).
_MEAN_TRAIN = {'mnist': 27, 'skewed_mnist': 27, 'fmnist': 341_873 / 3383,
               'femnist': 671_585 / 3400, 'digits': 6}
_TABLE_OF = {'mnist': 8, 'skewed_mnist': 9, 'fmnist': 10, 'femnist': 11}

_PRESETS = flags.DEFINE_list('presets', ['mnist', 'fmnist', 'femnist'],
                             'Presets to time.')
_BACKENDS = flags.DEFINE_list('backends', list(config_lib.BACKENDS),
                              'Backends to time.')
_ROUNDS = flags.DEFINE_integer('rounds', 3, 'Rounds run (the first is not '
                               'timed).')
_DITTO_UPDATES = flags.DEFINE_list(
    'ditto_updates', ['fused'], 'The direct backend\'s Ditto step: '
    '"fused" (XLA, the default) and/or "ops" (four TensorFlow ops), one row '
    'each.')
_MATMUL_CEILING = flags.DEFINE_bool(
    'matmul_ceiling', True, 'For an FC NN preset of equal-sized clients '
    '(MNIST), also time its first layer\'s two matmuls alone at the '
    'round\'s batch sizes, and print the fraction of the peak a round '
    'running only them would reach: the ceiling of the row\'s fraction.')
# The server's test set of MNIST (the evaluation's cost); EMNIST's server
# tests on the union of its clients' test sets, as `datasets/emnist.py`.
_MNIST_TEST = 10_000


def synthetic_data(preset: presets.Preset,
                   seed: int = 0) -> federated_data.FederatedData:
  """Random data with the dataset's shapes and per-client sizes."""
  rng = np.random.default_rng(seed)
  mean = _MEAN_TRAIN[preset.dataset]
  if preset.dataset in ('mnist', 'skewed_mnist', 'digits'):
    sizes = np.full(preset.num_clients, int(mean))
  else:
    sizes = rng.integers(int(mean / 2), int(1.5 * mean) + 1,
                         preset.num_clients)
  shape = (8, 8) if preset.dataset == 'digits' else (28, 28)
  make = lambda n: (rng.random((n,) + shape, dtype=np.float32),
                    rng.integers(0, preset.num_classes, n).astype(np.int32))
  train = [make(int(n)) for n in sizes]
  test = [make(max(1, int(n) // 9)) for n in sizes]
  return federated_data.FederatedData(
      name=preset.dataset, input_shape=shape, num_classes=preset.num_classes,
      train=train, test=test,
      server_test=(make(_MNIST_TEST) if preset.dataset in (
          'mnist', 'skewed_mnist') else None),
      client_labels=np.arange(preset.num_clients, dtype=np.int32) % 10)


def _config(preset: presets.Preset, backend: str):
  """FedHDP+Ditto at `preset`'s scale on `backend`, for --rounds rounds."""
  return config_lib.FedHdpConfig(
      algorithm='fedhdp', ratio=0.01, model=preset.model,
      rounds=_ROUNDS.value, clients_per_round=preset.clients_per_round,
      sampling_rate=preset.sampling_rate,
      local_epochs=preset.local_epochs, batch_size=preset.batch_size,
      learning_rate=preset.learning_rate,
      personal_learning_rate=preset.personal_learning_rate,
      initial_clip=preset.initial_clip,
      noise_multiplier=preset.noise_multiplier,
      optout_fraction=preset.optout_fraction,
      eval_every=10 * _ROUNDS.value, backend=backend)


def _client_work(spec, profile, peak):
  """The client work's GFLOP/s (of `peak`) and its padded fractions (ours /
  to largest), as the table prints them ('-' where the backend's profile
  has no work count), over the timed rounds of `profile`."""
  timed = profile[1:]  # As for the round's time: not the first round.
  if not (timed and timed[0]['work']):
    return '-', '-'
  work = {k: sum(p['work'][k] for p in timed) for k in timed[0]['work']}
  seconds = sum(p['seconds']['client_work'] for p in timed)
  rate = 2 * timing.training_flops(spec, work['examples']) / seconds
  return (f'{rate / 1e9:.1f} ({rate / peak:.2f})',
          f"{1 - work['examples'] / work['computed']:.3f} / "
          f"{1 - work['examples'] / work['padded_to_largest']:.3f}")


_HEADER = ('| preset | backend | clients/round | E | s/round (measured) | '
           'round GFLOP/s (of peak) | client-work GFLOP/s (of peak) | padded '
           'work (ours / to largest) | evaluation s (every k rounds) | per '
           'run, T rounds, evaluation included (extrapolated; of peak) | per '
           'table (extrapolated) |')


@contextlib.contextmanager
def _ditto_update(which: str):
  """The direct backend's Ditto step as `which` ('fused' or 'ops') inside,
  traced anew (its traced client work is cached per model)."""
  from tff_hdp.fedhdp import direct_backend  # pylint: disable=g-import-not-at-top
  kept = direct_backend.fused_personal_update
  if which == 'ops':
    direct_backend.fused_personal_update = direct_backend.personal_update
  direct_backend._client_work_fn.cache_clear()  # pylint: disable=protected-access
  try:
    yield
  finally:
    direct_backend.fused_personal_update = kept
    direct_backend._client_work_fn.cache_clear()  # pylint: disable=protected-access


def _variants() -> list[tuple[str, str]]:
  """(backend, Ditto update) of each row: the direct backend once per
  --ditto_updates, the others once."""
  return [(backend, update) for backend in _BACKENDS.value
          for update in (_DITTO_UPDATES.value if backend == 'direct'
                         else ['-'])]


class _LastState:
  """A round observer keeping the last round's state."""

  state = None

  def before_round(self, round_num, state):
    del round_num, state

  def after_round(self, round_num, state, entry):
    del round_num, entry
    self.state = state


def _time_rounds(preset, data, backend: str):
  """Seconds per timed round, the executor's profile, and the median
  seconds of 3 evaluations of the last global model."""
  from tff_hdp import round_loop  # pylint: disable=g-import-not-at-top
  from tff_hdp import templates  # pylint: disable=g-import-not-at-top
  from tff_hdp.fedhdp import evaluation  # pylint: disable=g-import-not-at-top
  from tff_hdp.fedhdp import training  # pylint: disable=g-import-not-at-top
  stamps, profile = [], []
  experiment = training.prepare(_config(preset, backend), data)
  last = _LastState()
  training.run_rounds(
      experiment,
      observers=[training.ProfileObserver(experiment.executor, profile),
                 last],
      options=round_loop.Options(
          on_round=lambda r, e: stamps.append(time.time())))
  per_round = (stamps[-1] - stamps[0]) / (len(stamps) - 1)
  weights = templates.global_weights(last.state)
  evaluations = []
  for _ in range(3):
    start = time.perf_counter()
    evaluation.loss_and_accuracy(experiment.spec, weights,
                                 *experiment.data.server_test)
    evaluations.append(time.perf_counter() - start)
  return per_round, profile, float(np.median(evaluations))


def _batch_counts(preset: presets.Preset, spec) -> dict[int, int]:
  """{batch size: steps at it per client and round} of an FC NN preset
  whose clients are equal-sized (the batches a client's epochs run); {}
  for any other preset."""
  size = _MEAN_TRAIN[preset.dataset]
  if not (len(spec.shapes[0]) == 2 and size == int(size)
          and preset.dataset in ('mnist', 'skewed_mnist')):
    return {}
  full, last = divmod(int(size), preset.batch_size)
  counts = {preset.batch_size: full * preset.local_epochs}
  if last:
    counts[last] = preset.local_epochs
  return counts


def _row(name, preset, variant, timed, rates) -> str:
  """One table row: `timed` = `_time_rounds`'s, `rates` = (the round's
  FLOPs, the same-run peak, the table's rows, the client-work cells)."""
  backend, update = variant
  per_round, _, eval_seconds = timed
  round_flops, peak, rows, (client_rate, padded) = rates
  label = backend if update == '-' else f'{backend} ({update} Ditto step)'
  run_seconds = (per_round * preset.rounds +
                 eval_seconds * (preset.rounds // preset.eval_every))
  run_rate = round_flops * preset.rounds / run_seconds
  table = (f'{run_seconds * rows / 3600:.0f} h ({rows} rows)' if rows
           else '-')
  return (f'| {name} | {label} | {preset.clients_per_round} | '
          f'{preset.local_epochs} | {per_round:.2f} | '
          f'{round_flops / per_round / 1e9:.1f} '
          f'({round_flops / per_round / peak:.2f}) | {client_rate} | '
          f'{padded} | {eval_seconds:.3f} ({preset.eval_every}) | '
          f'{run_seconds / 60:.1f} min ({preset.rounds} rounds; '
          f'{run_rate / peak:.2f}) | {table} |')


def main(argv):
  cli.check_no_arguments(argv)
  for name in _PRESETS.value:
    cli.check(name in presets.PRESETS, f'--presets: unknown preset {name!r}; '
              f'allowed: {", ".join(sorted(presets.PRESETS))}')
  for backend in _BACKENDS.value:
    cli.check(backend in config_lib.BACKENDS,
              f'--backends: unknown backend {backend!r}; allowed: '
              f'{", ".join(config_lib.BACKENDS)}')
  for update in _DITTO_UPDATES.value:
    cli.check(update in ('fused', 'ops'), f'--ditto_updates: unknown '
              f'{update!r}; allowed: fused, ops')
  cli.check(_ROUNDS.value >= 2, f'--rounds must be >= 2, got {_ROUNDS.value}')

  import tensorflow as tf
  from tff_hdp import models
  from tff_hdp import runtime
  from tff_hdp.fedhdp import batched_models

  reference = paper_tables.load_reference()
  print(f'# {timing.cpu_name()}, {os.cpu_count()} cores, TensorFlow '
        f'{tf.__version__}, GPUs: '
        f'{len(tf.config.list_physical_devices("GPU"))}; the direct '
        f'backend\'s CNN uses {batched_models.default_cnn_conv()} '
        'convolutions')
  peaks, timed = [], []
  with runtime.local_cpp_context():
    for name in _PRESETS.value:
      preset = presets.get_preset(name)
      data = synthetic_data(preset)
      spec = models.build_model(preset.model, data.input_shape,
                                data.num_classes)
      rows = sum(1 for r in reference if r.table == _TABLE_OF.get(name))
      mean_size = np.mean([len(y) for _, y in data.train])
      # FedHDP+Ditto: each client trains the global and its personal model.
      round_flops = 2 * timing.training_flops(
          spec, preset.clients_per_round * mean_size * preset.local_epochs)
      for variant in _variants():
        peaks.append(timing.matmul_peak(tf)[0])
        with _ditto_update(variant[1]):
          timed.append((name, preset, variant, spec, round_flops, rows,
                        _time_rounds(preset, data, variant[0])))
  ceilings = []
  if _MATMUL_CEILING.value:
    for name, preset, variant, spec, round_flops, rows, times in timed:
      counts = _batch_counts(preset, spec)
      if variant[0] == 'direct' and counts and name not in dict(ceilings):
        ceilings.append((name, (spec, preset, round_flops, counts,
                                fedhdp_fc_step_profile.matmul_ceiling(
                                    tf, spec, preset.clients_per_round,
                                    counts),
                                fedhdp_fc_step_profile.other_layouts(
                                    tf, spec, preset.clients_per_round,
                                    counts))))
  peaks.append(timing.matmul_peak(tf)[0])
  # Every row against the run's best peak, timed before each row and after
  # the last.
  print(_HEADER)
  print('|---|---|---|---|---|---|---|---|---|---|---|')
  for name, preset, variant, spec, round_flops, rows, times in timed:
    client_cells = _client_work(spec, times[1], max(peaks))
    print(_row(name, preset, variant, times,
               (round_flops, max(peaks), rows, client_cells)))
  for name, (spec, preset, round_flops, counts, ceiling,
             layouts) in ceilings:
    fedhdp_fc_step_profile.print_ceiling(ceiling, preset.clients_per_round,
                                         spec, max(peaks))
    fedhdp_fc_step_profile.print_layouts(layouts)
    seconds = fedhdp_fc_step_profile.ceiling_seconds(ceiling, counts, 2)
    print(f'# {name}: a round of only these matmuls (both models, '
          f'{sum(counts.values())} steps a client) would take '
          f'{seconds:.3f} s: {round_flops / seconds / max(peaks):.2f} of the '
          'peak on the rows\' FLOP count, the ceiling of the row\'s '
          'fraction')
  print(f'# matmul peak (2048x2048 float32, best of {len(peaks)}): '
        f'{max(peaks) / 1e9:.1f} GFLOP/s; FLOPs per round are expected '
        'values (the mean client size times the cohort)')


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
