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
"""The Robust-HDP driver: one run of one aggregation rule, one results record.

`train(config, data)` calibrates every client's noise multiplier from its
target epsilon (`privacy_preferences`), builds the rule's aggregator and the
TFF process, runs the rounds (all n clients every round, as paper 003) and
returns a record with the configuration, the clients' privacy (target and
achieved epsilon, z_i, b_i, N_i), the per-round weights, Robust-HDP's noise
estimates sigma^_i^2, the true sigma_i^2 of eq. (7), the aggregate's noise
power (Table 2) and the accuracy: the mean of the clients' local test
accuracies of the global model (the authors' metric).

Every rule of one comparison uses the same data, batch sizes and initial
model (from the public `seed`); with the same mechanism key (a reproducible
`mechanism_seed`) also the same DP-SGD batches and noise (keys derived from
(key, round, client)), so results differ by aggregation only (and by the
noise of a rule whose clients calibrate to other epsilons,
`Rule.calibration_epsilons`). By default each run draws a secret key
(`tff_hdp.privacy.mechanism_key`): the untrusted server, which knows the
configuration, cannot regenerate any client's noise.
"""

import dataclasses
import functools
import math
from typing import Any, Optional, Sequence

import numpy as np
import tensorflow as tf

from tff_hdp import checkpoint
from tff_hdp import models
from tff_hdp import round_executor
from tff_hdp import round_loop
from tff_hdp import templates
from tff_hdp.data import client_data as client_data_lib
from tff_hdp.data import federated_data
from tff_hdp.privacy import mechanism_key
from tff_hdp.privacy import privacy_ledger
from tff_hdp.robust_hdp import aggregation_rules
from tff_hdp.robust_hdp import config as config_lib
from tff_hdp.robust_hdp import privacy_preferences
from tff_hdp.robust_hdp import direct_backend
from tff_hdp.robust_hdp import executors
from tff_hdp.robust_hdp import process as process_lib
from tff_hdp.robust_hdp import rule_registry
import tff_hdp.robust_hdp.rules  # pylint: disable=unused-import  # Registered.
from tff_hdp.privacy import round_privacy


def local_accuracies(spec: models.ModelSpec, weights,
                     data: federated_data.FederatedData) -> list[float]:
  """The global model's accuracy (%) on each client's local test data."""
  tensors = [tf.constant(w) for w in weights]
  return [100.0 * models.accuracy(spec, tensors, x, y) for x, y in data.test]


class RobustHdpRounds(round_loop.System):
  """Paper 003's rounds for the shared loop (`round_loop.run`): every client
  runs DP-SGD every round and the rule aggregates; each round records the
  rule's weights, the estimated sigma^_i^2 and the noise power of eq. (7);
  each private client's ledger spends its round of DP-SGD steps; evaluation
  is the clients' mean local accuracy."""

  def __init__(self, experiment: 'Experiment'):
    self._pieces = experiment

  def start(self, key):
    return self._pieces.executor.initialize(key)

  def run_round(self, state, round_num):
    pieces = self._pieces
    # Every client every round (paper 003): the same cohort each round.
    output = pieces.executor.next(state, pieces.cohort)
    state, measurements = output.state, output.measurements
    weights = np.asarray(measurements['weights'], np.float64)
    noise_power = None
    if pieces.noise_power_computable:
      noise_power = aggregation_rules.noise_power(
          weights, pieces.variances, pieces.spec.num_parameters,
          pieces.config.learning_rate)
    return state, {
        'weights': weights.tolist(),
        'sigma_hat2': np.asarray(measurements['sigma_hat2'],
                                 np.float64).tolist(),
        'noise_power': noise_power,
    }

  def account(self, ledger, round_num):
    for name, (rate, z, steps) in self._pieces.privacy.mechanisms.items():
      ledger.step(name, rate, z, count=steps)

  def evaluate(self, state, ledger):
    return {'accuracy': float(np.nanmean(local_accuracies(
        self._pieces.spec, templates.global_weights(state),
        self._pieces.data)))}


