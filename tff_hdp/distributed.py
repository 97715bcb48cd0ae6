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
"""TFF's distributed runtime, shared by the three systems.

Each worker is the `worker_binary` shipped in the TFF wheel
(`runtime.worker_binary_path()`), started on any machine the driver can
reach (`worker_binary --port=8000`; it listens on every interface,
unauthenticated: trusted networks only). The driver talks to each through
an asynchronous context (`tff.framework.AsyncExecutionContext` over a
`tff.framework.RemoteExecutor`), combined by
`tff.backends.native.create_mergeable_comp_execution_context`, which runs a
`tff.framework.MergeableCompForm` in subrounds: TFF cuts the cohort (every
CLIENTS-placed argument) into one contiguous slice per worker, each worker
runs `up_to_merge` on its slice, `merge` folds the partial results in the
order the workers finish, and `after_merge` runs once on the merged value.
A system's round is one such form (`tff_hdp/{fedhdp,robust_hdp,udp}/
distributed.py`); this module holds what they share:

- connecting: `parse_workers` and `check_workers` (from `worker_addresses`,
  which binaries use before loading TensorFlow), `create_mergeable_context`,
  and `start_local_workers` for tests and benchmarks;
- per-client outputs through the merge: `stack_computations` (rows of
  (cohort position, value) that `gather_stack` grows client by client,
  `gather_stacks` when a client holds several rows, and `merge`
  concatenates), put back in cohort order by
  `in_cohort_order` (NumPy) or `sorted_by_position` (inside `after_merge`);
- slicing: a system whose clients are cheaper batched passes one CLIENTS
  value per worker, a `cut` of its cohort;
- failure: a worker that is unreachable, or dies or restarts mid-round, ends
  the call with a one-line `WorkerLostError` naming it, where TFF would
  retry the subround forever; the driver saves nothing of that round, so
  the same command resumes from its last checkpoint (docs/distributed.md).
"""

import collections
import functools
from typing import Optional, Sequence

import grpc
import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import runtime
from tff_hdp import worker_addresses
# Re-exported: the TensorFlow-free address checks.
from tff_hdp.worker_addresses import check_workers  # pylint: disable=unused-import
from tff_hdp.worker_addresses import parse_workers  # pylint: disable=unused-import


class WorkerLostError(ConnectionError):
  """A TFF worker stopped answering during a call (one-line message)."""


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
  worker_addresses.wait_ready(channel, address, timeout)
  return channel


class _FailFastStub(tff.framework.RemoteExecutorGrpcStub):
  """TFF's gRPC stub, raising `WorkerLostError` where TFF would retry.

  TFF turns a worker's UNAVAILABLE or FAILED_PRECONDITION (a restarted worker
  that no longer knows the executor) into a `tff.framework.RetryableError`,
  which its asynchronous context retries without end. Here they end the call
  with one line naming the worker. Disposal keeps TFF's behaviour (it ignores
  errors from a worker that is gone).
  """

  def __init__(self, channel: grpc.Channel, address: str):
    super().__init__(channel)
    self.address = address


def _fail_fast(name):
  retrying = getattr(tff.framework.RemoteExecutorGrpcStub, name)

  @functools.wraps(retrying)
  def call(self, request):
    try:
      return retrying(self, request)
    except tff.framework.RetryableError as e:
      code = getattr(e, 'code', lambda: None)()
      raise WorkerLostError(
          f'tff_workers: the TFF worker at {self.address} stopped answering '
          f'({getattr(code, "name", "unavailable")}); the round was not '
          'saved: restart the worker and run the same command again to '
          'resume from the last checkpoint') from None

  return call


for _name in ('get_executor', 'create_value', 'create_struct', 'create_call',
              'create_selection', 'compute'):
  setattr(_FailFastStub, _name, _fail_fast(_name))


