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
"""FedHDP (paper 001, Algorithm 2) as a `tff.templates.IterativeProcess`.

    state = process.initialize()
    state, personal, metrics = process.next(state, client_datasets,
                                            personal_weights, client_info)

`next` takes the server state, the sampled clients' datasets, their Ditto
personal models (CLIENTS-placed state the driver keeps between rounds, keyed
by client id: `personal_store`) and per-client info (privacy-group index and
client id), and returns the new server state, the updated personal models and
the aggregator's measurements.

The client maths is `client_update` (plain TF); the privacy mechanism is the
aggregation factory passed in (`hdp_factory.HeterogeneousDPFactory`), so the
process never mentions clipping or noise. Learning rates decay by
`lr_decay_factor` every `lr_decay_rounds` rounds (Table 7).
"""

import collections
from typing import Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp.fedhdp import client_update as client_update_lib
from tff_hdp import models


def _weights_type(spec: models.ModelSpec):
  return tff.types.to_type([(np.float32, s) for s in spec.shapes])


def dataset_type(spec: models.ModelSpec) -> tff.SequenceType:
  """Element type of a client's batched dataset: (x [B, ...], y [B])."""
  return tff.SequenceType((tff.TensorType(np.float32,
                                          (None,) + spec.input_shape),
                           tff.TensorType(np.int32, (None,))))


CLIENT_INFO_TYPE = tff.types.to_type(
    collections.OrderedDict(group=np.int32, client_id=np.int32))


RoundParts = collections.namedtuple(
    'RoundParts', ['state_type', 'server_message', 'client_fn', 'server_apply'])
RoundParts.__doc__ = """The TFF computations of a round, apart from the aggregation.

Attributes:
  state_type: OrderedDict(global_weights, round_num, aggregator).
  server_message: state -> what is broadcast (weights, decayed eta and eta_p,
    the round's seed).
  client_fn: (dataset, personal, client_info, message) ->
    OrderedDict(delta, personal): `client_update` on one client.
  server_apply: (state, Delta^t, new aggregator state) -> new state.
"""