@dataclasses.dataclass
class Experiment(round_loop.Experiment):
  """A run's pieces before its rounds (`prepare`)."""
  config: config_lib.RobustHdpConfig
  data: federated_data.FederatedData
  spec: models.ModelSpec
  clients: list  # Per client, its calibrated `ClientPrivacy`.
  variances: list  # Per client, its true sigma_i^2 of eq. (7).
  executor: round_executor.RoundExecutor  # `executors.build_executor`'s.
  # Every client, every round: its data (TFF: a dataset), its index, b_i
  # and the z_i it adds, and a clip-only run's weighing (`executors.Cohort`).
  cohort: executors.Cohort
  privacy: round_privacy.RoundPrivacy  # Per client, what a round spends.
  # Whether eq. (7)'s noise power is the aggregate's: a private rule's
  # weighted sum of noised updates.
  noise_power_computable: bool

  def system(self) -> RobustHdpRounds:
    return RobustHdpRounds(self)

  def new_ledger(self) -> privacy_ledger.PrivacyLedger:
    config = self.config
    return privacy_ledger.PrivacyLedger(**process_lib.ledger_terms(
        config.poisson, config.mechanism_seed, config.clip_only))


def prepare(config: config_lib.RobustHdpConfig, data, *,
            clients: Optional[Sequence[
                privacy_preferences.ClientPrivacy]] = None) -> Experiment:
  """Calibrates each client's z_i from its epsilon_i and builds the rule's
  aggregator, the round's executor on the config's backend and the cohort
  each round gives it (`train`'s arguments).

  `clients`: the clients' calibration, `process.client_privacy(config,
  N_i)`, when the caller has computed it already (HDP-Bench calibrates once,
  in its own process, and hands it to the run): it is checked to be of this
  configuration's epsilons, batch sizes and rounds, not recomputed.
  """
  config.validate()
  data = client_data_lib.as_federated_data(data)
  if data.num_clients != len(config.epsilons):
    raise ValueError(f'the data has {data.num_clients} clients but the '
                     f'privacy distribution {len(config.epsilons)}')
  spec = models.build_model(config.model, data.input_shape, data.num_classes)
  num_examples = [len(y) for _, y in data.train]
  if clients is None:
    clients = process_lib.client_privacy(config, num_examples)
  else:
    clients = list(clients)
    _check_calibrated(config, clients, num_examples)
  variances = process_lib.true_variances(config, clients,
                                         spec.num_parameters)
  factory = process_lib.build_aggregator(config, clients, variances)
  rule = rule_registry.get(config.algorithm)
  backend = config.round_backend
  executor = executors.build_executor(
      backend, spec, spec.init(config.seed), factory,
      settings=process_lib.dp_sgd_settings(config), private=rule.private,
      workers=config.tff_workers)
  client_data = (list(data.train) if backend == round_executor.DIRECT else
                 [direct_backend.client_dataset(x, y) for x, y in data.train])
  # A clip-only run's clients add no noise; its rule still weighs by the
  # calibrated z_i (`variances`, the aggregator), or by the updates of the
  # calibrated z_i (`noised`) if its weights come from the updates.
  noised = [
      dict(index=np.int32(i), batch_size=np.int32(c.batch_size),
           noise_multiplier=np.float32(c.noise_multiplier or 0.0))
      for i, c in enumerate(clients)
  ]
  info = ([dict(client, noise_multiplier=np.float32(0.0))
           for client in noised] if config.clip_only else noised)
  # Only the direct backend weighs other updates (`config.validate`).
  weighing = (noised if config.clip_only and rule.estimates_from_updates
              else None)
  return Experiment(
      config, data, spec, clients, variances, executor,
      executors.Cohort(client_data, info, weighing),
      process_lib.robust_hdp_privacy(
          clients, local_epochs=config.local_epochs, delta=config.delta,
          accountant=config.accountant, poisson=config.poisson,
          mechanism_seed=config.mechanism_seed),
      noise_power_computable=(rule.private and rule.is_weighted_sum and
                              not config.clip_only))


