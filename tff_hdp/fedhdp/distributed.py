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

The runtime (workers, the mergeable context, stacks of per-client outputs,
failure) is `tff_hdp.distributed`; this module is the FedHDP round as a
`tff.framework.MergeableCompForm` and the server step after it. It splits at
the round's one aggregation:

- up_to_merge (per worker, on its clients j): broadcast theta^t, S^t; run
  ClientUpdate (`client_update`); clip and mask into the group slots
  (`group_aggregation`, as `hdp_factory`'s client records); sum
      T_i = sum_j 1[g(j) = i] Clip(Delta_j, S^t),  N_i = sum_j 1[g(j) = i],
      B = sum_j (b_j - 1/2);
  and stack the clients' personal models theta_j with their cohort positions.
- merge: add the partial (T_i, N_i, B); concatenate the stacks.
- after_merge: hands the merged totals to the caller.
- then, in the calling process (the server), never on a worker:
  `group_aggregation.server_aggregate` on the merged totals, i.e.
      Delta_i = (T_i + N(0, (z_i S^t)^2 I)) / n_i,  Delta^t = sum_i w_i Delta_i,
  the clip update, theta^{t+1} = theta^t + Delta^t.

The form's SERVER values, which TFF sends to the workers, are theta^t, the
round and S^t only: the noise key stays at the server, and the noise is the
same draw from the same key as on one machine. The sums differ only by float
summation order, so a distributed round equals `tff_backend.TffRound`'s
(same state in, same state, personal models and noise out). A worker sees
its clients' unnoised clipped updates and partial sums, so the workers must
be as trusted as the server with the clients' data (a simulation runtime,
not secure aggregation). Why the personal models travel inside the merged
value, and what the form costs: docs/distributed.md.
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
from tff_hdp.fedhdp import group_aggregation
from tff_hdp.fedhdp import hdp_factory
from tff_hdp.fedhdp import process as process_lib
from tff_hdp.fedhdp import tff_backend
from tff_hdp.privacy import mechanism_key


def _build_merge(merged_type, records_type,
                 weights_type) -> tff.Computation:
  """The form's merge: adds two partial (T_i, N_i, B) totals (each of
  `records_type`) and concatenates their stacks of personal models."""
  concat = distributed.stack_computations(weights_type)[2]

  @tff.tensorflow.computation(records_type, records_type)
  def add_totals(a, b):
    return tf.nest.map_structure(tf.add, a, b)

  @tff.tensorflow.computation(merged_type, merged_type)
  def merge(a, b):
    return collections.OrderedDict(
        totals=add_totals(a['totals'], b['totals']),
        personal=concat(a['personal'], b['personal']))

  return merge


def public_state_type(weights_type) -> tff.Type:
  """The form's SERVER state: theta^t, the round and S^t (no noise key)."""
  return tff.types.to_type(collections.OrderedDict(
      global_weights=weights_type, round_num=np.int32,
      aggregator=collections.OrderedDict(clip_norm=np.float32)))


def public_state(state) -> collections.OrderedDict:
  """A backend state without its noise key, as the form takes it."""
  return collections.OrderedDict(
      global_weights=list(state['global_weights']),
      round_num=np.int32(state['round_num']),
      aggregator=collections.OrderedDict(
          clip_norm=np.float32(state['aggregator']['clip_norm'])))


