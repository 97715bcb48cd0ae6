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
"""One round of paper 003's Algorithm 1 as a `tff.templates.IterativeProcess`.

  next(state, client_data, client_info) -> (state, measurements)

Every client runs DP-SGD (`dp_sgd.client_update`) from the broadcast model
with its own batch size b_i and noise multiplier z_i, both from its
CLIENTS-placed `client_info` (a client knows its own privacy parameters; the
server never sees them); the aggregation is a `tff.aggregators` factory
(`aggregator.NoiseAwareAggregationFactory`) passed in, one per rule. A
client's DP-SGD key is (seed, round, client index), so every rule of one
comparison trains on the same batches and noise draws.

`client_data` holds one element per client: all its examples, (x [N_i, ...],
y [N_i]); DP-SGD samples its batches itself (Poisson by default).
"""

import collections
import functools
from typing import NamedTuple

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import models
from tff_hdp.robust_hdp import dp_sgd
from tff_hdp.robust_hdp import aggregator as aggregator_lib

CLIENT_INFO_TYPE = tff.types.to_type(
    collections.OrderedDict(index=np.int32, batch_size=np.int32,
                            noise_multiplier=np.float32))


def weights_type(spec: models.ModelSpec):
  return tff.types.to_type([(np.float32, s) for s in spec.shapes])


def dataset_type(spec: models.ModelSpec) -> tff.SequenceType:
  return tff.SequenceType((tff.TensorType(np.float32,
                                          (None,) + spec.input_shape),
                           tff.TensorType(np.int32, (None,))))


class RoundParts(NamedTuple):
  """The pieces of a round that the process and the distributed form share.

  `state_type` is the server state's type; `initialize` the process's; the
  other computations are those named in `build_process`'s round:
  `server_message` (SERVER state -> the clients' weights and round key),
  `client_fn` (a client's dataset, info and message -> its Delta_i),
  `server_apply` (state, aggregate, aggregator state -> the new state);
  `aggregation` is the rule's `tff.templates.AggregationProcess` and
  `factory` the factory it came from.
  """
  state_type: tff.Type
  initialize: tff.Computation
  server_message: tff.Computation
  client_fn: tff.Computation
  server_apply: tff.Computation
  aggregation: tff.templates.AggregationProcess
  factory: aggregator_lib.NoiseAwareAggregationFactory


def build_round_parts(spec: models.ModelSpec,
                      initial_weights,
                      aggregator: aggregator_lib.NoiseAwareAggregationFactory,
                      *,
                      settings: dp_sgd.DpSgdSettings,
                      private: bool = True,
                      seed: int = 0) -> RoundParts:
  """The round's computations (arguments as `build_process`)."""
  dp_sgd.check_settings(settings)
  w_type = weights_type(spec)
  aggregation = aggregator.create(w_type, tff.TensorType(np.int32))
  state_type = tff.types.to_type(
      collections.OrderedDict(global_weights=w_type, round_num=np.int32,
                              aggregator=aggregation.state_type.member))
  initial_weights = [np.asarray(w, np.float32) for w in initial_weights]

  @tff.tensorflow.computation
  def initial_model():
    return [tf.constant(w) for w in initial_weights]

  @tff.tensorflow.computation(state_type)
  def server_message(state):
    return collections.OrderedDict(
        weights=state['global_weights'],
        key=tf.stack([tf.constant(seed, tf.int32), state['round_num']]))

  @tff.tensorflow.computation(dataset_type(spec), CLIENT_INFO_TYPE,
                              server_message.type_signature.result)
  def client_fn(dataset, info, message):
    x, y = dataset.get_single_element()
    return client_step(spec, message['weights'], x, y, info, message['key'],
                       settings=settings, private=private)

  @tff.tensorflow.computation(state_type, w_type,
                              aggregation.state_type.member)
  def server_apply(state, delta, aggregator_state):
    return collections.OrderedDict(
        global_weights=[w + d for w, d in zip(state['global_weights'], delta)],
        round_num=state['round_num'] + 1,
        aggregator=aggregator_state)

  @tff.federated_computation
  def initialize():
    return tff.federated_zip(
        collections.OrderedDict(
            global_weights=tff.federated_eval(initial_model, tff.SERVER),
            round_num=tff.federated_value(np.int32(0), tff.SERVER),
            aggregator=aggregation.initialize()))

  return RoundParts(state_type, initialize, server_message, client_fn,
                    server_apply, aggregation, aggregator)


