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
failure) is `tff_hdp.distributed`; this module is `process.TffRunner`'s
round as a `tff.framework.MergeableCompForm`:

- up_to_merge (per worker, on its slice of the n clients): broadcast theta^t
  and the round key; each client runs DP-SGD with its own (b_i, z_i)
  (`process.client_step`, the same computation as one machine's) and returns
  its *noised* update Delta_i as one flat row tagged with its index i;
- merge: concatenate the rows;
- after_merge (once): put the rows in client order, M = [Delta_1 | ... |
  Delta_n], and run the rule's server step (`NoiseAwareAggregationFactory.
  server_step`: RPCA and its weights for Robust-HDP, the fixed weights of
  the baselines) and theta^{t+1} = theta^t + sum_i w_i Delta_i.

Nothing is summed before the server step, so the rows the server sees are
bit for bit one machine's, and the round equals `process.TffRunner`'s
(tests/robust_hdp/test_distributed.py).

Trust: as in paper 003 the server is untrusted and each client noises its
own update, so a worker running clients holds their data and their local
DP-SGD (it plays those clients' devices), and what leaves it is what the
server may see anyway: the noised updates. A worker must be trusted by the
clients it runs, not by the others.
"""

from typing import Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import distributed
from tff_hdp import models
from tff_hdp import templates
from tff_hdp.robust_hdp import aggregator as aggregator_lib
from tff_hdp.robust_hdp import dp_sgd
from tff_hdp.robust_hdp import process


def build_round_form(spec: models.ModelSpec, parts: process.RoundParts
                    ) -> tff.framework.MergeableCompForm:
  """The round of `parts` (`process.build_round_parts`) as a form.

  Its argument is (state@SERVER, datasets@CLIENTS, client info@CLIENTS) as
  the process's `next`; its result (new state, measurements), at SERVER.
  """
  n = parts.factory.num_clients
  row_type = tff.TensorType(np.float32, (spec.num_parameters,))
  specs = [tf.TensorSpec(s, tf.float32) for s in spec.shapes]

  @tff.tensorflow.computation(parts.client_fn.type_signature.result)
  def flatten(delta):
    return aggregator_lib.flatten(delta)

  @tff.tensorflow.computation(process.CLIENT_INFO_TYPE)
  def index_of(info):
    return info['index']

  @tff.federated_computation(
      tff.FederatedType(parts.state_type, tff.SERVER),
      tff.FederatedType(templates.dataset_type(spec), tff.CLIENTS),
      tff.FederatedType(process.CLIENT_INFO_TYPE, tff.CLIENTS))
  def up_to_merge(state, client_data, client_info):
    message = tff.federated_broadcast(
        tff.federated_map(parts.server_message, state))
    deltas = tff.federated_map(parts.client_fn,
                               (client_data, client_info, message))
    return distributed.gather_stack(
        tff.federated_map(flatten, deltas),
        tff.federated_map(index_of, client_info), row_type)

  merged_type = up_to_merge.type_signature.result.member
  concat = distributed.stack_computations(row_type)[2]

  @tff.tensorflow.computation(parts.state_type.aggregator, merged_type)
  def server_step(aggregator_state, stack):
    updates = tf.ensure_shape(distributed.sorted_by_position(stack),
                              [n, spec.num_parameters])
    new_state, flat, measurements = parts.factory.server_step(
        aggregator_state, updates)
    return aggregator_lib.unflatten(flat, specs), new_state, measurements

  @tff.tensorflow.computation(parts.state_type)
  def select_aggregator(state):
    return state['aggregator']

  @tff.federated_computation(up_to_merge.type_signature.parameter,
                             tff.FederatedType(merged_type, tff.SERVER))
  def after_merge(arg, merged):
    state = arg[0]
    delta, aggregator_state, measurements = tff.federated_map(
        server_step, (tff.federated_map(select_aggregator, state), merged))
    new_state = tff.federated_map(parts.server_apply,
                                  (state, delta, aggregator_state))
    return new_state, measurements

  return tff.framework.MergeableCompForm(
      up_to_merge=up_to_merge, merge=concat, after_merge=after_merge)


class DistributedRunner:
  """`process.TffRunner`'s round over TFF workers, the same interface.

  `initialize()` and `next(state, client_data, client_info)` behave as the
  process's (the client data may also be (x, y) array pairs), with each
  round's clients cut into one slice per worker.
  """

  def __init__(self,
               spec: models.ModelSpec,
               initial_weights,
               aggregator: aggregator_lib.NoiseAwareAggregationFactory,
               *,
               settings: dp_sgd.DpSgdSettings,
               private: bool = True,
               seed: int = 0,
               workers: Sequence[str] = (),
               timeout: float = 60.0,
               context: Optional[
                   tff.framework.MergeableCompExecutionContext] = None):
    """Connects to the workers and builds the round.

    Args:
      spec, initial_weights, aggregator, settings, private, seed: As
        `process.TffRunner`.
      workers, timeout, context: As `tff_hdp.distributed.context_for`.

    Raises:
      ValueError: Both or neither of workers and context.
      ConnectionError: A worker does not answer.
    """
    self._context = distributed.context_for(workers, context, timeout)
    parts = process.build_round_parts(spec, initial_weights, aggregator,
                                      settings=settings, private=private,
                                      seed=seed)
    self._form = build_round_form(spec, parts)
    self._initialize = distributed.initialize_form(parts.initialize)

  def initialize(self):
    return _to_numpy(self._context.invoke(self._initialize, None))

  def next(self, state, client_data, client_info):
    client_data = [
        d if isinstance(d, tf.data.Dataset) else process.client_dataset(*d)
        for d in client_data
    ]
    new_state, measurements = self._context.invoke(
        self._form, [state, client_data, list(client_info)])
    return _to_numpy(new_state), _to_numpy(measurements)


def _to_numpy(structure):
  return tf.nest.map_structure(np.asarray, structure)
