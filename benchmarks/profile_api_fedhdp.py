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
"""What a client costs TFF's runtime: FedHDP's API round against stock TFF.

    python benchmarks/profile_api_fedhdp.py --clients=100
    python benchmarks/profile_api_fedhdp.py --model=small_cnn --clients=20

TFF's C++ runtime runs every computation in its `worker_binary`, client by
client, so the cost of a round beyond its arithmetic shows as the worker's
CPU seconds, not in a Python profile. Side by side in one process, the
median over `--repeats` rounds, interleaved, of wall seconds, this
process's CPU seconds and the worker's CPU seconds of:

- one pass over each client's batches (the sum of x) as a federated map:
  on plain (x, y) batches (`plain`), on FedHDP's client elements
  (`element`, `process.client_element`), on them after `process._split`
  (`element+split`: what the client work adds to read a client's group and
  id), and after the `reduce` and `map` `_split` used before e273c24
  (`element+reduce+map`), whose functions TFF's runtime instantiates for
  every client;
- one local epoch of SGD on each client's elements from the broadcast
  weights, as a federated map (every step as `client_update` takes it):
  its loop as autograph's `for` over the dataset, a scan then a reduce
  (`train: for`, the form before issue 51), as one `dataset.reduce` (`train:
  reduce`, today's), and the same with Ditto's personal step beside it
  (`train: reduce + Ditto`: what the process's client work also ran, and
  threw away, with `ditto=True` before issue 51);
- the aggregation alone, on the same fixed update from every client: our
  `HeterogeneousDPFactory` as the process creates it (`our aggregator`) and
  TFF's `gaussian_adaptive` (`stock aggregator`);
- one round (E = 1) of `benchmark_fedhdp.py`'s stock TFF DP-FedAvg and of
  our `build_fedhdp_process` from the same Keras model, on the same clients
  (`select()` once, outside the timing).

`--model=fc` (default): the FC NN on synthetic data, batch 20, the
DP-FedAvg baseline without Ditto. `--model=small_cnn`: the small CNN of
`benchmark_fedhdp.py --case=small_cnn` (a user's Keras Conv8-Conv16, 60 real
MNIST images a client, batch 16, FedHDP's defaults with one private level).
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# TensorFlow before absl's app.run, as benchmark_fedhdp.py (Keras 2.14
# cannot build a model with an input shape, the FC NN's, when TensorFlow is
# first imported inside app.run's main).
import tensorflow  # pylint: disable=g-import-not-at-top,unused-import,wrong-import-position

# pylint: disable=g-import-not-at-top,wrong-import-position
import collections
import time

from absl import app
from absl import flags
import numpy as np

# The benchmarks' own modules: Python searches a script's own folder first.
import fedhdp_rounds
import fedhdp_small_cnn
import timing

_CLIENTS = flags.DEFINE_integer('clients', 100, 'Clients of every round.')
_MODEL = flags.DEFINE_enum('model', 'fc', ['fc', 'small_cnn'],
                           'fc: the FC NN; small_cnn: benchmark_fedhdp.py\'s '
                           'small CNN (module docstring).')
_REPEATS = flags.DEFINE_integer('repeats', 5, 'Rounds timed per variant.')


def _passes(tf, tff, process, spec, data, batch_size):
  """The federated maps of one pass over each client's batches."""
  plain_type = tff.SequenceType((
      tff.TensorType(np.float32, (None,) + spec.input_shape),
      tff.TensorType(np.int32, (None,))))
  element_type = process.client_data_type(spec)

  def x_sum(dataset, key):
    return dataset.reduce(tf.constant(0.0), lambda s, e: s + tf.reduce_sum(
        e[key]))

  def old_split(client):  # `_split` before e273c24.
    info = client.reduce(
        collections.OrderedDict(group=np.int32(0), client_id=np.int32(0)),
        lambda _, e: collections.OrderedDict(group=e['group'],
                                             client_id=e['client_id']))
    return client.map(lambda e: (e['x'], e['y'])), info

  bodies = {
      'plain': (plain_type, lambda d: x_sum(d, 0)),
      'element': (element_type, lambda d: x_sum(d, 'x')),
      'element+split': (element_type, lambda d: x_sum(
          process._split(d)[0], 'x')),
      'element+reduce+map': (element_type, lambda d: x_sum(
          old_split(d)[0], 0)),
  }
  plain = [tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size)
           for x, y in data]
  elements = _elements(process, data, batch_size)

  def federated_total(data_type, body):
    one = tff.tensorflow.computation(body, data_type)

    @tff.federated_computation(tff.FederatedType(data_type, tff.CLIENTS))
    def total(clients):
      return tff.federated_sum(tff.federated_map(one, clients))

    return total

  runners = {}
  for name, (data_type, body) in bodies.items():
    total = federated_total(data_type, body)
    clients = plain if name == 'plain' else elements
    runners[name] = lambda total=total, clients=clients: total(clients)
  return runners