def build_round_form(spec: models.ModelSpec,
                     factory: hdp_factory.HeterogeneousDPFactory,
                     settings: tff_backend.ClientSettings
                     ) -> tff.framework.MergeableCompForm:
  """One round of Algorithm 2 up to the merge, as a
  `tff.framework.MergeableCompForm`.

  Args:
    spec: The model.
    factory: The heterogeneous-DP aggregation (groups, clip, noise).
    settings: What every client does.

  Returns:
    The form; its argument is (`public_state`@SERVER, datasets@CLIENTS,
    personal models@CLIENTS, client info@CLIENTS, cohort position@CLIENTS)
    and its result (the merged totals (T_i, N_i, B), stack of (position,
    personal model)), at SERVER: `server_step_fn`'s input.
  """
  weights_type = templates.weights_type(spec.shapes)
  state_type = public_state_type(weights_type)
  agg = factory.create_parts(weights_type, tff.TensorType(np.int32))
  proc = process_lib.build_round_parts(spec, state_type.aggregator, settings)

  @tff.tensorflow.computation(state_type)
  def select_clip_norm(state):
    return state['aggregator']['clip_norm']

  @tff.federated_computation(
      tff.FederatedType(state_type, tff.SERVER),
      tff.FederatedType(templates.dataset_type(spec), tff.CLIENTS),
      tff.FederatedType(weights_type, tff.CLIENTS),
      tff.FederatedType(process_lib.CLIENT_INFO_TYPE, tff.CLIENTS),
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
    stack = distributed.gather_stack(outputs.personal, position,
                                     weights_type)
    return tff.federated_zip(
        collections.OrderedDict(
            totals=tff.federated_sum(records), personal=stack))

  merged_type = up_to_merge.type_signature.result.member
  merge = _build_merge(merged_type, agg.client_records.type_signature.result,
                       weights_type)

  @tff.federated_computation(up_to_merge.type_signature.parameter,
                             tff.FederatedType(merged_type, tff.SERVER))
  def after_merge(arg, merged):
    del arg  # The server step runs in the caller, with the noise key.
    return merged

  return tff.framework.MergeableCompForm(
      up_to_merge=up_to_merge, merge=merge, after_merge=after_merge)


def server_step_fn(factory: hdp_factory.HeterogeneousDPFactory):
  """The server update after the merge, in plain TensorFlow at the server:
  `hdp_factory`'s (`group_aggregation.server_aggregate`) on the merged
  totals, then theta + Delta.

  (weights, clip_norm, noise_key, totals) -> (new weights, S^{t+1}, the
  next noise key, measurements).
  """
  estimator = group_aggregation.clip_estimator(
      factory.initial_clip, factory.target_quantile,
      factory.clip_learning_rate)

  @tf.function(autograph=False)
  def server_step(weights, clip_norm, noise_key, totals):
    out = group_aggregation.server_aggregate(
        factory.groups, estimator, factory.clipped_count_stddev, clip_norm,
        noise_key, group_aggregation.Totals(
            [tf.nest.flatten(s) for s in totals['sums']], totals['counts'],
            totals['below']),
        expected_counts=factory.expected_counts)
    return ([w + d for w, d in zip(weights, out.delta)], out.clip_norm,
            out.noise_key, out.measurements)

  return server_step


class DistributedRound(round_executor.RoundExecutor):
  """Runs each round over TFF workers; noise is added once, after the merge.

  The same interface and state as `tff_backend.TffRound` (see there), and
  the same round: states, personal models and noise agree to float rounding.
  """

  backend = round_executor.DISTRIBUTED

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
      workers, timeout, context: As `tff_hdp.distributed.context_for`.

    Raises:
      ValueError: Inconsistent settings (one line naming the argument).
      ConnectionError: A worker does not answer.
    """
    if len(settings.ditto_lambdas) != len(factory.groups):
      raise ValueError(f'ditto_lambdas must give one lambda per group '
                       f'({len(factory.groups)}), got '
                       f'{len(settings.ditto_lambdas)}')
    self._settings = settings
    self._workers = list(workers)
    self._context = distributed.context_for(workers, context, timeout)
    self._factory = factory
    self._initial_weights = [np.asarray(w, np.float32) for w in initial_weights]
    self._form = build_round_form(spec, factory, settings)
    self._server_step = server_step_fn(factory)

  @property
  def workers(self) -> list[str]:
    return list(self._workers)

  @property
  def form(self) -> tff.framework.MergeableCompForm:
    return self._form

  def initialize(self, key):
    """The initial state; its noise key is the run's `key`, kept at the
    server (no worker ever receives it)."""
    return tff_backend.to_numpy(collections.OrderedDict(
        global_weights=self._initial_weights,
        round_num=np.int32(0),
        aggregator=collections.OrderedDict(
            clip_norm=np.float32(self._factory.initial_clip),
            noise_key=mechanism_key.as_key(key).copy())))

  def next(self, state, cohort) -> round_executor.RoundOutput:
    """One round on `cohort` (an `executors.Cohort`): the form over the
    workers, then the server step here."""
    cohort.check()
    num_clients = len(cohort.data)
    merged = self._merged(state, cohort) if num_clients else self._nobody()
    weights, clip_norm, noise_key, measurements = self._server_step(
        [tf.constant(w) for w in state['global_weights']],
        tf.constant(state['aggregator']['clip_norm'], tf.float32),
        tf.constant(state['aggregator']['noise_key'], tf.int64),
        tf.nest.map_structure(tf.constant, merged['totals']))
    new_state = tff_backend.to_numpy(collections.OrderedDict(
        global_weights=[w.numpy() for w in weights],
        round_num=np.int32(state['round_num'] + 1),
        aggregator=collections.OrderedDict(clip_norm=clip_norm.numpy(),
                                           noise_key=noise_key.numpy())))
    personal = ([list(p) for p in distributed.in_cohort_order(
        merged['personal'], num_clients)] if num_clients else [])
    return round_executor.RoundOutput(
        new_state, {k: float(v) for k, v in measurements.items()}, personal)

  def _merged(self, state, cohort):
    """The form over the workers: the merged totals and personal models."""
    datasets = [
        tf.data.Dataset.from_tensor_slices(
            (np.asarray(x, np.float32), np.asarray(y, np.int32))).batch(
                self._settings.batch_size) for x, y in cohort.data
    ]
    return self._context.invoke(
        self._form, [
            public_state(state), datasets,
            [list(p) for p in cohort.personal], list(cohort.info),
            list(np.arange(len(cohort.data), dtype=np.int32))
        ])

  def _nobody(self):
    """An empty cohort's merged value: zero totals (T_i = 0, N_i = 0,
    B = 0), so the server step releases the groups' noise alone and
    updates the clip from noise alone, as one machine does; TFF cannot run
    the form without clients."""
    groups = self._factory.groups
    return collections.OrderedDict(
        totals=collections.OrderedDict(
            sums=[[np.zeros(w.shape, np.float32)
                   for w in self._initial_weights] for _ in groups],
            counts=np.zeros(len(groups), np.float32),
            below=np.float32(0.0)),
        personal=None)
