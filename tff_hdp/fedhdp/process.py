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
"""FedHDP (paper 001, Algorithm 2) as a `tff.learning.templates.LearningProcess`.

    process = build_fedhdp_process(model, Preferences(levels=...), ...)
    state = process.initialize()
    output = process.next(state, clients)   # clients: `client_element`s
    process.epsilon(output.state)           # epsilon of each private group

The process is composed from TFF's templates
(`tff.learning.templates.compose_learning_process`): a broadcast of
theta^t, the client work (Algorithm 2's ClientUpdate: E epochs of SGD from
theta^t, Delta = theta - theta^t, `client_update`), the aggregation
(`hdp_factory.HeterogeneousDPFactory`: clipping, each group's noisy mean, the
ratio-weighted combination, adaptive clipping; a client's update weight is
its group index) and theta^{t+1} = theta^t + Delta^t. Learning rates decay by
`lr_decay_factor` every `lr_decay_rounds` rounds (Table 7); the client
work's state is the round number. `build_fedhdp_process` returns a
`FedHdpProcess`, which declares what else it carries (the clients' groups,
Ditto's step).

Ditto's personal models are client state, kept beside the process as TFF
keeps stateful clients: `build_ditto_step` is their step, a federated
computation on the same batches and dropout masks as the global steps.
The metrics hold no realised count of a round's clients, and an empty
cohort takes a noise-only step with the same metrics as any other round.
Both in depth: docs/fedhdp.md (The learning process).
"""

import collections
import dataclasses
from typing import NamedTuple, Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import models
from tff_hdp import templates
from tff_hdp.data import client_data
from tff_hdp.fedhdp import algorithm as algorithm_lib
from tff_hdp.fedhdp import client_update as client_update_lib
from tff_hdp.fedhdp import clip_noise
from tff_hdp.fedhdp import config as config_lib
from tff_hdp.fedhdp import hdp_factory
from tff_hdp.fedhdp import privacy_groups
from tff_hdp.privacy import mechanism_key
from tff_hdp.privacy import preferences as preferences_lib
from tff_hdp.privacy import round_privacy


CLIENT_INFO_TYPE = tff.types.to_type(
    collections.OrderedDict(group=np.int32, client_id=np.int32))


def client_data_type(spec: models.ModelSpec) -> tff.SequenceType:
  """What the learning process takes per client: its batches, each carrying
  the client's group (the aggregator's index) and id (which seeds its
  dropout). One sequence, as TFF's client work and program data sources take
  (`client_element` makes it)."""
  return tff.SequenceType(collections.OrderedDict(
      x=tff.TensorType(np.float32, (None,) + spec.input_shape),
      y=tff.TensorType(np.int32, (None,)),
      group=np.int32, client_id=np.int32))


def client_element(x: np.ndarray, y: np.ndarray, *, group: int,
                   client_id: int, batch_size: int) -> tf.data.Dataset:
  """One client as the learning process takes it (`client_data_type`).

  Zipped, not mapped: a `map` traces its function anew for every dataset
  it makes (what that cost a data source's `select`: docs/performance.md).
  A client without examples has no batch to carry its group, and is read
  as group 0 (its update is zero): leave it out, as `build_data_source`
  does.
  """
  batches = lambda a: tf.data.Dataset.from_tensor_slices(a).batch(batch_size)
  constant = lambda v: tf.data.Dataset.from_tensors(np.int32(v)).repeat()
  return tf.data.Dataset.zip(collections.OrderedDict(
      x=batches(np.asarray(x, np.float32)), y=batches(np.asarray(y, np.int32)),
      group=constant(group), client_id=constant(client_id)))


class _Client(NamedTuple):
  """One client as `_client_update` takes it (`_split` of a
  `client_element`)."""
  batches: tf.data.Dataset  # Elements with x and y (and the info).
  info: collections.OrderedDict  # Its group and client id (int32).


