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

    process = build_robust_hdp_process(model, Preferences(epsilons=...,
                                       batch_sizes=..., num_examples=...))
    output = process.next(state, clients)   # any clients, `client_element`s
    process.epsilon(output.state)           # each client's epsilon so far

Composed from TFF's templates: a broadcast of theta^e, the client work (each
client runs DP-SGD, `dp_sgd.client_update`, from the broadcast model with its
own batch size b_i and noise multiplier z_i, both in its CLIENTS-placed info:
a client knows its own privacy parameters, the server never sees them), the
rule's aggregation (`aggregator.NoiseAwareAggregationFactory`; a client's
update weight is its row index) and theta^{e+1} = theta^e + Delta^e. A
client's DP-SGD key is derived from (the mechanism key, round, client
index), so every rule of one comparison (one key) trains on the same
batches and noise. The key is the clients' secret: fresh every round unless
a `mechanism_seed` makes the run reproducible.

A client's data is one element, all its N_i examples (checked); DP-SGD
samples its batches itself (Poisson by default). Any subset of the clients
makes a round; each client is charged for the DP-SGD steps of the rounds it
took part in (`participation`), and `process.next` refuses a round that
would take a client past its epsilon_i. `build_robust_hdp_process` returns
a `RobustHdpProcess`, which declares the clients' calibration. In depth
(keys, sizes, cohorts, the accounting): docs/robust_hdp.md (The learning
process).

