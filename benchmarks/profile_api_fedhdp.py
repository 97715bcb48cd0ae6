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
- one round of the FC NN (E = 1) of `benchmark_fedhdp.py`'s stock TFF
  DP-FedAvg and of our `build_fedhdp_process` from the same Keras model, on
  the same clients (`select()` once, outside the timing).
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
import collections
import time

from absl import app
from absl import flags
import numpy as np

import benchmark_fedhdp
import timing

_CLIENTS = flags.DEFINE_integer('clients', 100, 'Clients of every round.')
_REPEATS = flags.DEFINE_integer('repeats', 5, 'Rounds timed per variant.')


def _passes(tf, tff, process, spec, data):
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
  plain = [tf.data.Dataset.from_tensor_slices((x, y)).batch(20)
           for x, y in data]
  elements = [process.client_element(x, y, group=0, client_id=c,
                                     batch_size=20)
              for c, (x, y) in enumerate(data)]

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


def main(argv):
  del argv
  import tensorflow as tf
  import tensorflow_federated as tff
  from tff_hdp import models
  from tff_hdp import runtime
  from tff_hdp.fedhdp import process
  worker = runtime.install_local_cpp_context()
  try:
    spec = models.build_model('fc', (28, 28), 10)
    data = benchmark_fedhdp._synthetic_clients(spec, _CLIENTS.value, 100,
                                               seed=0)
    runners = _passes(tf, tff, process, spec, data)
    stock = benchmark_fedhdp.StockTff(spec, data, 1)
    api = benchmark_fedhdp.ApiProcess(spec, data, 1)
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
    print(f'{_CLIENTS.value} clients, FC NN, batch 20, 100 examples each; '
          f'medians of {_REPEATS.value}')
    print(f'{"variant":<22} {"wall s":>8} {"python CPU s":>13} '
          f'{"worker CPU s":>13}')
    for name, values in seconds.items():
      wall, cpu, worker_cpu = np.median(np.array(values), axis=0)
      print(f'{name:<22} {wall:8.3f} {cpu:13.3f} {worker_cpu:13.3f}')
  finally:
    runtime.shutdown()


if __name__ == '__main__':
  app.run(main)
