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
"""FedHDP rounds spread over several TFF worker processes (paper 001, Alg. 2).

TFF's distributed runtime: each worker is the `worker_binary` shipped in the
TFF wheel (`runtime.worker_binary_path()`), started on any machine the driver
can reach,

    <site-packages>/tensorflow_federated/data/worker_binary --port=8000

(it listens on every interface, unauthenticated: trusted networks only). The
driver talks to each through an asynchronous context
(`tff.framework.AsyncExecutionContext` over a
`tff.framework.RemoteExecutor`), combined by
`tff.backends.native.create_mergeable_comp_execution_context`. That context
runs a `tff.framework.MergeableCompForm` in *subrounds*: the cohort is cut
into one contiguous slice per worker, each worker runs `up_to_merge` on its
slice, the partial results are folded with `merge`, and `after_merge` runs
once on the merged value.

A round of Algorithm 2 splits at its one aggregation:

- up_to_merge (per worker, on its clients j): broadcast theta^t, S^t; run
  ClientUpdate (`client_update`); clip and mask into the group slots
  (`group_aggregation`, as `hdp_factory`'s client records); sum
      T_i = sum_j 1[g(j) = i] Clip(Delta_j, S^t),  N_i = sum_j 1[g(j) = i],
      B = sum_j (b_j - 1/2);
  and stack the clients' personal models theta_j with their cohort positions.
- merge: add the partial (T_i, N_i, B); concatenate the stacks.
- after_merge (once): the server update of `hdp_factory` on the merged
  totals, i.e.
      Delta_i = (T_i + N(0, (z_i S^t)^2 I)) / N_i,  Delta^t = sum_i w_i Delta_i,
  the clip update, theta^{t+1} = theta^t + Delta^t.

The sums differ from one machine's only by float summation order, and the DP
noise is drawn once, after the merge, from the stateless key in the server
state, so a distributed round equals the single-machine
`tff_backend.TffBackend` round (same state in, same state, personal models
and noise out). No worker ever
adds noise: a worker sees only unnoised partial sums, so the workers must be
as trusted as the server (they run inside its trust boundary; this is a
simulation runtime, not secure aggregation).

The personal models leave the workers inside the merged value (a SERVER-placed
stack tagged with each client's cohort position) rather than as CLIENTS-placed
results: a CLIENTS-placed result of a `MergeableCompForm` can only come from
`after_merge`, which would have to re-run client training. The driver gets
them back in its original client order.

Costs and failure: `after_merge` receives the original argument of one slice
(TFF's `MergeableCompForm` contract), so that slice's datasets travel twice.
A worker that stops answering mid-round makes TFF retry its subround until it
answers again (TFF's retry policy for unavailable workers): restart it on the
same port.
"""

import collections
from typing import Optional, Sequence

import grpc
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp.fedhdp import hdp_factory
from tff_hdp.fedhdp import hdp_process
from tff_hdp import models
from tff_hdp import runtime
from tff_hdp.fedhdp import tff_backend

def parse_workers(spec: str) -> list[str]:
  """'host:port,host:port' -> ['host:port', ...], checked.

  Args:
    spec: Comma-separated worker addresses (IPv6 hosts in brackets,
      '[::1]:8000').

  Returns:
    The addresses, in order.

  Raises:
    ValueError: (one line) empty list, an entry that is not host:port with an
      integer port in [1, 65535], or an address given twice.
  """
  items = [s.strip() for s in spec.split(',')] if spec.strip() else []
  if not items:
    raise ValueError('tff_workers must list at least one host:port')
  addresses = []
  for item in items:
    host, sep, port = item.rpartition(':')
    if not sep or not host or not port.isdigit() or not (
        1 <= int(port) <= 65535):
      raise ValueError(f'tff_workers: {item!r} is not host:port with a port '
                       'in [1, 65535]')
    address = f'{host}:{int(port)}'
    if address in addresses:
      raise ValueError(f'tff_workers: {address} is listed twice')
    addresses.append(address)
  return addresses