`tff_backend.TffRound` (the driver's TFF backend) runs it with the driver's
state dict, `direct_backend.DirectRound` is the same round in plain
TensorFlow (`executors.build_executor` picks one).
"""

import collections
import dataclasses
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import models
from tff_hdp import templates
from tff_hdp.data import client_data
from tff_hdp.privacy import mechanism_key
from tff_hdp.privacy import preferences as preferences_lib
from tff_hdp.robust_hdp import aggregation_rules
from tff_hdp.robust_hdp import aggregator as aggregator_lib
from tff_hdp.robust_hdp import config as config_lib
from tff_hdp.robust_hdp import dp_sgd
from tff_hdp.robust_hdp import privacy_preferences
from tff_hdp.robust_hdp import rule as rule_lib
from tff_hdp.robust_hdp import rule_registry
import tff_hdp.robust_hdp.rules  # pylint: disable=unused-import  # Registered.
from tff_hdp.privacy import round_privacy

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


def round_key(key: tf.Tensor, round_num: tf.Tensor) -> tf.Tensor:
  """The clients' key of round `round_num` under the mechanism key."""
  return mechanism_key.fold_in(key, round_num)


def build_client_work(spec: models.ModelSpec, *,
                      settings: dp_sgd.DpSgdSettings, private: bool = True,
                      mechanism_seed: Optional[int] = None,
                      key_in_state: Optional[bool] = None,
                      num_examples: Optional[Sequence[int]] = None,
                      report_clients: Sequence[int] = ()
                      ) -> tff.learning.templates.ClientWorkProcess:
  """Each client's DP-SGD round as TFF client work: the update is Delta_i,
  its weight the client's row index; the state is the round number and,
  with `key_in_state` (default: with a `mechanism_seed`), the clients'
  mechanism key, from which each round's keys derive. Without it every
  round's key is fresh (`mechanism_key.key_tensor`) and the state holds no
  secret; the drivers keep their run's secret key in the state. With
  `num_examples` (the declared N_i, row i's), a client whose data holds
  another number of examples fails the round (`checked_size`): its
  sampling rate b_i / N_i, so its epsilon, was calibrated for N_i.

  Measurements: 'train', the loss and accuracy of the round's global model
  on the training examples of the cohort's clients of `report_clients` (the
  non-private ones; a private client's are left out, as its DP-SGD does not
  cover them), summed then divided; empty when no client may report."""
  dp_sgd.check_settings(settings)
  model_type = templates.model_weights_type(spec)
  data_type = client_data_type(spec)
  if key_in_state is None:
    key_in_state = mechanism_seed is not None

  if key_in_state:
    @tff.tensorflow.computation(collections.OrderedDict(
        round_num=np.int32, key=(np.int64, mechanism_key.KEY_SHAPE)))
    def message(state):
      return round_key(state['key'], state['round_num'])
  else:
    @tff.tensorflow.computation(np.int32)
    def message(round_num):
      del round_num  # Every round's key is fresh.
      return mechanism_key.key_tensor(None)

  @tff.tensorflow.computation(model_type, data_type,
                              message.type_signature.result)
  def work(weights, client, key):
    info = client.get_single_element()
    x, y = info['x'], info['y']
    if num_examples is not None:
      x = checked_size(x, info['index'], num_examples)
    delta = client_step(spec, weights.trainable, x, y, info,
                        client_key(key, info['index']), settings=settings,
                        private=private)
    return tff.learning.templates.ClientResult(update=delta,
                                               update_weight=info['index'])

  @tff.tensorflow.computation(model_type, data_type)
  def report(weights, client):
    info = client.get_single_element()
    reporting = tf.constant(list(report_clients), tf.int32)
    return tf.cond(
        tf.reduce_any(tf.equal(info['index'], reporting)),
        lambda: models.metric_sums(spec, weights.trainable, info['x'],
                                   info['y']),
        models.no_metric_sums)

  return templates.build_round_client_work(
      model_type, data_type, message, work, keyed=key_in_state,
      mechanism_seed=mechanism_seed,
      report=report if report_clients else None)


# The first words of the message of a client whose data is not its declared
# size (`checked_size`).
SIZE_ERROR = 'Robust-HDP: client'


def checked_size(x: tf.Tensor, index: tf.Tensor,
                 num_examples: Sequence[int]) -> tf.Tensor:
  """`x` once asserted to hold client `index`'s declared N_i examples."""
  declared = tf.gather(tf.constant(list(num_examples), tf.int32), index)
  actual = tf.shape(x)[0]
  check = tf.debugging.Assert(tf.equal(actual, declared), [
      SIZE_ERROR, index, 'was declared num_examples', declared,
      'but its data holds', actual, 'examples (N_i sets its sampling rate '
      'b_i / N_i, so its epsilon)'])
  with tf.control_dependencies([check]):
    return tf.identity(x)


def compose_robust_hdp_process(
    spec: models.ModelSpec, initial_weights,
    client_work: tff.learning.templates.ClientWorkProcess,
    aggregator: aggregator_lib.NoiseAwareAggregationFactory, *,
    privacy: Optional[round_privacy.RoundPrivacy] = None
) -> templates.PrivateLearningProcess:
  """The learning process of one rule, from its clients' DP-SGD
  (`build_client_work`) and the rule's aggregation, as TFF's
  `compose_learning_process` takes the client work: what the driver's TFF
  backend and `build_robust_hdp_process` both run. Each client is charged
  for the rounds it takes part in (the aggregator's `participation`
  counts)."""
  if not isinstance(aggregator, aggregator_lib.NoiseAwareAggregationFactory):
    raise TypeError('aggregator must be a tff_hdp.robust_hdp.aggregator.'
                    'NoiseAwareAggregationFactory, got '
                    f'{type(aggregator).__name__}')
  return templates.compose_private_process(
      spec, initial_weights, client_work, aggregator,
      privacy or round_privacy.RoundPrivacy('example-level', {}, delta=1e-5),
      participation=participation, cohort_units=cohort_units,
      assertion_markers=(SIZE_ERROR, aggregator_lib.COHORT_ERROR),
      client_hint='tff_hdp.robust_hdp.client_element(x, y, index=..., '
      'batch_size=..., noise_multiplier=...)')


def participation(state) -> dict[str, int]:
  """Per client ('client_i'), the rounds a process state's client took part
  in (the aggregator's counts)."""
  counts = np.asarray(state.aggregator['participation'])
  return {f'client_{i}': int(c) for i, c in enumerate(counts)}


def cohort_units(clients) -> Optional[set[str]]:
  """The clients ('client_i') of a round's data, from the index in each
  element (`client_element`); None if the data cannot be read here."""
  try:
    # Not `c.map`: a map traces its function for every dataset it makes.
    return {f'client_{int(c.get_single_element()["index"])}'
            for c in clients}
  except (AttributeError, TypeError, ValueError, KeyError,
          tf.errors.OpError):
    return None


def robust_hdp_privacy(clients: Sequence[privacy_preferences.ClientPrivacy],
                       *, local_epochs: int, delta: float,
                       accountant: str = 'rdp', poisson: bool = True,
                       mechanism_seed: Optional[int] = None,
                       rounds: Optional[int] = None
                       ) -> round_privacy.RoundPrivacy:
  """Each private client's example-level accounting: per round, E_i DP-SGD
  steps of rate b_i / N_i and multiplier z_i, on the calibration's orders;
  each client's budget is the epsilon_i it calibrated for `rounds` rounds.
  Fixed-size shuffled batches (poisson=False) are accounted as Poisson, an
  approximation, not a bound; so is a run whose noise and batches are
  reproducible from a published `mechanism_seed`."""
  return round_privacy.RoundPrivacy(
      level='example-level',
      mechanisms={f'client_{i}': (c.sampling_rate, c.noise_multiplier,
                                  dp_sgd.steps_per_round(
                                      c.num_examples, c.batch_size,
                                      local_epochs))
                  for i, c in enumerate(clients)
                  if c.noise_multiplier is not None},
      delta=delta, accountant=accountant, orders=privacy_preferences.ORDERS,
      budgets={f'client_{i}': c.epsilon for i, c in enumerate(clients)
               if c.noise_multiplier is not None},
      calibrated_rounds=rounds, **ledger_terms(poisson, mechanism_seed))


def ledger_terms(poisson: bool, mechanism_seed: Optional[int],
                 clip_only: bool = False) -> dict:
  """`is_bound` and `not_bound_because` of a run's epsilons
  (`mechanism_key.ledger_terms`): fixed-size batches are only approximated
  by the Poisson accounting, a published mechanism seed regenerates the
  noise, and a clip-only run (`RobustHdpConfig.clip_only`) adds none."""
  caveats = [c for c, applies in (
      ('clip only: no noise was added; the epsilons are those of the '
       'calibrated mechanism, which this run did not run', clip_only),
      ('fixed-size shuffled batches, accounted as Poisson (an '
       'approximation)', not poisson)) if applies]
  return mechanism_key.ledger_terms(mechanism_seed,
                                    '; '.join(caveats) or None)


def run_rule(config: config_lib.RobustHdpConfig,
             rule: Optional[rule_lib.Rule] = None) -> rule_lib.Rule:
  """The rule a run of `config` aggregates with: `rule` if given (an object,
  registered or not, with its own settings), else the registered rule that
  `config.algorithm` names, with the settings of `config` it reads."""
  if rule is not None:
    if not isinstance(rule, rule_lib.Rule):
      raise TypeError('rule must be a tff_hdp.robust_hdp.rule.Rule, got '
                      f'{type(rule).__name__}')
    return rule
  return rule_registry.get(config.algorithm).configured(config)


def client_privacy(config: config_lib.RobustHdpConfig, num_examples,
                   rule: Optional[rule_lib.Rule] = None
                   ) -> list[privacy_preferences.ClientPrivacy]:
  """Each client's calibrated DP-SGD parameters under the run's rule
  (`run_rule`; the epsilon it calibrates to: `Rule.calibration_epsilons`)."""
  return privacy_preferences.calibrate(
      run_rule(config, rule).calibration_epsilons(config.epsilons),
      config.batch_sizes, num_examples,
      rounds=config.calibration_rounds or config.rounds,
      local_epochs=config.local_epochs, delta=config.delta,
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


def build_aggregator(config: config_lib.RobustHdpConfig, clients, variances,
                     rule: Optional[rule_lib.Rule] = None
                    ) -> aggregator_lib.NoiseAwareAggregationFactory:
  """The run's rule's factory (`run_rule`), told only what that rule's
  server knows (`Rule.told` of everything it could be told)."""
  rule = run_rule(config, rule)
  side = rule_lib.SideInformation(
      epsilons=tuple(config.epsilons),
      num_examples=tuple(c.num_examples for c in clients),
      variances=tuple(variances))
  return aggregator_lib.NoiseAwareAggregationFactory(
      rule, len(clients), told=rule.told(side),
      first_round_only=config.first_round_only)


def dp_sgd_settings(config: config_lib.RobustHdpConfig
                    ) -> dp_sgd.DpSgdSettings:
  """The clients' DP-SGD settings of `config`'s run."""
  return dp_sgd.DpSgdSettings(clip=config.clip,
                              learning_rate=config.learning_rate,
                              local_epochs=config.local_epochs,
                              poisson=config.poisson)


class RobustHdpProcess(templates.PrivateLearningProcess):
  """What `build_robust_hdp_process` returns: a `PrivateLearningProcess`
  with its clients' calibration.

  Attributes:
    config: The `RobustHdpConfig` it runs.
    clients: Per client (row i of the epsilons), its calibration: z_i, b_i,
      N_i and its DP-SGD steps (`privacy_preferences.ClientPrivacy`).
  """

  def __init__(self, *args, config: config_lib.RobustHdpConfig,
               clients: Sequence[privacy_preferences.ClientPrivacy],
               **kwargs):
    """`args` and `kwargs` as `PrivateLearningProcess`'s."""
    super().__init__(*args, **kwargs)
    self._config = config
    self._clients = list(clients)

  @property
  def config(self) -> config_lib.RobustHdpConfig:
    return self._config

  @property
  def clients(self) -> list[privacy_preferences.ClientPrivacy]:
    return self._clients

  def clients_from(self, datasets) -> list[tf.data.Dataset]:
    """`next`'s clients from {client index: a tf.data dataset of (x, y)
    examples or batches, as TFF's tutorials make them}: each client with
    its own b_i and z_i."""
    return [client_element(x, y, index=i,
                           batch_size=self.clients[i].batch_size,
                           noise_multiplier=self.clients[i].noise_multiplier)
            for i, (x, y) in client_data.cohort_arrays(
                datasets, len(self.clients)).items()]


def build_robust_hdp_process(
    model, preferences: preferences_lib.Preferences, *,
    rule: Optional[rule_lib.Rule] = None,
    config: Optional[config_lib.RobustHdpConfig] = None) -> RobustHdpProcess:
  """Robust-HDP (or another rule) as a `LearningProcess`.

  Every hyperparameter is `config`'s, a `tff_hdp.robust_hdp.RobustHdpConfig`
  (its defaults: paper 003's code's): the rule (`algorithm`, unless `rule`
  gives it as an object; by default Robust-HDP), the rounds E the epsilons
  are calibrated for, DP-SGD's K, eta_l and c, Poisson batches, delta and the
  accountant, robust PCA's solver, the public `seed` (theta^0 of the
  package's models) and `mechanism_seed` (None: every round's DP-SGD keys
  are fresh and secret; an integer: reproducible, and epsilon then not a
  guarantee). The fields of a driver's run (the model's name, evaluation,
  the backend) are not used. Every client calibrates its own DP-SGD noise
  z_i so that E rounds spend exactly epsilon_i
  (`privacy_preferences.calibrate`); the server's rule sees only the updates
  (Robust-HDP) or the side information the baseline is allowed.

  Args:
    model: A `tff.learning.models.FunctionalModel` or a
      `tff_hdp.models.ModelSpec`; theta^0 is its initial weights.
    preferences: A `tff_hdp.privacy.Preferences` with, per client (row i
      of the process), its `epsilons` epsilon_i (None: a non-private
      client), its DP-SGD `batch_sizes` b_i and its `num_examples` N_i (its
      dataset's size). Levels are refused: Robust-HDP's clients choose an
      epsilon.
    rule: The aggregation rule as an object, with its own settings (e.g.
      `tff_hdp.robust_hdp.rules.pfa.Pfa(rank=3)`, or a `Rule` of yours,
      registered or not), as TFF's builders take `model_aggregator=`; by
      default the registered rule `config.algorithm` names. The process's
      `config.algorithm` is then the rule's name.
    config: The hyperparameters (default `RobustHdpConfig()`); the process's
      config holds the preferences' epsilons and batch sizes.

  Returns:
    A `RobustHdpProcess` (a `tff_hdp.templates.PrivateLearningProcess`)
    whose `next` takes any subset of the clients, each as
    `client_element(x, y, index=i, batch_size=b_i, noise_multiplier=z_i)`,
    and refuses a round past a client's epsilon_i; `process.clients` holds
    each client's calibration (`privacy_preferences.ClientPrivacy`).

  Raises:
    ValueError: One line naming the field that is out of range.
    TypeError: If `model` is neither kind of model, or `config` is not a
      `RobustHdpConfig`.
  """
  spec = models.as_model_spec(model)
  preferences = preferences_lib.as_preferences(preferences).checked(
      'Robust-HDP', ['epsilons', 'batch_sizes', 'num_examples'])
  config = config_lib.RobustHdpConfig() if config is None else config
  if not isinstance(config, config_lib.RobustHdpConfig):
    raise TypeError('config must be a tff_hdp.robust_hdp.RobustHdpConfig, '
                    f'got {type(config).__name__}')
  rule = run_rule(config, rule)
  config = dataclasses.replace(config, algorithm=rule.name,
                               epsilons=preferences.epsilons,
                               batch_sizes=preferences.batch_sizes)
  config.validate(rule)
  clients = client_privacy(config, list(preferences.num_examples), rule)
  factory = build_aggregator(
      config, clients, true_variances(config, clients, spec.num_parameters),
      rule)
  process = compose_robust_hdp_process(
      spec, spec.init(config.seed),
      build_client_work(spec, settings=dp_sgd_settings(config),
                        private=rule.private,
                        mechanism_seed=config.mechanism_seed,
                        num_examples=[c.num_examples for c in clients],
                        report_clients=[i for i, c in enumerate(clients)
                                        if c.noise_multiplier is None]),
      factory,
      privacy=robust_hdp_privacy(clients, local_epochs=config.local_epochs,
                                 delta=config.delta,
                                 accountant=config.accountant,
                                 poisson=config.poisson,
                                 mechanism_seed=config.mechanism_seed,
                                 rounds=config.rounds))
  return RobustHdpProcess.wrapping(process, config=config, clients=clients)


def build_data_source(process: RobustHdpProcess, data
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


def client_step(spec: models.ModelSpec, weights, x, y, info, key, *,
                settings: dp_sgd.DpSgdSettings, private: bool):
  """One client's Delta_i under its DP-SGD key (`client_key`)."""
  return dp_sgd.client_update(
      spec, weights, x, y,
      batch_size=info['batch_size'],
      noise_multiplier=info['noise_multiplier'] if private else None,
      key=key, settings=settings)


def client_key(round_key: tf.Tensor, index) -> tf.Tensor:
  """Client `index`'s DP-SGD key of the round of `round_key`."""
  return mechanism_key.fold_in(round_key, index)