def _elements(process, data, batch_size):
  return [process.client_element(x, y, group=0, client_id=c,
                                 batch_size=batch_size)
          for c, (x, y) in enumerate(data)]


def _training_passes(tf, tff, process, spec, data, batch_size):
  """One epoch of SGD on every client, its loop in each form (docstring)."""
  from tff_hdp import models
  from tff_hdp import templates
  from tff_hdp.fedhdp import client_update
  weights_type = templates.weights_type(spec.shapes)
  element_type = process.client_data_type(spec)
  rates = client_update.Rates(0.05, 0.05, 0.05)

  def sgd_step(weights, batch, seed):
    with tf.GradientTape() as tape:
      tape.watch(weights)
      loss = models.loss_fn(spec.apply(weights, batch['x'], True, seed),
                            batch['y'])
    return tuple(w - rates.learning_rate * g
                 for w, g in zip(weights, tape.gradient(loss, weights)))

  @tf.function(autograph=True)
  def autograph_for(weights, dataset):  # The loop before issue 51.
    weights = tuple(weights)
    step = tf.constant(0, tf.int32)
    for batch in dataset:
      weights = sgd_step(
          weights, batch,
          tf.random.experimental.stateless_fold_in([0, 0], step))
      step += 1
    return list(weights)

  def reduce_loop(ditto):
    return lambda weights, dataset: client_update.client_update(
        spec, weights, weights, dataset,
        steps=client_update.Steps(1, ditto), rates=rates,
        seed=tf.constant([0, 0])).delta

  bodies = {'train: for (before issue 51)': autograph_for,
            'train: reduce': reduce_loop(False),
            'train: reduce + Ditto (before issue 51)': reduce_loop(True)}
  weights = [np.asarray(w) for w in spec.init(0)]
  elements = _elements(process, data, batch_size)

  def federated_train(body):
    one = tff.tensorflow.computation(body, weights_type, element_type)

    @tff.federated_computation(tff.FederatedType(weights_type, tff.SERVER),
                               tff.FederatedType(element_type, tff.CLIENTS))
    def train(server_weights, clients):
      return tff.federated_map(one, (tff.federated_broadcast(server_weights),
                                     clients))

    return train

  runners = {}
  for name, body in bodies.items():
    train = federated_train(body)
    runners[name] = lambda train=train: train(weights, elements)
  return runners


def _aggregators(tff, process, spec, num_clients):
  """Our aggregation as `process` creates it, and TFF's DP-FedAvg's, alone
  on the same fixed update from every client."""
  from tff_hdp import templates
  from tff_hdp.fedhdp import process as process_lib
  value_type = templates.weights_type(spec.shapes)
  ours = process_lib.aggregator_factory(
      process.config, process._setup).create(  # pylint: disable=protected-access
          value_type, tff.TensorType(np.int32))
  stock = tff.aggregators.DifferentiallyPrivateFactory.gaussian_adaptive(
      noise_multiplier=1.0, clients_per_round=num_clients).create(value_type)
  rng = np.random.default_rng(0)
  update = [0.01 * rng.standard_normal(s).astype(np.float32)
            for s in spec.shapes]
  updates = [update] * num_clients
  groups = [np.int32(process.client_groups[0])] * num_clients
  ours_state, stock_state = ours.initialize(), stock.initialize()
  return {'our aggregator': lambda: ours.next(ours_state, updates, groups),
          'stock aggregator': lambda: stock.next(stock_state, updates)}