def start_local_workers(n: int) -> list[runtime.Worker]:
  """Starts n `worker_binary` processes on this machine, ready to serve.

  Each is a `runtime.Worker` (log file, dies with this process, `stop()`);
  their addresses are `local_addresses(workers)`. The caller stops them.

  Args:
    n: Number of workers, >= 1.

  Returns:
    The workers.
  """
  if n < 1:
    raise ValueError(f'n must be >= 1 workers, got {n}')
  workers = []
  try:
    for _ in range(n):
      workers.append(runtime.Worker())
    for worker in workers:
      worker.wait_ready()
  except BaseException:
    for worker in workers:
      worker.stop()
    raise
  return workers


def local_addresses(workers: Sequence[runtime.Worker]) -> list[str]:
  """'127.0.0.1:port' of each local worker."""
  return [f'127.0.0.1:{w.port}' for w in workers]


def _connect(address: str, timeout: float) -> grpc.Channel:
  """A gRPC channel to the worker at `address`, once it answers."""
  channel = grpc.insecure_channel(address, runtime.GRPC_OPTIONS)
  try:
    grpc.channel_ready_future(channel).result(timeout=timeout)
  except grpc.FutureTimeoutError:
    channel.close()
    raise ConnectionError(
        f'tff_workers: no TFF worker answers at {address} after {timeout:g}s '
        f'(start one with {runtime.worker_binary_path()} --port=PORT)'
    ) from None
  return channel


def check_workers(addresses: Sequence[str], timeout: float = 10.0) -> None:
  """Raises ConnectionError (one line naming it) unless every worker answers.

  For drivers that refuse bad input before writing anything.
  """
  for address in addresses:
    _connect(address, timeout).close()


def create_async_context(
    stub: tff.framework.RemoteExecutorStub
) -> tff.framework.AsyncExecutionContext:
  """An asynchronous TFF context executing on the worker behind `stub`.

  The same stack as `runtime.create_local_cpp_context` (a `RemoteExecutor`
  with the CLIENTS cardinality set), asynchronous so that a mergeable context
  can drive several at once.

  Args:
    stub: The worker's `tff.framework.RemoteExecutorGrpcStub`.

  Returns:
    The context.
  """

  return tff.framework.AsyncExecutionContext(
      executor_fn=runtime.executor_factory(stub),
      compiler_fn=tff.backends.native.desugar_and_transform_to_native,
      transform_args=tff.tensorflow.transform_args,
      transform_result=tff.tensorflow.transform_result)


def create_mergeable_context(
    addresses: Sequence[str],
    *,
    timeout: float = 60.0) -> tff.framework.MergeableCompExecutionContext:
  """One asynchronous context per worker, combined into a mergeable context.

  It runs a `tff.framework.MergeableCompForm` (or a computation with a single
  aggregation, which it compiles to one) with one subround per worker. Invoke
  it with `context.invoke(form, arg)`, or install it
  (`tff.framework.get_context_stack().install(context)`) and call
  computations. The gRPC channels close when the context is collected.

  Args:
    addresses: 'host:port' of each running worker (see `parse_workers`).
    timeout: Seconds to wait for each worker to answer.

  Returns:
    The context.

  Raises:
    ConnectionError: A worker does not answer (one line naming it).
  """
  if not addresses:
    raise ValueError('addresses must name at least one TFF worker')
  contexts = [
      create_async_context(
          tff.framework.RemoteExecutorGrpcStub(_connect(a, timeout)))
      for a in addresses
  ]
  return tff.backends.native.create_mergeable_comp_execution_context(contexts)


def _stack_computations(weights_type):
  """(empty, push, concat) of a stack of (cohort position, personal model).

  The stack has a leading dimension of unknown size, so `federated_aggregate`
  can grow it client by client and `merge` can concatenate two.
  """
  stack_type = tff.types.to_type(
      collections.OrderedDict(
          position=tff.TensorType(np.int32, (None,)),
          weights=[
              tff.TensorType(np.float32, (None,) + tuple(t.shape))
              for t in weights_type
          ]))

  @tff.tensorflow.computation
  def empty():

    def unknown_length(x):
      return tf.raw_ops.PlaceholderWithDefault(
          input=x, shape=[None] + x.shape[1:].as_list())

    return collections.OrderedDict(
        position=unknown_length(tf.zeros([0], tf.int32)),
        weights=[
            unknown_length(tf.zeros((0,) + tuple(t.shape), tf.float32))
            for t in weights_type
        ])

  @tff.tensorflow.computation(stack_type, (weights_type, np.int32))
  def push(stack, item):
    weights, position = item
    return collections.OrderedDict(
        position=tf.concat([stack['position'], [position]], 0),
        weights=[
            tf.concat([s, w[tf.newaxis]], 0)
            for s, w in zip(stack['weights'], weights)
        ])

  @tff.tensorflow.computation(stack_type, stack_type)
  def concat(a, b):
    return tf.nest.map_structure(lambda x, y: tf.concat([x, y], 0), a, b)

  return empty, push, concat


