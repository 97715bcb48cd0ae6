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
"""Paper 003's Algorithm 1 as a `tff.learning.templates.LearningProcess`.

    process = build_robust_hdp_process(model, epsilons=..., batch_sizes=...,
                                       num_examples=..., rounds=...)
    output = process.next(state, clients)   # every client, `client_element`s
    process.epsilon(output.state)           # each client's epsilon so far

Composed from TFF's templates: a broadcast of theta^e, the client work (each
client runs DP-SGD, `dp_sgd.client_update`, from the broadcast model with its
own batch size b_i and noise multiplier z_i, both in its CLIENTS-placed info:
a client knows its own privacy parameters, the server never sees them), the
rule's aggregation (`aggregator.NoiseAwareAggregationFactory`; a client's
update weight is its row index) and theta^{e+1} = theta^e + Delta^e. A
client's DP-SGD key is (seed, round, client index), so every rule of one
comparison trains on the same batches and noise draws.

A client's data is one element: all its examples, (x [N_i, ...], y [N_i]);
DP-SGD samples its batches itself (Poisson by default). Every client takes
part in every round (paper 003), so each client's epsilon is that of its
DP-SGD steps: E_i = K ceil(N_i / b_i) Poisson-subsampled Gaussian steps of
rate b_i / N_i and multiplier z_i per round, at the example level of its own
data (`process.epsilon`).

`TffRunner` (the driver's TFF backend) and `DirectRunner` (the same round in
plain TensorFlow) run it with the driver's state dict.
"""

import collections
import functools
from typing import NamedTuple, Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import models
from tff_hdp import templates
from tff_hdp.data import client_data
from tff_hdp.robust_hdp import aggregation_rules
from tff_hdp.robust_hdp import aggregator as aggregator_lib
from tff_hdp.robust_hdp import config as config_lib
from tff_hdp.robust_hdp import dp_sgd
from tff_hdp.robust_hdp import privacy_preferences

CLIENT_INFO_TYPE = tff.types.to_type(
    collections.OrderedDict(index=np.int32, batch_size=np.int32,
                            noise_multiplier=np.float32))


def client_data_type(spec: models.ModelSpec) -> tff.SequenceType:
  """A client as the learning process takes it: one element holding all its
  examples and its info (index, b_i, z_i). One sequence, as TFF's client work
  and program data sources take (`client_element` makes it)."""
  return tff.SequenceType(collections.OrderedDict(
      x=tff.TensorType(np.float32, (None,) + spec.input_shape),
      y=tff.TensorType(np.int32, (None,)),
      index=np.int32, batch_size=np.int32, noise_multiplier=np.float32))


def client_element(x: np.ndarray, y: np.ndarray, *, index: int,
                   batch_size: int, noise_multiplier: Optional[float]
                   ) -> tf.data.Dataset:
  """One client as the learning process takes it (`client_data_type`)."""
  return tf.data.Dataset.from_tensors(collections.OrderedDict(
      x=np.asarray(x, np.float32), y=np.asarray(y, np.int32),
      index=np.int32(index), batch_size=np.int32(batch_size),
      noise_multiplier=np.float32(noise_multiplier or 0.0)))


class RoundParts(NamedTuple):
  """The pieces of a round that the process and the distributed form share.

  `state_type` is the server state's type; `initialize` the process's; the
  other computations are those named in the learning process's round:
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
  """The round's computations (arguments as `TffRunner`'s)."""
  dp_sgd.check_settings(settings)
  w_type = templates.weights_type(spec.shapes)
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

  @tff.tensorflow.computation(templates.dataset_type(spec), CLIENT_INFO_TYPE,
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


def build_client_work(spec: models.ModelSpec, *,
                      settings: dp_sgd.DpSgdSettings, private: bool = True,
                      seed: int = 0) -> tff.learning.templates.ClientWorkProcess:
  """Each client's DP-SGD round as TFF client work: the update is Delta_i,
  its weight the client's row index; the state is the round number."""
  dp_sgd.check_settings(settings)
  model_type = templates.model_weights_type(spec)
  data_type = client_data_type(spec)

  @tff.tensorflow.computation(np.int32)
  def round_key(round_num):
    return tf.stack([tf.constant(seed, tf.int32), round_num])

  @tff.tensorflow.computation(model_type, data_type, round_key.type_signature.result)
  def work(weights, client, key):
    info = client.get_single_element()
    x, y = info['x'], info['y']
    delta = client_step(spec, weights.trainable, x, y, info, key,
                        settings=settings, private=private)
    return tff.learning.templates.ClientResult(update=delta,
                                               update_weight=info['index'])

  return templates.build_round_client_work(model_type, data_type, round_key,
                                         work)