def _split(client: tf.data.Dataset) -> _Client:
  """(batches, info) of a `client_element`: the batches as they are (their
  elements carry x and y beside the info, which `client_update` and
  `models.metric_sums` read) and the group and id of the first (0 and 0
  for a client without batches).

  Neither a `reduce` nor a `map`: TFF's runtime instantiates their
  functions for every client (what that cost: docs/performance.md).
  """
  empty = tf.nest.map_structure(
      lambda s: tf.zeros([0 if d is None else d for d in s.shape], s.dtype),
      client.element_spec)
  first = client.take(1).concatenate(
      tf.data.Dataset.from_tensors(empty)).take(1).get_single_element()
  return _Client(client, collections.OrderedDict(
      group=first['group'], client_id=first['client_id']))


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


@dataclasses.dataclass(frozen=True)
class ClientSettings:
  """What every client does in a round (Algorithm 2's ClientUpdate)."""

  ditto_lambdas: tuple[float, ...]  # lambda of each group.
  local_epochs: int
  batch_size: int
  learning_rate: float
  personal_learning_rate: float
  lr_decay_factor: float = 1.0
  lr_decay_rounds: int = 50
  ditto: bool = True
  seed: int = 0
  # The groups whose clients report their training metrics: the non-private
  # ones (no guarantee to keep). A private group's are left out.
  report_groups: tuple[int, ...] = ()

  def validate(self) -> None:
    """Raises ValueError (one line naming the field) on a bad value."""
    checks = [
        (self.local_epochs >= 1,
         f'local_epochs must be >= 1, got {self.local_epochs}'),
        (self.batch_size >= 1,
         f'batch_size must be >= 1, got {self.batch_size}'),
        (self.learning_rate > 0,
         f'learning_rate must be > 0, got {self.learning_rate}'),
        (self.personal_learning_rate >= 0, 'personal_learning_rate must be '
         f'>= 0, got {self.personal_learning_rate}'),
        (all(lam >= 0 for lam in self.ditto_lambdas),
         f'ditto lambdas must be >= 0, got {list(self.ditto_lambdas)}'),
        (0 < self.lr_decay_factor <= 1,
         f'lr_decay_factor must be in (0, 1], got {self.lr_decay_factor}'),
        (self.lr_decay_rounds >= 1,
         f'lr_decay_rounds must be >= 1, got {self.lr_decay_rounds}'),
    ]
    for ok, message in checks:
      if not ok:
        raise ValueError(message)