def build_round_form(spec: models.ModelSpec,
                     factory: hdp_factory.HeterogeneousDPFactory,
                     settings: tff_backend.ClientSettings,
                     state_type) -> tff.framework.MergeableCompForm:
  """One round of Algorithm 2 as a `tff.framework.MergeableCompForm`.

  Args:
    spec: The model.
    factory: The heterogeneous-DP aggregation (groups, clip, noise, seed).
    settings: What every client does.
    state_type: The server state's type (`tff_backend`'s state structure).

  Returns:
    The form; its argument is (state@SERVER, datasets@CLIENTS,
    personal models@CLIENTS, client info@CLIENTS, cohort position@CLIENTS)
    and its result (new state, stack of (position, personal model),
    measurements), all at SERVER.
  """
  weights_type = state_type.global_weights
  agg = factory.create_parts(weights_type, tff.TensorType(np.int32))
  proc = hdp_process.build_round_parts(
      spec,
      agg.initial_state.type_signature.result,
      **settings.process_kwargs())
  empty, push, concat = _stack_computations(weights_type)

  @tff.tensorflow.computation(state_type)
  def select_clip_norm(state):
    return state['aggregator']['clip_norm']

  @tff.tensorflow.computation(state_type)
  def select_aggregator(state):
    return state['aggregator']

  records_type = agg.client_records.type_signature.result

  @tff.tensorflow.computation(records_type, records_type)
  def add_totals(a, b):
    return tf.nest.map_structure(tf.add, a, b)

  @tff.tensorflow.computation(empty.type_signature.result)
  def identity(stack):
    return stack

  @tff.federated_computation(
      tff.FederatedType(state_type, tff.SERVER),
      tff.FederatedType(hdp_process.dataset_type(spec), tff.CLIENTS),
      tff.FederatedType(weights_type, tff.CLIENTS),
      tff.FederatedType(hdp_process.CLIENT_INFO_TYPE, tff.CLIENTS),
      tff.FederatedType(np.int32, tff.CLIENTS))
  def up_to_merge(state, client_data, personal_weights, client_info,
                  position):
    message = tff.federated_broadcast(
        tff.federated_map(proc.server_message, state))
    outputs = tff.federated_map(
        proc.client_fn, (client_data, personal_weights, client_info, message))
    clip_norm = tff.federated_broadcast(
        tff.federated_map(select_clip_norm, state))
    records = tff.federated_map(agg.client_records,
                                (outputs.delta, client_info.group, clip_norm))
    stack = tff.federated_aggregate(
        tff.federated_zip((outputs.personal, position)), empty(), push, concat,
        identity)
    return tff.federated_zip(
        collections.OrderedDict(
            totals=tff.federated_sum(records), personal=stack))

  merged_type = up_to_merge.type_signature.result.member

  @tff.tensorflow.computation(merged_type, merged_type)
  def merge(a, b):
    return collections.OrderedDict(
        totals=add_totals(a['totals'], b['totals']),
        personal=concat(a['personal'], b['personal']))

  @tff.federated_computation(up_to_merge.type_signature.parameter,
                             tff.FederatedType(merged_type, tff.SERVER))
  def after_merge(arg, merged):
    state = arg[0]
    update = tff.federated_map(
        agg.server_update,
        (tff.federated_map(select_aggregator, state), merged.totals))
    new_state = tff.federated_map(proc.server_apply,
                                  (state, update[1], update[0]))
    return new_state, merged.personal, update[2]

  return tff.framework.MergeableCompForm(
      up_to_merge=up_to_merge, merge=merge, after_merge=after_merge)