def compose_robust_hdp_process(
    spec: models.ModelSpec, initial_weights,
    aggregator: aggregator_lib.NoiseAwareAggregationFactory, *,
    settings: dp_sgd.DpSgdSettings, private: bool = True, seed: int = 0,
    privacy: Optional[templates.RoundPrivacy] = None
) -> templates.PrivateLearningProcess:
  """The learning process of one rule (what the driver's TFF backend and
  `build_robust_hdp_process` both run)."""
  if not isinstance(aggregator, aggregator_lib.NoiseAwareAggregationFactory):
    raise TypeError('aggregator must be a tff_hdp.robust_hdp.aggregator.'
                    'NoiseAwareAggregationFactory, got '
                    f'{type(aggregator).__name__}')
  return templates.compose_private_process(
      spec, initial_weights,
      build_client_work(spec, settings=settings, private=private, seed=seed),
      aggregator,
      privacy or templates.RoundPrivacy('example-level', {}, delta=1e-5))


def robust_hdp_privacy(clients: Sequence[privacy_preferences.ClientPrivacy],
                       *, local_epochs: int, delta: float,
                       accountant: str = 'rdp', poisson: bool = True
                       ) -> templates.RoundPrivacy:
  """Each private client's example-level accounting: per round, E_i DP-SGD
  steps of rate b_i / N_i and multiplier z_i, on the calibration's orders.
  Fixed-size shuffled batches (poisson=False) are accounted as Poisson, an
  approximation, not a bound."""
  return templates.RoundPrivacy(
      level='example-level',
      mechanisms={f'client_{i}': (c.sampling_rate, c.noise_multiplier,
                                  dp_sgd.steps_per_round(
                                      c.num_examples, c.batch_size,
                                      local_epochs))
                  for i, c in enumerate(clients)
                  if c.noise_multiplier is not None},
      delta=delta, accountant=accountant, is_bound=poisson,
      orders=privacy_preferences.ORDERS)


def client_privacy(config: config_lib.RobustHdpConfig, num_examples
                  ) -> list[privacy_preferences.ClientPrivacy]:
  """Each client's calibrated DP-SGD parameters under `config.algorithm`."""
  private = config.algorithm != 'non_private'
  return privacy_preferences.calibrate(
      list(config.epsilons) if private else [None] * len(config.epsilons),
      config.batch_sizes, num_examples, rounds=config.rounds,
      local_epochs=config.local_epochs, delta=config.delta,
      epsilon_floor=(min(config.epsilons)
                     if config.algorithm == 'min_epsilon' else None),
      accountant=config.accountant)


def true_variances(config: config_lib.RobustHdpConfig, clients,
                   num_parameters: int) -> list[float]:
  """sigma_i^2 of eq. (7) (with eq. (3)'s noise term) of every client."""
  return [
      aggregation_rules.dp_sgd_noise_variance(
          c.noise_multiplier, c.batch_size, c.num_examples,
          config.local_epochs, config.clip, config.learning_rate,
          num_parameters) for c in clients
  ]


def build_aggregator(config: config_lib.RobustHdpConfig, clients, variances
                    ) -> aggregator_lib.NoiseAwareAggregationFactory:
  """The rule's factory, told only what that rule's server knows."""
  n = len(clients)
  kwargs = {}
  if config.algorithm in aggregation_rules.FIXED_WEIGHT_RULES:
    kwargs['fixed_weights'] = aggregation_rules.fixed_weights(
        config.algorithm, epsilons=config.epsilons,
        num_examples=[c.num_examples for c in clients], variances=variances)
  if config.algorithm == 'pfa':
    kwargs['epsilons'] = config.epsilons
    kwargs['pfa_rank'] = config.pfa_rank
  if config.algorithm == 'robust_hdp':
    kwargs.update(first_round_only=config.first_round_only,
                  block_rows=config.block_rows,
                  rpca_max_iterations=config.rpca_max_iterations,
                  rpca_method=config.rpca_method)
  return aggregator_lib.NoiseAwareAggregationFactory(config.algorithm, n,
                                                     **kwargs)


