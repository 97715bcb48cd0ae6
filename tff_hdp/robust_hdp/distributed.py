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
"""Robust-HDP rounds spread over several TFF worker processes (paper 003).

The runtime (workers, the mergeable context, stacks of per-client outputs,
failure) is `tff_hdp.distributed`; this module is `tff_backend.TffRound`'s
round as a `tff.framework.MergeableCompForm`, run by `DistributedRound`:

- up_to_merge (per worker, on its slice of the n clients): broadcast theta^t;
  each client runs DP-SGD with its own (b_i, z_i) and its own key of the
  round (`process.client_step`, the same computation as one machine's) and
  returns its *noised* update Delta_i as one flat row tagged with its index
  i;
- merge: concatenate the rows;
- after_merge (once): put the rows in client order, M = [Delta_1 | ... |
  Delta_n] (a client not in the round's cohort: a row of zeros, outside
  the rule's view, as on one machine), and run the rule's server step
  (`NoiseAwareAggregationFactory.server_step`: RPCA and its weights for
  Robust-HDP, the fixed weights of the baselines) and theta^{t+1} =
  theta^t + sum_i w_i Delta_i.

Nothing is summed before the server step, so the rows the server sees are
bit for bit one machine's, and the round equals `tff_backend.TffRound`'s
(tests/robust_hdp/test_distributed.py, tests/test_round_executors.py).
Each client's DP-SGD key of the round is derived from the run's secret
mechanism key as on one machine (`process.client_key`) and reaches it as
its own CLIENTS value; no key is a SERVER value of the form, which TFF
sends to every worker, so a worker learns only the keys of the clients it
runs. Trust: as in paper 003 the server is untrusted and each client noises
its own update, so a worker plays its clients' devices (their data, their
local DP-SGD), and what leaves it is what the server may see anyway; it
must be trusted by the clients it runs, not by the others
(docs/distributed.md).
"""

import collections
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import distributed
from tff_hdp import models
from tff_hdp import round_executor
from tff_hdp import templates
from tff_hdp.robust_hdp import aggregator as aggregator_lib
from tff_hdp.robust_hdp import dp_sgd
from tff_hdp.privacy import mechanism_key
from tff_hdp.robust_hdp import direct_backend
from tff_hdp.robust_hdp import process


def build_round_form(spec: models.ModelSpec,
                     factory: aggregator_lib.NoiseAwareAggregationFactory, *,
                     settings: dp_sgd.DpSgdSettings,
                     private: bool = True) -> tff.framework.MergeableCompForm:
  """The round as a form.

  Its argument is (state@SERVER: theta, the round, the rule's state;
  datasets@CLIENTS; client info@CLIENTS; each client's DP-SGD key of the
  round@CLIENTS), its result the new state, and the measurements, at SERVER.
  """
  dp_sgd.check_settings(settings)
  w_type = templates.weights_type(spec.shapes)
  aggregation = factory.create(w_type, tff.TensorType(np.int32))
  state_type = tff.types.to_type(collections.OrderedDict(
      global_weights=w_type, round_num=np.int32,
      aggregator=aggregation.state_type.member))
  row_type = tff.TensorType(np.float32, (spec.num_parameters,))
  up_to_merge = _up_to_merge(spec, state_type, row_type, settings=settings,
                             private=private)
  merged_type = up_to_merge.type_signature.result.member
  concat = distributed.stack_computations(row_type)[2]
  server_step = _server_step(spec, factory, state_type, merged_type)

  @tff.federated_computation(up_to_merge.type_signature.parameter,
                             tff.FederatedType(merged_type, tff.SERVER))
  def after_merge(arg, merged):
    result = tff.federated_map(server_step, (arg[0], merged))
    return result[0], result[1]

  return tff.framework.MergeableCompForm(
      up_to_merge=up_to_merge, merge=concat, after_merge=after_merge)


def _up_to_merge(spec: models.ModelSpec, state_type, row_type, *,
                 settings: dp_sgd.DpSgdSettings, private: bool):
  """The round's part before the merge: theta broadcast, every client's
  DP-SGD (`process.client_step`) and its flat row with the client's
  index, stacked (`distributed.gather_stack`)."""
  w_type = templates.weights_type(spec.shapes)

  @tff.tensorflow.computation(state_type)
  def select_weights(state):
    return state['global_weights']

  @tff.tensorflow.computation(templates.dataset_type(spec),
                              process.CLIENT_INFO_TYPE, w_type,
                              tff.TensorType(np.int64,
                                             mechanism_key.KEY_SHAPE))
  def client_fn(dataset, info, weights, key):
    x, y = dataset.get_single_element()
    return aggregator_lib.flatten(process.client_step(
        spec, weights, x, y, info, key, settings=settings, private=private))

  @tff.tensorflow.computation(process.CLIENT_INFO_TYPE)
  def index_of(info):
    return info['index']

  @tff.federated_computation(
      tff.FederatedType(state_type, tff.SERVER),
      tff.FederatedType(templates.dataset_type(spec), tff.CLIENTS),
      tff.FederatedType(process.CLIENT_INFO_TYPE, tff.CLIENTS),
      tff.FederatedType(client_fn.type_signature.parameter[3], tff.CLIENTS))
  def up_to_merge(state, client_data, client_info, keys):
    weights = tff.federated_broadcast(
        tff.federated_map(select_weights, state))
    deltas = tff.federated_map(client_fn,
                               (client_data, client_info, weights, keys))
    return distributed.gather_stack(
        deltas, tff.federated_map(index_of, client_info), row_type)

  return up_to_merge