def _check_calibrated(config: config_lib.RobustHdpConfig, clients,
                      num_examples: Sequence[int]) -> None:
  """Raises ValueError unless `clients` is a calibration of `config`'s
  clients (of N_i `num_examples`): the epsilon each calibrated to
  (`Rule.calibration_epsilons`), b_i capped to N_i and the run's DP-SGD
  steps, with a noise multiplier exactly where there is an epsilon."""
  targets = rule_registry.get(config.algorithm).calibration_epsilons(
      config.epsilons)
  if len(clients) != len(num_examples):
    raise ValueError(f'clients: {len(clients)} calibrations for '
                     f'{len(num_examples)} clients')
  for i, (c, eps, b, n) in enumerate(zip(clients, targets,
                                         config.batch_sizes, num_examples)):
    b = min(int(b), int(n))
    expected = (None if eps is None else float(eps), b, int(n),
                (config.calibration_rounds or config.rounds) *
                config.local_epochs * math.ceil(n / b))
    if ((c.epsilon, c.batch_size, c.num_examples, c.steps) != expected or
        (c.noise_multiplier is None) != (eps is None)):
      raise ValueError(f'clients: client {i} was calibrated as {c}, not for '
                       f'(epsilon, b, N, steps) = {expected} of this run')
    # Its z_i must spend at most epsilon_i: one composition, not the
    # calibration's search (the run's ledger would report a wrong z_i's
    # epsilon, but only after spending it).
    if eps is not None:
      spent = privacy_preferences.achieved_epsilon(
          c, config.delta, accountant=config.accountant)
      if spent > eps * (1 + round_privacy.BUDGET_TOLERANCE):
        raise ValueError(
            f'clients: client {i}\'s noise multiplier {c.noise_multiplier:g} '
            f'spends epsilon {spent:.4g} over its {eps:g} in this run; '
            'allowed: a z_i of at most epsilon_i (process.client_privacy)')


# The run's rounds in the shared loop, from the initial model or a
# checkpoint of the same configuration, with observers around every round.
run_rounds = round_loop.run_rounds


def results_record(experiment: Experiment, run: checkpoint.Run,
                   wall_clock_seconds: float) -> dict[str, Any]:
  """The record of the module doc: the clients' privacy, the accuracies,
  the last round's noise power, the history."""
  config, history = experiment.config, run.history
  rule = rule_registry.get(config.algorithm)
  # Noise calibrated for more rounds than ran: epsilon is what ran.
  ran = ((lambda c: c) if config.calibration_rounds is None else
         (lambda c: dataclasses.replace(
             c, steps=c.steps // config.calibration_rounds * config.rounds)))
  accuracies = local_accuracies(experiment.spec,
                                templates.global_weights(run.state),
                                experiment.data)
  return {
      'config': dataclasses.asdict(config),
      'dataset': experiment.data.name,
      'model_parameters': experiment.spec.num_parameters,
      'clients': [{
          'target_epsilon': c.epsilon,
          'noise_multiplier': c.noise_multiplier,
          'batch_size': c.batch_size,
          'num_examples': c.num_examples,
          'steps': c.steps,
          'achieved_epsilon': privacy_preferences.achieved_epsilon(
              ran(c), config.delta, accountant=config.accountant),
          'true_sigma2': v,
      } for c, v in zip(experiment.clients, experiment.variances)],
      'metrics': {
          'accuracy': float(np.nanmean(accuracies)),
          'accuracy_std': float(np.nanstd(accuracies)),
          'client_accuracy': accuracies,
          'noise_power': history[-1]['noise_power'] if history else None,
      },
      'privacy': {
          **mechanism_key.privacy_record(
              run.ledger, config.mechanism_seed,
              [f'client_{i}' for i, c in enumerate(experiment.clients)
               if c.noise_multiplier is not None],
              {f'client_{i}': f'rule {config.algorithm} adds no noise'
                              if not rule.private else
                              'a non-private client (epsilon None)'
               for i, c in enumerate(experiment.clients)
               if c.noise_multiplier is None}),
          'accountant': config.accountant,
          'delta': config.delta,
          'level': 'example-level, per client',
      },
      'history': history,
      'wall_clock_seconds': wall_clock_seconds,
  }


def train(config: config_lib.RobustHdpConfig, data,
          **options) -> dict[str, Any]:
  """Runs one rule and returns its results record (see module doc).

  Args:
    config: The run.
    data: The clients (one per epsilon of the config, in order): a
      `FederatedData`, or a TFF `ClientData` (`client_ids` order).
    **options: `round_loop.Options`' checkpoint_dir, checkpoint_every,
      keep_checkpoints, progress, summary_writer and on_round.
  """
  return round_loop.train(functools.partial(prepare, config, data),
                          results_record, **options)