def build_robust_hdp_process(
    model,
    *,
    epsilons: Sequence[Optional[float]],
    batch_sizes: Sequence[int],
    num_examples: Sequence[int],
    rounds: int,
    rule: str = 'robust_hdp',
    local_epochs: int = 1,
    learning_rate: float = 0.1,
    clip: float = 3.0,
    poisson: bool = True,
    delta: float = 1e-4,
    accountant: str = 'rdp',
    rpca_method: str = 'admm',
    seed: int = 0) -> templates.PrivateLearningProcess:
  """Robust-HDP (or a baseline rule of paper 003) as a `LearningProcess`.

  Defaults are paper 003's code's. Every client calibrates its own DP-SGD
  noise z_i so that `rounds` rounds spend exactly epsilon_i
  (`privacy_preferences.calibrate`); the server's rule sees only the
  updates (Robust-HDP) or the side information the baseline is allowed.

  Args:
    model: A `tff.learning.models.FunctionalModel` or a
      `tff_hdp.models.ModelSpec`; theta^0 is its initial weights.
    epsilons: epsilon_i per client (client i is row i); None: non-private.
    batch_sizes: b_i per client.
    num_examples: N_i per client (its dataset's size).
    rounds: E, the rounds the epsilons are calibrated for.
    rule: One of `config.RULES`.
    local_epochs, learning_rate, clip: DP-SGD's K, eta_l and c.
    poisson: Poisson-sampled batches (the accounting's bound) or shuffled
      fixed-size ones (accounted as Poisson, not a bound).
    delta: Each client's delta.
    accountant: 'rdp' (the paper's) or 'pld'.
    rpca_method: Robust PCA's solver, 'admm' or 'ialm'.
    seed: Seed of theta^0 (package models) and every client's batches and
      noise.

  Returns:
    A `tff_hdp.templates.PrivateLearningProcess` whose `next` takes every
    client as `client_element(x, y, index=i, batch_size=b_i,
    noise_multiplier=z_i)`; `process.clients` holds each client's
    calibration (`privacy_preferences.ClientPrivacy`).
  """
  spec = models.as_model_spec(model)
  config = config_lib.RobustHdpConfig(
      algorithm=rule, epsilons=tuple(epsilons),
      batch_sizes=tuple(int(b) for b in batch_sizes), rounds=rounds,
      local_epochs=local_epochs, learning_rate=learning_rate, clip=clip,
      delta=delta, accountant=accountant, poisson=poisson,
      rpca_method=rpca_method, seed=seed)
  config.validate()
  if len(num_examples) != len(config.epsilons):
    raise ValueError(f'num_examples must give one N_i per client '
                     f'({len(config.epsilons)}), got {len(num_examples)}')
  clients = client_privacy(config, [int(n) for n in num_examples])
  factory = build_aggregator(
      config, clients, true_variances(config, clients, spec.num_parameters))
  settings = dp_sgd.DpSgdSettings(clip=clip, learning_rate=learning_rate,
                                  local_epochs=local_epochs, poisson=poisson)
  process = compose_robust_hdp_process(
      spec, spec.init(seed), factory, settings=settings,
      private=rule != 'non_private', seed=seed,
      privacy=robust_hdp_privacy(clients, local_epochs=local_epochs,
                                 delta=delta, accountant=accountant,
                                 poisson=poisson))
  process.clients = clients
  return process


def build_data_source(process: templates.PrivateLearningProcess, data
                      ) -> client_data.PoissonClientSource:
  """Every client, every round (paper 003), for TFF programs: `data` is a
  `FederatedData` or a `ClientData` (clients in `client_ids` order, row i
  of the process's epsilons)."""
  data = client_data.as_federated_data(data)
  if data.num_clients != len(process.clients):
    raise ValueError(f'the data has {data.num_clients} clients, the process '
                     f'{len(process.clients)}')
  elements = [client_element(x, y, index=i, batch_size=c.batch_size,
                             noise_multiplier=c.noise_multiplier)
              for i, ((x, y), c) in enumerate(zip(data.train,
                                                  process.clients))]
  return client_data.PoissonClientSource(
      data.num_clients, 1.0, lambda cohort, rng: [elements[i] for i in cohort],
      process.next.type_signature.parameter[1])


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


class TffRunner:
  """The learning process (`compose_robust_hdp_process`) with the driver's
  interface: `initialize()` and `next(state, client_data, client_info)` ->
  (state, measurements) on the driver's state dict."""

  def __init__(self, spec: models.ModelSpec, initial_weights, aggregator, *,
               settings: dp_sgd.DpSgdSettings, private: bool = True,
               seed: int = 0):
    self.process = compose_robust_hdp_process(
        spec, initial_weights, aggregator, settings=settings,
        private=private, seed=seed)

  def initialize(self):
    return _from_learning_state(self.process.initialize())

  def next(self, state, client_data, client_info):
    clients = []
    for data, info in zip(client_data, client_info):
      if isinstance(data, tf.data.Dataset):
        data = data.get_single_element()
      clients.append(client_element(
          *data, index=info['index'], batch_size=info['batch_size'],
          noise_multiplier=info['noise_multiplier']))
    output = self.process.next(_to_learning_state(state), clients)
    return (_from_learning_state(output.state),
            tf.nest.map_structure(np.asarray, output.metrics['aggregator']))


def _to_learning_state(state) -> tff.learning.templates.LearningAlgorithmState:
  return tff.learning.templates.LearningAlgorithmState(
      global_model_weights=tff.learning.models.ModelWeights(
          trainable=list(state['global_weights']), non_trainable=[]),
      distributor=(), client_work=np.int32(state['round_num']),
      aggregator=state['aggregator'], finalizer=())


def _from_learning_state(state) -> collections.OrderedDict:
  return tf.nest.map_structure(np.asarray, collections.OrderedDict(
      global_weights=list(state.global_model_weights.trainable),
      round_num=state.client_work, aggregator=state.aggregator))


class DirectRunner:
  """The round of the learning process in plain TensorFlow, without TFF's
  runtime.

  Same arguments as `TffRunner`; `initialize()` and `next(state,
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


def client_dataset(x: np.ndarray, y: np.ndarray) -> tf.data.Dataset:
  """A client's data as the process takes it: one element, all examples."""
  return tf.data.Dataset.from_tensors((np.asarray(x, np.float32),
                                       np.asarray(y, np.int32)))
