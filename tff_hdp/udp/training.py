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
"""The UDP-Alg driver: T rounds of paper 004's Algorithm 1 (or a baseline).

`train(config, data)` composes the run's experiment (`prepare`: the
hypernetwork for the data's users, the users' weights, the rounds'
constants, the round on the run's backend), runs T rounds in the shared
loop (`run_rounds`, `round_loop.train`) and returns one results record
(`results_record`).
Each round samples users (Poisson at rate q; pFedHN: one user uniformly),
draws their K local batches (an `executors.Cohort`), runs the round on the
run's backend (`executors.build_executor`: `hypernetfl.round_step` as one
`tf.function`, backend 'direct', `direct_backend.DirectRound`; a round of
the `LearningProcess` of `process.compose_udp_process`, backend 'tff',
`tff_backend.TffRound`, the process `process.build_udp_process` builds, the
same numbers; or over `tff_workers`, `distributed.DistributedRound`), which
writes back phi and the sampled embeddings, steps the accountant (UDP only:
a Poisson-subsampled Gaussian of rate q and multiplier z per round), and
every `eval_every` rounds measures each user's generated model on its local
test data. The canary audit (`tff_hdp.udp.audit`) composes the same
experiment.

Two kinds of randomness (`tff_hdp.privacy.mechanism_key`): phi^0 and the
embeddings come from the public `config.seed`; the users and batches of
round t (numpy, per round) and the noise (a stateless key in the server
state, split every round) from the run's secret key, or from
`config.mechanism_seed` for a reproducible run whose epsilon is then not a
guarantee. The history publishes only what the mechanism released (the noise
stddev) and evaluations, not how many users a round sampled. A run
checkpointed with `checkpoint_dir` resumes to exactly the results of an
uninterrupted one.
"""

import dataclasses
import functools
from typing import Any, Optional

import numpy as np
import tensorflow as tf

from tff_hdp import checkpoint
from tff_hdp import models
from tff_hdp import round_loop
from tff_hdp.data import federated_data
from tff_hdp.data import sampling
from tff_hdp.privacy import mechanism_key
from tff_hdp.privacy import privacy_ledger
from tff_hdp import round_executor
from tff_hdp.udp import config as config_lib
from tff_hdp.udp import executors
from tff_hdp.udp import hypernetfl
from tff_hdp.udp import hypernetwork
from tff_hdp.udp import process

LEDGER_NAME = 'phi'

# What epsilon takes as public: the estimator's constants come from every
# user's size and are published in the record's setup.
PUBLIC_INPUTS = ('the users\' training sizes |D_u|: w_hat (by default their '
                 'median), max_u w_u and W = sum_u w_u come from them and are '
                 'published; epsilon treats them as public')


def user_weights(data: federated_data.FederatedData,
                 sample_cap: float) -> np.ndarray:
  """w_u = min(|D_u| / w_hat, 1) for every user."""
  return process.weights_from_sizes([len(y) for _, y in data.train],
                                    sample_cap)


def estimator_constants(config: config_lib.UdpConfig,
                        weights: np.ndarray) -> tuple[float, float]:
  """(max_weight, denominator) of the run: max_u w_u and q W; 1 and 1 for
  pFedHN (unweighted, one user per step)."""
  if config.variant.one_user_per_step:
    return 1.0, 1.0
  return process.estimator_constants(weights, config.sampling_rate)


# The users' batches, the TFF cohort's rows and the rounds' constants,
# shared with the process (which defines them, so as not to depend on this
# driver).
local_batches = process.local_batches
max_cohort = process.default_max_cohort
round_constants = process.round_constants