def build_process(spec: models.ModelSpec,
                  initial_weights,
                  aggregator: aggregator_lib.NoiseAwareAggregationFactory,
                  *,
                  settings: dp_sgd.DpSgdSettings,
                  private: bool = True,
                  seed: int = 0) -> tff.templates.IterativeProcess:
  """Builds the Robust-HDP (or baseline) training process.

  Args:
    spec: The model.
    initial_weights: theta^0.
    aggregator: The rule's factory; a client's weight is its index.
    settings: DP-SGD's c, eta_l, K and batch sampling.
    private: False trains every client with plain SGD (no clip, no noise).
    seed: Seed of every client's batches and noise.
  """
  parts = build_round_parts(spec, initial_weights, aggregator,
                            settings=settings, private=private, seed=seed)
  aggregation = parts.aggregation

  @tff.federated_computation(
      tff.FederatedType(parts.state_type, tff.SERVER),
      tff.FederatedType(dataset_type(spec), tff.CLIENTS),
      tff.FederatedType(CLIENT_INFO_TYPE, tff.CLIENTS))
  def next_fn(state, client_data, client_info):
    message = tff.federated_broadcast(
        tff.federated_map(parts.server_message, state))
    deltas = tff.federated_map(parts.client_fn,
                               (client_data, client_info, message))
    aggregate = aggregation.next(state.aggregator, deltas, client_info.index)
    new_state = tff.federated_map(
        parts.server_apply, (state, aggregate.result, aggregate.state))
    return new_state, aggregate.measurements

  return tff.templates.IterativeProcess(parts.initialize, next_fn)


def client_step(spec: models.ModelSpec, weights, x, y, info, round_key, *,
                settings: dp_sgd.DpSgdSettings, private: bool):
  """One client's Delta_i; its DP-SGD key is (round key, client index)."""
  return dp_sgd.client_update(
      spec, weights, x, y,
      batch_size=info['batch_size'],
      noise_multiplier=info['noise_multiplier'] if private else None,
      key=tf.random.experimental.stateless_fold_in(round_key, info['index']),
      settings=settings)


@functools.lru_cache(maxsize=None)
def _client_function(spec: models.ModelSpec, settings: dp_sgd.DpSgdSettings,
                     private: bool):
  """`client_step`, flattened, as one tf.function per (model, settings,
  private): the rules of one comparison share its traces.

  No autograph: the round has no Python control flow on tensors (TFF's
  tracing runs the same code without it), and converting DP-SGD and the
  aggregation took most of a short run's tracing time.
  """
  return tf.function(
      lambda w, x, y, info, key: aggregator_lib.flatten(client_step(
          spec, w, x, y, info, key, settings=settings, private=private)),
      reduce_retracing=True, autograph=False)


class DirectRunner:
  """The round of `build_process` in plain TensorFlow, without TFF's runtime.

  Same arguments as `build_process`; `initialize()` and `next(state,
  client_data, client_info)` behave as the process's (the client data may
  also be (x, y) array pairs).
  """

  def __init__(self, spec: models.ModelSpec, initial_weights,
               aggregator, *, settings: dp_sgd.DpSgdSettings,
               private: bool = True, seed: int = 0):
    dp_sgd.check_settings(settings)
    self._spec = spec
    self._initial = [np.asarray(w, np.float32) for w in initial_weights]
    self._aggregator = aggregator
    self._seed = seed
    self._client = _client_function(spec, settings, private)
    # No autograph (see `_client_function`).
    self._server = tf.function(aggregator.server_step, autograph=False)

  def initialize(self):
    state = collections.OrderedDict(
        global_weights=list(self._initial),
        round_num=np.int32(0),
        aggregator=self._aggregator.initial_state())
    return tf.nest.map_structure(np.asarray, state)

  def client_updates(self, state, client_data, client_info) -> tf.Tensor:
    """The clients' flattened updates Delta_i, stacked: [n, p] float32."""
    weights = [tf.constant(w) for w in state['global_weights']]
    key = tf.constant([self._seed, int(state['round_num'])], tf.int32)
    rows = []
    for data, info in zip(client_data, client_info):
      if isinstance(data, tf.data.Dataset):
        data = data.get_single_element()
      x, y = data
      rows.append(self._client(weights, tf.constant(x), tf.constant(y),
                               {k: tf.constant(v) for k, v in info.items()},
                               key))
    return tf.stack(rows)

  def server_update(self, state, updates: tf.Tensor):
    """(new state, measurements) from the stacked updates."""
    new_aggregator, flat, measurements = self._server(
        tf.nest.map_structure(tf.constant, state['aggregator']), updates)
    delta = aggregator_lib.unflatten(
        flat, [tf.TensorSpec(s, tf.float32) for s in self._spec.shapes])
    new_state = collections.OrderedDict(
        global_weights=[w + d for w, d in zip(state['global_weights'], delta)],
        round_num=np.int32(state['round_num'] + 1),
        aggregator=new_aggregator)
    return (tf.nest.map_structure(np.asarray, new_state),
            tf.nest.map_structure(np.asarray, measurements))

  def next(self, state, client_data, client_info):
    return self.server_update(
        state, self.client_updates(state, client_data, client_info))


def global_weights(state) -> list[np.ndarray]:
  """theta^e from a server state returned by the process."""
  return [np.asarray(w) for w in state['global_weights']]


def client_dataset(x: np.ndarray, y: np.ndarray) -> tf.data.Dataset:
  """A client's data as the process takes it: one element, all examples."""
  return tf.data.Dataset.from_tensors((np.asarray(x, np.float32),
                                       np.asarray(y, np.int32)))