def _server_step(spec: models.ModelSpec,
                 factory: aggregator_lib.NoiseAwareAggregationFactory,
                 state_type, merged_type):
  """The round's part after the merge, at the server: the stacked rows
  scattered to the rows of M, the rule's step and theta + Delta."""
  n = factory.num_clients
  specs = [tf.TensorSpec(s, tf.float32) for s in spec.shapes]

  @tff.tensorflow.computation(state_type, merged_type)
  def server_step(state, stack):
    # Each row to its client's row of M; the cohort (any subset, empty
    # included) is the rows present, as `direct_backend.DirectRound`'s.
    rows = tf.reshape(stack['position'], [-1, 1])
    clients = tf.scatter_nd(rows, tf.ones_like(stack['position']), [n])
    once = tf.debugging.assert_less_equal(
        clients, 1, message='Robust-HDP: two clients of the round sent the '
        'same row index')
    with tf.control_dependencies([once]):
      updates = tf.scatter_nd(rows, stack['rows'], [n, spec.num_parameters])
    new_aggregator, flat, measurements = factory.server_step(
        state['aggregator'], updates, clients)
    delta = aggregator_lib.unflatten(flat, specs)
    new_state = collections.OrderedDict(
        global_weights=[w + d for w, d in zip(state['global_weights'],
                                              delta)],
        round_num=state['round_num'] + 1,
        aggregator=new_aggregator)
    return new_state, measurements

  return server_step


class DistributedRound(round_executor.RoundExecutor):
  """`tff_backend.TffRound`'s round over TFF workers.

  `initialize(key)` and `next(state, cohort)` behave as the process's
  (`executors.Cohort`, without `weighing_info`), with each round's clients
  cut into one slice per worker.
  """

  backend = round_executor.DISTRIBUTED

  def __init__(self,
               spec: models.ModelSpec,
               initial_weights,
               aggregator: aggregator_lib.NoiseAwareAggregationFactory,
               *,
               settings: dp_sgd.DpSgdSettings,
               private: bool = True,
               workers: Sequence[str] = (),
               timeout: float = 60.0,
               context: Optional[
                   tff.framework.MergeableCompExecutionContext] = None):
    """Connects to the workers and builds the round.

    Args:
      spec, initial_weights, aggregator, settings, private: As
        `tff_backend.TffRound`.
      workers, timeout, context: As `tff_hdp.distributed.context_for`.

    Raises:
      ValueError: Both or neither of workers and context.
      ConnectionError: A worker does not answer.
    """
    self._context = distributed.context_for(workers, context, timeout)
    self._form = build_round_form(spec, aggregator, settings=settings,
                                  private=private)
    self._initial = [np.asarray(w, np.float32) for w in initial_weights]
    self._aggregator = aggregator

  def initialize(self, key):
    """The initial state; its clients' key is the run's `key`, kept here."""
    return _to_numpy(collections.OrderedDict(
        global_weights=list(self._initial), round_num=np.int32(0),
        aggregator=self._aggregator.initial_state(),
        key=mechanism_key.as_key(key).copy()))

  def next(self, state, cohort) -> round_executor.RoundOutput:
    cohort.check(self.backend)
    client_data = [
        d if isinstance(d, tf.data.Dataset) else
        direct_backend.client_dataset(*d)
        for d in cohort.data
    ]
    round_key = process.round_key(tf.constant(state['key']),
                                  tf.constant(int(state['round_num'])))
    keys = [process.client_key(round_key, info['index']).numpy()
            for info in cohort.info]
    public = collections.OrderedDict(
        (k, state[k]) for k in ('global_weights', 'round_num', 'aggregator'))
    new_state, measurements = self._context.invoke(
        self._form, [public, client_data, list(cohort.info), keys])
    new_state = _to_numpy(new_state)
    new_state['key'] = state['key']
    return round_executor.RoundOutput(new_state, _to_numpy(measurements))


def _to_numpy(structure):
  return tf.nest.map_structure(np.asarray, structure)