def create_async_context(
    stub: tff.framework.RemoteExecutorStub
) -> tff.framework.AsyncExecutionContext:
  """An asynchronous TFF context executing on the worker behind `stub`.

  The same stack as `runtime.create_local_cpp_context` (a `RemoteExecutor`
  with the CLIENTS cardinality set), asynchronous so that a mergeable context
  can drive several at once.
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
  computations. A worker lost during a call raises `WorkerLostError`. The
  gRPC channels close when the context is collected.

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
      create_async_context(_FailFastStub(_connect(a, timeout), a))
      for a in addresses
  ]
  return tff.backends.native.create_mergeable_comp_execution_context(contexts)


def context_for(workers: Sequence[str],
                context: Optional[tff.framework.MergeableCompExecutionContext],
                timeout: float) -> tff.framework.MergeableCompExecutionContext:
  """A system's runner's context: `context`, or one connected to `workers`.

  Args:
    workers: 'host:port' of each running worker (see `parse_workers`);
      empty when `context` is given.
    context: A mergeable context (`create_mergeable_context`) to use
      instead of connecting to `workers`.
    timeout: Seconds to wait for each worker to answer.

  Raises:
    ValueError: Both or neither given.
    ConnectionError: A worker does not answer.
  """
  if (context is None) == (not workers):
    raise ValueError('give either workers (host:port of each TFF worker) '
                     'or a context, not both or neither')
  return context or create_mergeable_context(list(workers), timeout=timeout)


def stack_type(item_type) -> tff.StructType:
  """The type of a stack of `item_type` rows with their cohort positions.

  Every tensor of `item_type` gains a leading dimension of unknown size, so
  that a worker can grow the stack client by client and `merge` can
  concatenate two.
  """
  item_type = tff.types.to_type(item_type)
  return tff.types.to_type(
      collections.OrderedDict(
          position=tff.TensorType(np.int32, (None,)),
          rows=tf.nest.map_structure(
              lambda s: tff.TensorType(s.dtype.as_numpy_dtype,
                                       (None,) + tuple(s.shape)),
              tff.types.type_to_tf_tensor_specs(item_type))))


def stack_computations(item_type):
  """(empty, push, concat): a stack of (cohort position, item) rows.

  `tff.federated_aggregate(tff.federated_zip((items, positions)), empty(),
  push, concat, identity)` gathers a worker's clients' items into one
  SERVER value; the form's `merge` concatenates two workers' stacks with
  `concat`. Rows are in no particular order: see `in_cohort_order` and
  `sorted_by_position`.

  Args:
    item_type: The type of one client's item (a structure of tensors).

  Returns:
    (empty, push, concat, identity) as TFF computations.
  """
  item_type = tff.types.to_type(item_type)
  specs = tff.types.type_to_tf_tensor_specs(item_type)
  s_type = stack_type(item_type)

  @tff.tensorflow.computation
  def empty():

    def unknown_length(spec):
      zeros = tf.zeros((0,) + tuple(spec.shape), spec.dtype)
      return tf.raw_ops.PlaceholderWithDefault(
          input=zeros, shape=[None] + list(spec.shape))

    return collections.OrderedDict(
        position=unknown_length(tf.TensorSpec((), tf.int32)),
        rows=tf.nest.map_structure(unknown_length, specs))

  @tff.tensorflow.computation(s_type, (item_type, np.int32))
  def push(stack, item):
    value, position = item
    return collections.OrderedDict(
        position=tf.concat([stack['position'], [position]], 0),
        rows=tf.nest.map_structure(lambda s, v: tf.concat([s, v[tf.newaxis]],
                                                          0),
                                   stack['rows'], value))

  @tff.tensorflow.computation(s_type, s_type)
  def concat(a, b):
    return tf.nest.map_structure(lambda x, y: tf.concat([x, y], 0), a, b)

  @tff.tensorflow.computation(s_type)
  def identity(stack):
    return stack

  return empty, push, concat, identity


def gather_stack(items, positions, item_type):
  """A federated (placed) stack of the CLIENTS' `items` with `positions`.

  For use inside `up_to_merge`: one SERVER value per worker.
  """
  empty, push, concat, identity = stack_computations(item_type)
  return tff.federated_aggregate(
      tff.federated_zip((items, positions)), empty(), push, concat, identity)


def gather_stacks(stacks, item_type):
  """A federated stack of the rows of the CLIENTS' `stacks` (each client's
  value already a stack of `item_type` rows, as `stack_type`), for clients
  that each hold several rows (a `cut` of a cohort); inside `up_to_merge`."""
  empty, _, concat, identity = stack_computations(item_type)
  return tff.federated_aggregate(stacks, empty(), concat, concat, identity)


def cut(num_items: int, num_parts: int) -> list[slice]:
  """Contiguous slices of `num_items` cohort members into at most
  `num_parts` non-empty parts whose sizes differ by at most one.

  For a system whose per-client work is cheaper batched (UDP-Alg's users
  share the hypernetwork's matmuls): the driver passes each part as one
  CLIENTS value, and TFF gives each worker one part.
  """
  parts = max(1, min(num_parts, num_items))
  bounds = [k * num_items // parts for k in range(parts + 1)]
  return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]


def sorted_by_position(stack):
  """The stack's rows in increasing position (TensorFlow; in after_merge)."""
  order = tf.argsort(stack['position'])
  return tf.nest.map_structure(lambda r: tf.gather(r, order), stack['rows'])


def in_cohort_order(stack, num_clients: int) -> list:
  """The stack's rows as a list in cohort order (NumPy, at the driver).

  Raises:
    RuntimeError: The positions are not exactly 0, ..., num_clients - 1.
  """
  position = np.asarray(stack['position'])
  if sorted(position.tolist()) != list(range(num_clients)):
    raise RuntimeError(f'workers returned rows for positions '
                       f'{sorted(position.tolist())}, expected 0..'
                       f'{num_clients - 1}')
  order = np.argsort(position)
  rows = tf.nest.map_structure(np.asarray, stack['rows'])
  return [tf.nest.map_structure(lambda r, k=k: r[k], rows) for k in order]