def _initialize_form(
    aggregation: tff.templates.AggregationProcess
) -> tff.framework.MergeableCompForm:
  """The aggregator's initial state as a form (each worker computes it).

  An explicit form: the mergeable context's compiler would also take
  `aggregation.initialize`, but it has no aggregation to split on.
  """
  state_type = aggregation.initialize.type_signature.result

  @tff.federated_computation
  def up_to_merge():
    return aggregation.initialize()

  @tff.tensorflow.computation(state_type.member, state_type.member)
  def first(a, b):
    del b  # The same value.
    return a

  @tff.federated_computation(state_type)
  def after_merge(state):
    return state

  return tff.framework.MergeableCompForm(
      up_to_merge=up_to_merge, merge=first, after_merge=after_merge)


class DistributedTffBackend:
  """Runs each round over TFF workers; noise is added once, after the merge.

  The same interface and state as `tff_backend.TffBackend` (see there), and
  the same round: states, personal models and noise agree to float rounding.
  """

  name = 'tff'

  def __init__(self,
               spec: models.ModelSpec,
               initial_weights: Sequence[np.ndarray],
               factory: hdp_factory.HeterogeneousDPFactory,
               settings: tff_backend.ClientSettings,
               workers: Sequence[str],
               *,
               timeout: float = 60.0,
               context: Optional[
                   tff.framework.MergeableCompExecutionContext] = None):
    """Connects to the workers and builds the round.

    Args:
      spec: The model.
      initial_weights: theta^0.
      factory: The heterogeneous-DP aggregation.
      settings: What every client does.
      workers: 'host:port' of each running worker (see `parse_workers`);
        empty when `context` is given.
      timeout: Seconds to wait for each worker to answer.
      context: A mergeable context (`create_mergeable_context`) to use
        instead of connecting to `workers`.

    Raises:
      ValueError: Inconsistent settings (one line naming the argument).
      ConnectionError: A worker does not answer.
    """
    if len(settings.ditto_lambdas) != len(factory.groups):
      raise ValueError(f'ditto_lambdas must give one lambda per group '
                       f'({len(factory.groups)}), got '
                       f'{len(settings.ditto_lambdas)}')
    if (context is None) == (not workers):
      raise ValueError('give either workers (host:port of each TFF worker) '
                       'or a context, not both or neither')
    self._settings = settings
    self._workers = list(workers)
    self._context = context or create_mergeable_context(self._workers,
                                                        timeout=timeout)
    weights_type = tff.types.to_type([(np.float32, s) for s in spec.shapes])
    self._aggregation = factory.create(weights_type, tff.TensorType(np.int32))
    self._initial_weights = [np.asarray(w, np.float32) for w in initial_weights]
    state_type = tff.types.to_type(
        collections.OrderedDict(
            global_weights=weights_type,
            round_num=np.int32,
            aggregator=self._aggregation.state_type.member))
    self._form = build_round_form(spec, factory, settings, state_type)
    self._initialize_form = _initialize_form(self._aggregation)

  @property
  def workers(self) -> list[str]:
    return list(self._workers)

  @property
  def form(self) -> tff.framework.MergeableCompForm:
    return self._form

  def initialize(self):
    aggregator = self._context.invoke(self._initialize_form, None)
    return tff_backend.to_numpy(
        collections.OrderedDict(
            global_weights=self._initial_weights,
            round_num=np.int32(0),
            aggregator=aggregator))

  def next(self, state, client_data, personal_weights, client_info):
    num_clients = len(client_data)
    if not len(personal_weights) == len(client_info) == num_clients:
      raise ValueError(
          f'client_data, personal_weights and client_info must have one '
          f'entry per client, got {num_clients}, {len(personal_weights)} and '
          f'{len(client_info)}')
    datasets = [
        tf.data.Dataset.from_tensor_slices(
            (np.asarray(x, np.float32), np.asarray(y, np.int32))).batch(
                self._settings.batch_size) for x, y in client_data
    ]
    new_state, stack, measurements = self._context.invoke(
        self._form, [
            state, datasets, [list(p) for p in personal_weights],
            list(client_info), list(np.arange(num_clients, dtype=np.int32))
        ])
    position = np.asarray(stack['position'])
    if sorted(position.tolist()) != list(range(num_clients)):
      raise RuntimeError(f'workers returned personal models for positions '
                         f'{sorted(position.tolist())}, expected 0..'
                         f'{num_clients - 1}')
    order = np.argsort(position)
    personal = [[np.asarray(w)[k] for w in stack['weights']] for k in order]
    return (tff_backend.to_numpy(new_state), personal,
            {k: float(v) for k, v in measurements.items()})
