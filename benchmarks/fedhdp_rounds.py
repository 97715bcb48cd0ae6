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
"""What FedHDP's benchmarks share: the rounds they time, side by side.

- `StockTff` and `stock_dp_fedavg`: TFF's own DP-FedAvg
  (`build_unweighted_fed_avg` with `DifferentiallyPrivateFactory.
  gaussian_adaptive`), as its tutorials build it;
- `ApiProcess`: our public API as a TFF user calls it
  (`build_fedhdp_process`, fed by `build_data_source`);
- `OurRound`: our round on one backend (`executors.build_executor`), fed as
  the driver feeds it;

each with `round()` and `last_round_seconds` (the direct round's parts, else
empty); `synthetic_clients`, their data; and the readings the benchmarks
take around them: `read_status` (resident memory) and `settle` (the TFF
worker at rest before a round is timed). Used by `benchmark_fedhdp.py`'s
parts (`fedhdp_*.py`), `benchmark_api_small_simulation.py` and
`profile_api_fedhdp.py`.
"""

import collections
import gc
import time

# benchmarks/timing.py: Python searches a script's own folder first.
import timing

BATCH_SIZE = 20
NOISE_MULTIPLIER = 1.0  # z_eff of the DP-FedAvg rounds timed here.
LEARNING_RATE = 0.05


def read_status() -> dict[str, float]:
  """VmRSS, VmHWM, RssAnon, RssFile of this process, in MiB."""
  return status_of('self')


def status_of(pid) -> dict[str, float]:
  """VmRSS, VmHWM, RssAnon, RssFile of process `pid`, in MiB."""
  out = {}
  with open(f'/proc/{pid}/status') as f:
    for line in f:
      key, _, value = line.partition(':')
      if key in ('VmRSS', 'VmHWM', 'RssAnon', 'RssFile'):
        out[key] = int(value.split()[0]) / 1024.0
  return out


def settle(worker_pid, timeout: float = 3.0) -> None:
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


def synthetic_clients(spec, num_clients, samples, seed):
  """`num_clients` clients of `samples` random inputs and labels each."""
  import numpy as np
  rng = np.random.default_rng(seed)
  return [(rng.random((samples,) + spec.input_shape, np.float32),
           rng.integers(0, spec.num_classes, samples).astype(np.int32))
          for _ in range(num_clients)]


def keras_model(tf, spec):
  """A Keras model of `spec`'s architecture (the FC NN or the CNN)."""
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
    keras_fn = keras_fn or (lambda: keras_model(tf, spec))
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
  from a secret key as a user's; `keras_fn` as `StockTff`'s. A Keras model
  with Dropout (the CNN) cannot be one: TFF's `functional_model_from_keras`
  does not support Dropout (its graph keeps Keras' learning-phase
  placeholder, and the round fails in the worker), so the process is built
  from `spec`, the package's model of the same architecture, dropout
  included.
  """

  def __init__(self, spec, client_data, epochs, *, keras_fn=None,
               config=None):
    import tensorflow as tf
    import tensorflow_federated as tff
    import tff_hdp.fedhdp
    input_spec = (tf.TensorSpec((None,) + spec.input_shape, tf.float32),
                  tf.TensorSpec((None,), tf.int32))
    keras = (keras_fn or (lambda: keras_model(tf, spec)))()
    if any(isinstance(l, tf.keras.layers.Dropout) for l in keras.layers):
      model = spec
    else:
      model = tff.learning.models.functional_model_from_keras(
          keras,
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