def user_evaluation(net: hypernetwork.HyperNetwork, phi, embeddings,
                    data: federated_data.FederatedData,
                    chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:
  """Each user's (loss, accuracy %) with its generated model on its test
  data (nan for a user without test data)."""
  losses = np.full(len(data.test), np.nan)
  accuracies = np.full(len(data.test), np.nan)
  for start in range(0, len(data.test), chunk):
    users = range(start, min(start + chunk, len(data.test)))
    thetas = net.generate(phi, tf.constant(embeddings[start:users.stop]))
    for row, u in enumerate(users):
      x, y = data.test[u]
      if len(y):
        logits = net.target.apply([t[row] for t in thetas], tf.constant(x))
        losses[u] = float(models.loss_fn(logits, y))
        accuracies[u] = 100.0 * float(np.mean(
            np.argmax(logits.numpy(), axis=-1) == y))
  return losses, accuracies


@dataclasses.dataclass(frozen=True)
class Experiment(round_loop.Experiment):
  """What a run is composed of (`prepare`).

  Attributes:
    config: The run's configuration.
    data: Its users.
    net: The hypernetwork.
    user_weights: [N] w_u.
    constants: The rounds' constants (z the mechanism's).
    executor: The round on the run's backend
      (`executors.build_executor`; its `next` takes an `executors.Cohort`).
  """
  config: config_lib.UdpConfig
  data: federated_data.FederatedData
  net: hypernetwork.HyperNetwork
  user_weights: np.ndarray
  constants: hypernetfl.RoundConstants
  executor: round_executor.RoundExecutor

  def system(self) -> 'UdpRounds':
    """Algorithm 1's T rounds (`UdpRounds`), from phi^0, the initial
    embeddings and the run's mechanism key."""
    return UdpRounds(self)

  def new_ledger(self) -> privacy_ledger.PrivacyLedger:
    return privacy_ledger.PrivacyLedger(
        **mechanism_key.ledger_terms(self.config.mechanism_seed))


def prepare(config: config_lib.UdpConfig,
            data: federated_data.FederatedData, *,
            noise_multiplier: Optional[float] = None) -> Experiment:
  """The experiment of a run of `config` on `data`.

  Args:
    config: The run's configuration (validated here; w_hat filled in,
      `UdpConfig.for_users`).
    data: Its users.
    noise_multiplier: The mechanism's z (default the config's; an audit's
      planted fault changes it, not the accountant's).
  """
  config.validate()
  config = config.for_users([len(y) for _, y in data.train])
  target = models.build_model(config.target, data.input_shape,
                              data.num_classes)
  net = hypernetwork.HyperNetwork(
      target, config.embedding_dim or
      hypernetwork.default_embedding_dim(data.num_clients),
      hidden=config.hidden, hidden_layers=config.hidden_layers)
  weights = user_weights(data, config.sample_cap)
  constants = round_constants(config, *estimator_constants(config, weights),
                              noise_multiplier=noise_multiplier)
  executor = executors.build_executor(
      config.round_backend, net, config, constants, data.num_clients,
      workers=config.tff_workers)
  return Experiment(config, data, net, weights, constants, executor)


class UdpRounds(round_loop.System):
  """Algorithm 1's rounds for the shared loop (`round_loop.run`).

  A round samples the users (Poisson at q; pFedHN one user), draws their K
  local batches (`cohort`) and runs the round on the run's backend
  (`Experiment.executor`; a round with no user still releases the noised
  empty estimator); the ledger spends one round of the user-level
  mechanism; evaluation is every user's generated model on its test data,
  with the epsilon so far (the curve of Figures 2-3).
  """

  def __init__(self, experiment: Experiment):
    self._pieces = experiment
    self._config = experiment.config
    self._cohort_key = None
    self.last_cohort = np.zeros(0, np.int64)  # Never published.

  def start(self, key):
    """phi^0 and the embeddings (public seed) and the noise key (`key`)."""
    self._cohort_key = mechanism_key.cohort_key(key)
    return self._pieces.executor.initialize(key)

  def _users(self, rng) -> tuple[np.ndarray, np.ndarray]:
    num_users = self._pieces.data.num_clients
    if self._config.variant.one_user_per_step:
      return (rng.integers(0, num_users, size=1), np.ones(1, np.float32))
    users = sampling.sample_cohort(num_users, 1, rng, poisson=True,
                                   sampling_rate=self._config.sampling_rate)
    return users, self._pieces.user_weights[users].astype(np.float32)

  def cohort(self, round_num: int) -> executors.Cohort:
    """Round `round_num`'s users, weights and K local batches, drawn from
    the run's cohort key."""
    config = self._config
    rng = mechanism_key.round_rng(self._cohort_key, round_num)
    users, weights = self._users(rng)
    if not len(users):
      return executors.Cohort(round_num, users, weights)
    return executors.Cohort(
        round_num, users, weights,
        local_batches(self._pieces.data, users, config.local_steps,
                      config.batch_size, rng))

  def run_round(self, state, round_num):
    cohort = self.cohort(round_num)
    self.last_cohort = cohort.users
    output = self._pieces.executor.next(state, cohort)
    return output.state, dict(output.measurements)

  def account(self, ledger, round_num):
    if self._config.private:
      ledger.step(LEDGER_NAME, self._config.sampling_rate,
                  self._config.noise_multiplier)

  def evaluate(self, state, ledger):
    losses, accuracies = user_evaluation(self._pieces.net, state['phi'],
                                         state['embeddings'],
                                         self._pieces.data)
    entry = {'loss': float(np.nanmean(losses)),
             'accuracy': float(np.nanmean(accuracies))}
    if self._config.private:  # The curve of Figures 2-3: accuracy against eps.
      entry['epsilon'] = ledger.get_epsilon(LEDGER_NAME, self._config.delta,
                                            self._config.accountant)
    return entry


# The run's T rounds (`UdpRounds`) in the shared loop, from the initial state
# or a checkpoint of the same configuration, with observers around every
# round.
run_rounds = round_loop.run_rounds


def results_record(experiment: Experiment, run: checkpoint.Run,
                   wall_clock_seconds: float) -> dict[str, Any]:
  """The results record of a finished run.

  Returns:
    {'config', 'dataset', 'setup', 'epsilon', 'metrics', 'history',
     'wall_clock_seconds'}; `metrics` holds the final per-user accuracies
    of the generated models, their mean and variance.
  """
  config, net = experiment.config, experiment.net
  constants = experiment.constants
  _, accuracies = user_evaluation(net, run.state['phi'],
                                  run.state['embeddings'], experiment.data)
  return {
      'config': dataclasses.asdict(config),
      'dataset': experiment.data.name,
      'setup': {
          'num_users': experiment.data.num_clients,
          'hypernetwork_parameters': net.num_parameters,
          'target_parameters': net.target.num_parameters,
          'embedding_dim': net.embedding_dim,
          'max_user_weight': constants.max_weight,
          'denominator': constants.denominator,
          'noise_stddev': (config.noise_multiplier * constants.max_weight *
                           config.clip / constants.denominator
                           if config.private else 0.0),
      },
      'epsilon': (run.ledger.get_epsilon(LEDGER_NAME, config.delta,
                                         config.accountant)
                  if config.private else None),
      'privacy': {
          **mechanism_key.privacy_record(
              run.ledger, config.mechanism_seed,
              [LEDGER_NAME] if config.private else [],
              {} if config.private else
              {LEDGER_NAME: f'{config.algorithm} adds no noise'}),
          'accountant': config.accountant,
          'delta': config.delta,
          'level': 'user-level',
          'public_inputs': PUBLIC_INPUTS,
      },
      'metrics': {
          'accuracy_mean': float(np.nanmean(accuracies)),
          'accuracy_var': float(np.nanvar(accuracies)),
          'user_accuracy': [float(a) for a in accuracies],
      },
      'history': run.history,
      'wall_clock_seconds': wall_clock_seconds,
  }


def train(config: config_lib.UdpConfig, data: federated_data.FederatedData,
          **options) -> dict[str, Any]:
  """Runs one experiment, T rounds of Algorithm 1 (or a baseline), and
  returns its results record (`results_record`).

  Args:
    config: The run's configuration.
    data: Its users.
    **options: `round_loop.Options`' checkpoint_dir, checkpoint_every,
      keep_checkpoints, progress, summary_writer and on_round.
  """
  return round_loop.train(functools.partial(prepare, config, data),
                          results_record, **options)