def _setting(tf, tff, models):
  """(spec, data, batch size, stock, api) of `--model`."""
  if _MODEL.value == 'fc':
    spec = models.build_model('fc', (28, 28), 10)
    data = fedhdp_rounds.synthetic_clients(spec, _CLIENTS.value, 100, seed=0)
    return (spec, data, 20, fedhdp_rounds.StockTff(spec, data, 1),
            fedhdp_rounds.ApiProcess(spec, data, 1))
  import tff_hdp.fedhdp  # pylint: disable=g-import-not-at-top
  keras_fn = lambda: fedhdp_small_cnn.small_cnn_keras(tf)
  batch_size = fedhdp_small_cnn.SMALL_CNN_BATCH_SIZE
  spec = models.as_model_spec(tff.learning.models.functional_model_from_keras(
      keras_fn(),
      tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      (tf.TensorSpec((None, 28, 28), tf.float32),
       tf.TensorSpec((None,), tf.int32))))
  data = fedhdp_small_cnn.mnist_clients(_CLIENTS.value,
                                        fedhdp_small_cnn.SMALL_CNN_EXAMPLES)
  config = tff_hdp.fedhdp.FedHdpConfig(
      sampling_rate=1.0, local_epochs=1, batch_size=batch_size,
      learning_rate=fedhdp_rounds.LEARNING_RATE,
      noise_multiplier=fedhdp_rounds.NOISE_MULTIPLIER, initial_clip=0.1)
  return (spec, data, batch_size,
          fedhdp_rounds.StockTff(spec, data, 1, keras_fn=keras_fn,
                                 batch_size=batch_size),
          fedhdp_rounds.ApiProcess(spec, data, 1, keras_fn=keras_fn,
                                   config=config))


def main(argv):
  del argv
  import tensorflow as tf
  import tensorflow_federated as tff
  from tff_hdp import models
  from tff_hdp import runtime
  from tff_hdp.fedhdp import process
  worker = runtime.install_local_cpp_context()
  try:
    spec, data, batch_size, stock, api = _setting(tf, tff, models)
    runners = _passes(tf, tff, process, spec, data, batch_size)
    runners.update(_training_passes(tf, tff, process, spec, data, batch_size))
    runners.update(_aggregators(
        tff, api._process, spec, len(data)))  # pylint: disable=protected-access
    clients = api._clients.select()  # pylint: disable=protected-access
    state = api._process.initialize()  # pylint: disable=protected-access
    runners['stock TFF round'] = stock.round
    runners['our API round'] = lambda: api._process.next(state, clients)  # pylint: disable=protected-access
    for run in runners.values():
      run()
    seconds = {name: [] for name in runners}
    for _ in range(_REPEATS.value):
      for name, run in runners.items():
        worker_cpu = timing.cpu_seconds_of(worker.process.pid)
        cpu, wall = time.process_time(), time.perf_counter()
        run()
        seconds[name].append((
            time.perf_counter() - wall, time.process_time() - cpu,
            timing.cpu_seconds_of(worker.process.pid) - worker_cpu))
    peak = timing.matmul_peak(tf)[0] / 1e9
    print(f'cpu: {timing.cpu_name()}  matmul 2048^2 peak: {peak:.1f} GFLOP/s')
    setting = ('FC NN, 100 examples each' if _MODEL.value == 'fc' else
               'small CNN, 60 MNIST images each')
    print(f'{_CLIENTS.value} clients, {setting}, batch {batch_size}; '
          f'medians of {_REPEATS.value}')
    print(f'{"variant":<40} {"wall s":>8} {"python CPU s":>13} '
          f'{"worker CPU s":>13} {"worker CPU ms a client":>22}')
    for name, values in seconds.items():
      wall, cpu, worker_cpu = np.median(np.array(values), axis=0)
      print(f'{name:<40} {wall:8.3f} {cpu:13.3f} {worker_cpu:13.3f} '
            f'{1e3 * worker_cpu / len(data):22.1f}')
  finally:
    runtime.shutdown()


if __name__ == '__main__':
  app.run(main)