def build_round_parts(spec: models.ModelSpec,
                      aggregator_state_type,
                      *,
                      ditto_lambdas: Sequence[float],
                      local_epochs: int,
                      learning_rate: float,
                      personal_learning_rate: float,
                      lr_decay_factor: float = 1.0,
                      lr_decay_rounds: int = 50,
                      ditto: bool = True,
                      seed: int = 0) -> RoundParts:
  """The round's computations (see `build_hdp_process` for the arguments).

  `build_hdp_process` composes them with an aggregation process; a runtime
  that splits a round differently (`distributed`) composes them itself.
  """
  if local_epochs < 1:
    raise ValueError(f'local_epochs must be >= 1, got {local_epochs}')
  if not learning_rate > 0:
    raise ValueError(f'learning_rate must be > 0, got {learning_rate}')
  if not personal_learning_rate >= 0:
    raise ValueError(
        f'personal_learning_rate must be >= 0, got {personal_learning_rate}')
  if any(not lam >= 0 for lam in ditto_lambdas):
    raise ValueError(f'ditto lambdas must be >= 0, got {list(ditto_lambdas)}')
  if not 0 < lr_decay_factor <= 1:
    raise ValueError(f'lr_decay_factor must be in (0, 1], got {lr_decay_factor}')
  if lr_decay_rounds < 1:
    raise ValueError(f'lr_decay_rounds must be >= 1, got {lr_decay_rounds}')

  weights_type = _weights_type(spec)
  state_type = tff.types.to_type(
      collections.OrderedDict(
          global_weights=weights_type,
          round_num=np.int32,
          aggregator=aggregator_state_type))
  lambdas = np.asarray(ditto_lambdas, np.float32)

  @tff.tensorflow.computation(state_type)
  def server_message(state):
    decay = tf.pow(tf.constant(lr_decay_factor, tf.float32),
                   tf.cast(state['round_num'] // lr_decay_rounds, tf.float32))
    return collections.OrderedDict(
        weights=state['global_weights'],
        learning_rate=learning_rate * decay,
        personal_learning_rate=personal_learning_rate * decay,
        key=tf.stack([tf.constant(seed, tf.int32), state['round_num']]))

  @tff.tensorflow.computation(dataset_type(spec), weights_type,
                              CLIENT_INFO_TYPE,
                              server_message.type_signature.result)
  def client_fn(dataset, personal, info, message):
    out = client_update_lib.client_update(
        spec,
        message['weights'],
        personal,
        dataset,
        local_epochs=local_epochs,
        learning_rate=message['learning_rate'],
        personal_learning_rate=message['personal_learning_rate'],
        ditto_lambda=tf.gather(lambdas, info['group']),
        train_personal=ditto,
        seed=tf.random.experimental.stateless_fold_in(message['key'],
                                                      info['client_id']))
    return collections.OrderedDict(delta=out.delta,
                                   personal=out.personal_weights)

  @tff.tensorflow.computation(state_type, weights_type, aggregator_state_type)
  def server_apply(state, delta, aggregator_state):
    return collections.OrderedDict(
        global_weights=[w + d for w, d in zip(state['global_weights'], delta)],
        round_num=state['round_num'] + 1,
        aggregator=aggregator_state)

  return RoundParts(state_type, server_message, client_fn, server_apply)


def build_hdp_process(spec: models.ModelSpec,
                      initial_weights: Sequence[np.ndarray],
                      aggregator: tff.aggregators.WeightedAggregationFactory,
                      *,
                      ditto_lambdas: Sequence[float],
                      local_epochs: int,
                      learning_rate: float,
                      personal_learning_rate: float,
                      lr_decay_factor: float = 1.0,
                      lr_decay_rounds: int = 50,
                      ditto: bool = True,
                      seed: int = 0) -> tff.templates.IterativeProcess:
  """Builds the FedHDP process.

  Args:
    spec: The model.
    initial_weights: theta^0.
    aggregator: The heterogeneous-DP aggregation factory; each client's weight
      is its group index.
    ditto_lambdas: lambda of each group, indexed like the aggregator's groups.
    local_epochs: E >= 1.
    learning_rate: eta > 0.
    personal_learning_rate: eta_p >= 0.
    lr_decay_factor: Multiplies eta and eta_p every `lr_decay_rounds` rounds.
    lr_decay_rounds: See above.
    ditto: Whether clients train personal models.
    seed: Seed of the clients' dropout masks.

  Returns:
    A `tff.templates.IterativeProcess`.
  """
  aggregation = aggregator.create(_weights_type(spec),
                                  tff.TensorType(np.int32))
  parts = build_round_parts(
      spec,
      aggregation.state_type.member,
      ditto_lambdas=ditto_lambdas,
      local_epochs=local_epochs,
      learning_rate=learning_rate,
      personal_learning_rate=personal_learning_rate,
      lr_decay_factor=lr_decay_factor,
      lr_decay_rounds=lr_decay_rounds,
      ditto=ditto,
      seed=seed)
  initial_weights = [np.asarray(w, np.float32) for w in initial_weights]

  @tff.tensorflow.computation
  def initial_model():
    return [tf.constant(w) for w in initial_weights]

  @tff.federated_computation
  def initialize_fn():
    return tff.federated_zip(
        collections.OrderedDict(
            global_weights=tff.federated_eval(initial_model, tff.SERVER),
            round_num=tff.federated_value(np.int32(0), tff.SERVER),
            aggregator=aggregation.initialize()))

  @tff.federated_computation(
      tff.FederatedType(parts.state_type, tff.SERVER),
      tff.FederatedType(dataset_type(spec), tff.CLIENTS),
      tff.FederatedType(_weights_type(spec), tff.CLIENTS),
      tff.FederatedType(CLIENT_INFO_TYPE, tff.CLIENTS))
  def next_fn(state, client_data, personal_weights, client_info):
    message = tff.federated_broadcast(
        tff.federated_map(parts.server_message, state))
    outputs = tff.federated_map(
        parts.client_fn, (client_data, personal_weights, client_info, message))
    aggregate = aggregation.next(state.aggregator, outputs.delta,
                                 client_info.group)
    new_state = tff.federated_map(
        parts.server_apply, (state, aggregate.result, aggregate.state))
    return new_state, outputs.personal, aggregate.measurements

  return tff.templates.IterativeProcess(initialize_fn, next_fn)


def global_weights(state) -> list[np.ndarray]:
  """theta^t from a server state returned by the process."""
  return [np.asarray(w) for w in state['global_weights']]