def _schedule(settings: ClientSettings, round_num: tf.Tensor):
  """eta, eta_p (decayed) and the round's key, from the round number."""
  decay = tf.pow(tf.constant(settings.lr_decay_factor, tf.float32),
                 tf.cast(round_num // settings.lr_decay_rounds, tf.float32))
  return collections.OrderedDict(
      learning_rate=settings.learning_rate * decay,
      personal_learning_rate=settings.personal_learning_rate * decay,
      key=tf.stack([tf.constant(settings.seed, tf.int32), round_num]))


def _client_update(spec, settings: ClientSettings, weights, personal,
                   client: _Client, schedule, *, train_global: bool,
                   train_personal: bool):
  """`client_update` of one client, seeded by (round key, client id)."""
  dataset, info = client
  lambdas = tf.constant(np.asarray(settings.ditto_lambdas, np.float32))
  return client_update_lib.client_update(
      spec, weights, personal, dataset,
      steps=client_update_lib.Steps(settings.local_epochs,
                                    train_personal=train_personal,
                                    train_global=train_global),
      rates=client_update_lib.Rates(
          learning_rate=schedule['learning_rate'],
          personal_learning_rate=schedule['personal_learning_rate'],
          ditto_lambda=tf.gather(lambdas, info['group'])),
      seed=tf.random.experimental.stateless_fold_in(schedule['key'],
                                                    info['client_id']))


def build_round_parts(spec: models.ModelSpec, aggregator_state_type,
                      settings: ClientSettings) -> RoundParts:
  """The round as computations for a runtime that splits a round its own way
  (`distributed`): the same client update as the learning process's, with
  the personal step in the same pass."""
  settings.validate()
  weights_type = templates.weights_type(spec.shapes)
  state_type = tff.types.to_type(
      collections.OrderedDict(
          global_weights=weights_type,
          round_num=np.int32,
          aggregator=aggregator_state_type))

  @tff.tensorflow.computation(state_type)
  def server_message(state):
    message = _schedule(settings, state['round_num'])
    message['weights'] = state['global_weights']
    return message

  @tff.tensorflow.computation(templates.dataset_type(spec), weights_type,
                              CLIENT_INFO_TYPE,
                              server_message.type_signature.result)
  def client_fn(dataset, personal, info, message):
    out = _client_update(spec, settings, message['weights'], personal,
                         _Client(dataset, info), message, train_global=True,
                         train_personal=settings.ditto)
    return collections.OrderedDict(delta=out.delta,
                                   personal=out.personal_weights)

  @tff.tensorflow.computation(state_type, weights_type, aggregator_state_type)
  def server_apply(state, delta, aggregator_state):
    return collections.OrderedDict(
        global_weights=[w + d for w, d in zip(state['global_weights'], delta)],
        round_num=state['round_num'] + 1,
        aggregator=aggregator_state)

  return RoundParts(state_type, server_message, client_fn, server_apply)


def build_client_work(spec: models.ModelSpec, settings: ClientSettings
                      ) -> tff.learning.templates.ClientWorkProcess:
  """Algorithm 2's ClientUpdate as TFF client work: the update is Delta, its
  weight the client's group index; the state is the round number.

  Measurements: 'train', the loss and accuracy of the round's global model
  on the training examples of the cohort's clients of `settings.
  report_groups` (the non-private groups; a private group's clients' are
  left out, as nothing accounts for them), summed then divided; empty when
  every group is private."""
  settings.validate()
  model_type = templates.model_weights_type(spec)
  data_type = client_data_type(spec)

  @tff.tensorflow.computation(np.int32)
  def schedule(round_num):
    return _schedule(settings, round_num)

  @tff.tensorflow.computation(model_type, data_type,
                              schedule.type_signature.result)
  def work(weights, client, message):
    client = _split(client)
    # theta^t's steps only: Ditto's personal models are the clients' state,
    # stepped by `build_ditto_step` beside the round, so a personal step
    # here would be thrown away (it cost every client a second pass).
    out = _client_update(spec, settings, weights.trainable, weights.trainable,
                         client, message, train_global=True,
                         train_personal=False)
    return tff.learning.templates.ClientResult(
        update=out.delta, update_weight=client.info['group'])

  @tff.tensorflow.computation(model_type, data_type)
  def report(weights, client):
    data, info = _split(client)
    groups = tf.constant(settings.report_groups, tf.int32)
    return tf.cond(
        tf.reduce_any(tf.equal(info['group'], groups)),
        lambda: data.reduce(models.no_metric_sums(), lambda sums, batch: (
            tf.nest.map_structure(tf.add, sums, models.metric_sums(
                spec, weights.trainable, batch['x'], batch['y'])))),
        models.no_metric_sums)

  return templates.build_round_client_work(
      model_type, data_type, schedule, work,
      report=report if settings.report_groups else None)


def compose_fedhdp_process(spec: models.ModelSpec,
                           initial_weights: Sequence[np.ndarray],
                           aggregator: hdp_factory.HeterogeneousDPFactory,
                           settings: ClientSettings,
                           privacy: round_privacy.RoundPrivacy
                           ) -> templates.PrivateLearningProcess:
  """The learning process of `aggregator`'s groups (what the driver and
  `build_fedhdp_process` both run). `privacy` must describe the aggregator's
  noise and the run's sampling; `build_fedhdp_process` derives it."""
  if not isinstance(aggregator, hdp_factory.HeterogeneousDPFactory):
    raise TypeError('aggregator must be a tff_hdp.fedhdp.hdp_factory.'
                    'HeterogeneousDPFactory, got '
                    f'{type(aggregator).__name__}')
  return templates.compose_private_process(
      spec, initial_weights, build_client_work(spec, settings), aggregator,
      privacy, client_hint=CLIENT_HINT)


# How `next` takes a client (said when it is given another dataset).
CLIENT_HINT = ('tff_hdp.fedhdp.client_element(x, y, group=..., client_id=..., '
               'batch_size=...)')


def build_ditto_step(spec: models.ModelSpec,
                     process: tff.learning.templates.LearningProcess,
                     settings: ClientSettings) -> 'DittoStep':
  """Ditto's personal step of a round, beside `process`.

  (state@SERVER, clients@CLIENTS, personal@CLIENTS) -> personal@CLIENTS:
  each client's theta_j after E epochs of Ditto's step towards theta^t (the
  state's global model), before `process.next(state, clients)` runs the
  round's global steps on the same batches. On an empty cohort, the
  personal models are returned unchanged (`DittoStep`).
  """
  settings.validate()
  state_type = process.initialize.type_signature.result.member
  model_type = templates.model_weights_type(spec)
  data_type = client_data_type(spec)
  weights_type = templates.weights_type(spec.shapes)

  @tff.tensorflow.computation(state_type)
  def message(state):
    out = _schedule(settings, state.client_work)
    out['weights'] = state.global_model_weights
    return out

  @tff.tensorflow.computation(data_type, weights_type,
                              message.type_signature.result)
  def personal_step(client, personal, message):
    return _client_update(spec, settings, message['weights'].trainable,
                          personal, _split(client), message,
                          train_global=False,
                          train_personal=settings.ditto).personal_weights

  @tff.federated_computation(tff.FederatedType(state_type, tff.SERVER),
                             tff.FederatedType(data_type, tff.CLIENTS),
                             tff.FederatedType(weights_type, tff.CLIENTS))
  def ditto_step(state, clients, personal):
    broadcast = tff.federated_broadcast(tff.federated_map(message, state))
    return tff.federated_map(personal_step, (clients, personal, broadcast))

  del model_type
  return DittoStep(ditto_step)


class DittoStep:
  """`build_ditto_step`'s computation, a no-op on an empty cohort.

  Called as the computation (its `type_signature` is the computation's),
  it returns `personal` unchanged when `clients` is empty, as `next` takes
  an empty cohort: TFF cannot run a CLIENTS-placed value without clients.
  """

  def __init__(self, computation: tff.Computation):
    self._computation = computation

  @property
  def type_signature(self) -> tff.FunctionType:
    return self._computation.type_signature

  def __call__(self, state, clients, personal):
    if not len(clients):
      return list(personal)
    return self._computation(state, clients, personal)


def fedhdp_privacy(groups: Sequence[privacy_groups.PrivacyGroup],
                   sampling_rate: float, *, delta: float,
                   accountant: str = 'rdp',
                   mechanism_seed: Optional[int] = None
                   ) -> round_privacy.RoundPrivacy:
  """Client-level accounting of the groups that are queried: each private
  group's round is a Poisson-subsampled Gaussian mechanism of rate q and its
  effective multiplier z_eff (value and clip-count noise together); a bound
  unless the noise is reproducible from `mechanism_seed`."""
  excluded = config_lib.excluded_groups(groups)
  return round_privacy.RoundPrivacy(
      level='client-level',
      mechanisms={g.name: (sampling_rate, g.effective_noise_multiplier, 1)
                  for i, g in enumerate(groups)
                  if g.is_private and i not in excluded},
      delta=delta, accountant=accountant,
      **mechanism_key.ledger_terms(mechanism_seed))


def client_settings(config: config_lib.FedHdpConfig,
                    groups: Sequence[privacy_groups.PrivacyGroup]
                    ) -> ClientSettings:
  """What every client of `config`'s run does (Algorithm 2's ClientUpdate)."""
  return ClientSettings(
      ditto_lambdas=tuple(g.ditto_lambda for g in groups),
      local_epochs=config.local_epochs, batch_size=config.batch_size,
      learning_rate=config.learning_rate,
      personal_learning_rate=config.personal_learning_rate,
      lr_decay_factor=config.lr_decay_factor,
      lr_decay_rounds=config.lr_decay_rounds, ditto=config.ditto,
      seed=config.seed,
      report_groups=tuple(i for i, g in enumerate(groups)
                          if g.noise_multiplier is None))


def aggregator_factory(config: config_lib.FedHdpConfig,
                       setup: config_lib.Setup, *,
                       groups: Optional[Sequence[privacy_groups.PrivacyGroup]]
                       = None,
                       key_in_state: Optional[bool] = None
                       ) -> hdp_factory.HeterogeneousDPFactory:
  """The aggregation of `config`'s run: `setup`'s groups (or `groups`, an
  audit's planted fault; the accountant keeps the configured ones), clip,
  denominators and noise. `key_in_state` as the factory's (the drivers keep
  their run's key in the state)."""
  return hdp_factory.HeterogeneousDPFactory(
      setup.groups if groups is None else groups,
      initial_clip=config.initial_clip,
      target_quantile=config.target_quantile,
      clip_learning_rate=config.clip_learning_rate,
      expected_counts=setup.expected_counts,
      clipped_count_stddev=setup.clipped_count_stddev,
      mechanism_seed=config.mechanism_seed, key_in_state=key_in_state)


class FedHdpProcess(templates.PoissonProcess):
  """What `build_fedhdp_process` returns: a `PrivateLearningProcess` with
  its clients' groups and Ditto's personal step.

  Attributes:
    config: The `FedHdpConfig` it runs: the given one with the clients'
      levels (`privacy_levels`), the algorithm's name and settings and the
      cohort qN they imply.
    groups: The privacy groups (`privacy_groups.PrivacyGroup`), in the order
      of the group indices.
    client_groups: Per client id, its group's index (int32 [N]).
    ditto_step: Ditto's personal step of a round, beside `next`
      (`build_ditto_step`).
    batch_size: B, the clients' batch size (`config.batch_size`).
    sampling_rate: q, each client's probability to take part in a round.
  """

  def __init__(self, *args, config: config_lib.FedHdpConfig,
               setup: config_lib.Setup, ditto_step: 'DittoStep', **kwargs):
    """`args` and `kwargs` as `PrivateLearningProcess`'s; `setup` the
    config's groups and the clients' assignment (`config.resolve`)."""
    super().__init__(*args, config=config, **kwargs)
    self._setup = setup
    self._ditto_step = ditto_step

  @property
  def groups(self) -> tuple[privacy_groups.PrivacyGroup, ...]:
    return self._setup.groups

  @property
  def client_groups(self) -> np.ndarray:
    return self._setup.client_groups

  @property
  def ditto_step(self) -> 'DittoStep':
    return self._ditto_step

  def clients_from(self, datasets) -> list[tf.data.Dataset]:
    """`next`'s clients from {client index: a tf.data dataset of (x, y)
    examples or batches, as TFF's tutorials make them}: each client's
    examples in their order, batched by the config's B, in its group (a
    client of a group never queried, r = 0, or without examples is left
    out, as `build_data_source` leaves it)."""
    excluded = config_lib.excluded_groups(self.groups)
    return [client_element(x, y, group=self.client_groups[c], client_id=c,
                           batch_size=self.batch_size)
            for c, (x, y) in client_data.cohort_arrays(
                datasets, len(self.client_groups)).items()
            if self.client_groups[c] not in excluded and len(y)]


def build_fedhdp_process(
    model,
    preferences: preferences_lib.Preferences,
    *,
    algorithm: Optional[algorithm_lib.Algorithm] = None,
    model_aggregator: Optional[hdp_factory.HeterogeneousDPFactory] = None,
    config: Optional[config_lib.FedHdpConfig] = None,
) -> FedHdpProcess:
  """FedHDP (or a baseline of paper 001) as a `LearningProcess`.

  Every hyperparameter is `config`'s, a `tff_hdp.fedhdp.FedHdpConfig` (its
  defaults: paper 001's Table 7, non-IID MNIST): the algorithm (unless
  `algorithm` gives it as an object), the levels' noise multipliers z_eff
  (`noise_multiplier`, one per level), the ratios r, the sampling rate q,
  Ditto's lambdas, the client update (E, B, eta, eta_p, their decay), adaptive
  clipping (S^0, eta_b, kappa, z_b), delta and the accountant, the public
  `seed` (theta^0 of the package's models, dropout) and `mechanism_seed`
  (None: fresh secret noise every round; an integer: reproducible, and epsilon
  then not a guarantee), and `rounds`, the horizon: each private group's
  budget is its epsilon after that many rounds (`process.privacy.budgets`,
  `process.privacy.calibrated_rounds`), and `next` refuses a round past it.
  The fields of only a driver's run (the model's name, the data's, the
  backend, evaluation, opt-out draws) are not used. Rounds must draw each
  client independently with probability q (Poisson; what `build_data_source`
  does): each private group's mean divides by its expected count q N_i, so
  `process.epsilon(state)` is each private group's client-level epsilon, a
  bound.

  Args:
    model: A `tff.learning.models.FunctionalModel` or a
      `tff_hdp.models.ModelSpec`; theta^0 is its initial weights (`init(seed)`).
    preferences: A `tff_hdp.privacy.Preferences` with `levels`: per client,
      in the order of the ids the process will see (`client_id` 0, 1, ...),
      its private level (0 = the strictest, an index into
      `config.noise_multiplier`) or None if it opts out of privacy. An
      epsilon per client is refused: FedHDP's levels are noise multipliers.
    algorithm: Paper 001's algorithm as an object with its settings (e.g.
      `tff_hdp.fedhdp.algorithms.FedHdp(ratio=0.01)`, or an
      `tff_hdp.fedhdp.algorithm.Algorithm` of yours, registered or not);
      by default the registered one `config.algorithm` names, with the
      config's r. The process's `config.algorithm` is then its name.
    model_aggregator: The mechanism as an aggregation factory, as TFF's
      builders take one: a `tff_hdp.fedhdp.hdp_factory.HeterogeneousDPFactory`
      (or a subclass of yours), default the one `config` describes
      (`aggregator_factory`). Its groups must be the config's (the same
      names and privacy, so that the clients' levels index them) with the
      expected counts q N_i; epsilon is accounted from its groups' noise and
      its clip-count noise, what runs (`accounted_groups`).
    config: The hyperparameters (default `FedHdpConfig()`).

  Returns:
    A `FedHdpProcess` (a `tff_hdp.templates.PrivateLearningProcess`) whose
    `next` takes per client `client_element(x, y, group=..., client_id=...,
    batch_size=...)`; `process.client_groups` gives each client's group,
    `process.ditto_step` the personal step and `process.groups` the privacy
    groups.

  Raises:
    ValueError: One line naming the field that is out of range.
    TypeError: If `model` is neither kind of model, `preferences` not a
      `Preferences`, `algorithm` not an `Algorithm`, `config` not a
      `FedHdpConfig`, or `model_aggregator` not a `HeterogeneousDPFactory`.
  """
  spec = models.as_model_spec(model)
  config = _checked_config(config, preferences, algorithm)
  setup = config_lib.resolve(config, algorithm=algorithm)
  settings = client_settings(config, setup.groups)
  factory, setup = _mechanism(config, setup, model_aggregator)
  process = compose_fedhdp_process(
      spec, spec.init(config.seed), factory, settings,
      fedhdp_privacy(setup.groups, config.sampling_rate, delta=config.delta,
                     accountant=config.accountant,
                     mechanism_seed=config.mechanism_seed
                     ).budgeted_for(config.rounds))
  return FedHdpProcess.wrapping(
      process, config=config, setup=setup,
      ditto_step=build_ditto_step(spec, process, settings))


def _mechanism(config: config_lib.FedHdpConfig, setup: config_lib.Setup,
               model_aggregator: Optional[hdp_factory.HeterogeneousDPFactory]
               ) -> tuple[hdp_factory.HeterogeneousDPFactory, config_lib.Setup]:
  """The aggregator that runs (`model_aggregator`, or by default the one
  `config` describes) and `setup` with the groups it is accounted by
  (`accounted_groups` of a caller's)."""
  if model_aggregator is None:
    return aggregator_factory(config, setup), setup
  groups = accounted_groups(model_aggregator, setup, config.mechanism_seed)
  return model_aggregator, dataclasses.replace(setup, groups=groups)


def accounted_groups(factory, setup: config_lib.Setup,
                     mechanism_seed: Optional[int]
                     ) -> tuple[privacy_groups.PrivacyGroup, ...]:
  """The groups of `factory`, a caller's mechanism, each private one with
  the z_eff of the noise the factory adds (its value noise and clip-count
  noise), which the accountant then uses; or a one-line error where its
  epsilon could not be a bound: another type, another mechanism seed than
  the config's `mechanism_seed` (the accounting says from it whether the
  noise is secret), other groups than the config's (names and privacy: the
  clients' levels index them), other denominators than the expected counts
  q N_i, or a private group without noise."""
  if not isinstance(factory, hdp_factory.HeterogeneousDPFactory):
    raise TypeError('model_aggregator must be a tff_hdp.fedhdp.hdp_factory.'
                    f'HeterogeneousDPFactory, got {type(factory).__name__}')
  if factory.mechanism_seed != mechanism_seed:
    raise ValueError(f'model_aggregator\'s mechanism_seed '
                     f'({factory.mechanism_seed}) must be the config\'s '
                     f'({mechanism_seed}): epsilon says from it whether the '
                     'noise is secret')
  mine = [(g.name, g.is_private) for g in factory.groups]
  theirs = [(g.name, g.is_private) for g in setup.groups]
  if mine != theirs:
    raise ValueError(f'model_aggregator must have the config\'s groups '
                     f'(name, private) {theirs}, got {mine}')
  if factory.expected_counts is None or not np.allclose(
      factory.expected_counts, setup.expected_counts, rtol=1e-12, atol=0):
    raise ValueError('model_aggregator must divide by the expected counts q '
                     f'N_i {list(setup.expected_counts)} (what epsilon under '
                     f'Poisson sampling assumes), got {factory.expected_counts}')
  groups = []
  for g in factory.groups:
    if g.is_private:
      z_eff = clip_noise.effective_noise_multiplier(
          g.noise_multiplier, factory.clipped_count_stddev)
      if not z_eff > 0:
        raise ValueError(f'model_aggregator\'s private group {g.name!r} adds no '
                         f'noise (noise_multiplier {g.noise_multiplier}, '
                         f'clipped_count_stddev {factory.clipped_count_stddev})')
      g = dataclasses.replace(g, effective_noise_multiplier=z_eff)
    groups.append(g)
  return tuple(groups)


def _checked_config(config, preferences, algorithm
                    ) -> config_lib.FedHdpConfig:
  """`config` (default `FedHdpConfig()`) with the clients' levels, the
  algorithm object's name and settings and the cohort they imply, or a
  one-line error."""
  preferences = preferences_lib.as_preferences(preferences).checked(
      'FedHDP', ['levels'], honoured=['num_examples'])
  if config is None:
    config = config_lib.FedHdpConfig()
  if not isinstance(config, config_lib.FedHdpConfig):
    raise TypeError('config must be a tff_hdp.fedhdp.FedHdpConfig, got '
                    f'{type(config).__name__}')
  if algorithm is not None:
    config = config_lib.with_algorithm(config, algorithm)
  config = dataclasses.replace(config, privacy_levels=preferences.levels)
  if not config.privacy_levels:
    raise ValueError('preferences.levels must give every client a level or '
                     'None (opt-out)')
  if not (config.poisson_sampling and config.denominators == 'expected'):
    raise ValueError(
        'build_fedhdp_process runs Poisson cohorts with expected denominators '
        '(what build_data_source draws and epsilon bounds); got '
        f'poisson_sampling={config.poisson_sampling}, denominators='
        f'{config.denominators!r}')
  if not 0.0 < config.sampling_rate <= 1.0:
    raise ValueError('sampling_rate must be in (0, 1] (each client\'s '
                     f'probability to take part), got {config.sampling_rate}')
  num_clients = len(config.privacy_levels)
  config = dataclasses.replace(config, clients_per_round=max(
      1, int(round(config.sampling_rate * num_clients))))
  config.validate(num_clients, algorithm)
  _check_levels_sorted(config.noise_multipliers)
  _check_clipped_count_noise(config, algorithm)
  return config


def _check_levels_sorted(noise_multipliers: Sequence[float]) -> None:
  """Refuses (does not sort) levels whose z_eff are not non-increasing:
  level 0 is the strictest, and `privacy_levels` index into the tuple."""
  if list(noise_multipliers) != sorted(noise_multipliers, reverse=True):
    raise ValueError(
        'noise_multiplier must be non-increasing, one z_eff per level from '
        f'level 0, the strictest, on; got {tuple(noise_multipliers)}: it is '
        'refused, not sorted, since privacy_levels index into it')


def _check_clipped_count_noise(config: config_lib.FedHdpConfig,
                               algorithm=None) -> None:
  """Refuses a clip-count noise z_b too small for the levels' z_eff
  (z_eff < 2 z_b, `clip_noise.split_noise_multiplier`), naming the field to
  set."""
  if (not config_lib.run_algorithm(config, algorithm).noised or
      not any(config.noise_multipliers)):
    return
  z_eff = max(config.noise_multipliers)
  given = config.clipped_count_stddev
  z_b = (clip_noise.default_clipped_count_stddev(config.clients_per_round)
         if given is None else given)
  if z_eff < 2 * z_b:
    return
  source = (f'clipped_count_stddev=None gives z_b = 0.05 x round(qN) = 0.05 '
            f'x {config.clients_per_round} = {z_b:g}, which' if given is None
            else f'clipped_count_stddev={z_b:g}')
  raise ValueError(
      f'{source} is too small for noise_multiplier {z_eff:g} (z_eff must be '
      f'< 2 z_b): set FedHdpConfig.clipped_count_stddev > {z_eff / 2:g}, '
      f'e.g. {z_eff:g}, or lower noise_multiplier')


def build_data_source(process: FedHdpProcess,
                      data, *, mechanism_seed: Optional[int] = None
                      ) -> client_data.PoissonClientSource:
  """The clients of `build_fedhdp_process`'s rounds, for TFF programs.

  `data` is a `FederatedData` or a `ClientData` (clients in `client_ids`
  order, the order of the preferences' levels). Each round draws a Poisson cohort
  at the process's rate, without the clients of groups never queried (r = 0);
  each client's examples are shuffled by the round's generator and batched,
  as the driver does. The cohorts come from a secret key each iterator
  draws (or from `mechanism_seed`, for reproduction only: then anyone who
  knows it knows who took part, and epsilon is not a guarantee).
  """
  data = client_data.as_federated_data(data)
  if data.num_clients != len(process.client_groups):
    raise ValueError(f'the data has {data.num_clients} clients, the process '
                     f'{len(process.client_groups)} privacy levels')
  spec_type = process.next.type_signature.parameter[1]
  excluded = config_lib.excluded_groups(process.groups)

  def make_cohort(cohort, rng):
    clients = []
    # As the driver: a group never queried (FedHDP at r = 0) is never sent
    # the model, so its clients neither train nor enter the clip count.
    for c in cohort:
      x, y = data.train[c]
      # A client without examples adds nothing to any sum: left out.
      if process.client_groups[c] in excluded or not len(y):
        continue
      order = rng.permutation(len(y))
      clients.append(client_element(
          x[order], y[order], group=process.client_groups[c], client_id=c,
          batch_size=process.batch_size))
    return clients

  return client_data.PoissonClientSource(data.num_clients,
                                         process.sampling_rate, make_cohort,
                                         spec_type,
                                         mechanism_seed=mechanism_seed)
