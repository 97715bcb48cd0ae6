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
"""The simulation driver: T rounds of an algorithm of paper 001, then metrics.

`train(config, data)` draws the opt-out set once (`config.resolve`), builds
the privacy groups, the aggregator and the round's executor on the
configured backend (`executors.build_executor`: TFF's runtime, the same
round in plain TensorFlow, faster, or TFF workers), and runs Algorithm 2's
rounds (`FedHdpRounds`) in the shared loop (`tff_hdp.round_loop`): each
samples a cohort, hands the clients' data and Ditto models to
`executor.next` as an `executors.Cohort` and stores the trained personal
models it returns; the ledger of each private group that was queried spends
the round; the global
model is evaluated every `eval_every` rounds. It returns one results record
(config, the metrics of paper 001's tables, epsilon per group, history).
`train` is `prepare`, the shared `run_rounds` and `results_record` in turn
(`round_loop.train`); an audit (`audit.train_audited`) and the profiler
(`ProfileObserver`) compose the same three with their own observers.

Two kinds of randomness (`tff_hdp.privacy.mechanism_key`). Public, from
`config.seed`: opt-outs, privacy levels, initial weights and dropout
(stateless, per round and client). The mechanism's, from the run's secret
key (or `config.mechanism_seed`, for a reproducible run whose epsilon is
then not a guarantee): the DP noise (stateless, from the key in the server
state) and the cohorts with the sampled clients' local shuffles (numpy, per
round). The history publishes no realised count of a round's clients.

FedHDP with r = 0 never communicates with private clients (paper 001,
Appendix C): they are dropped from the sampled cohort, never train a personal
model (so theirs is the global model) and spend no privacy budget.
"""

import collections
import dataclasses
import functools
from typing import Any, Optional, Sequence

import numpy as np

from tff_hdp import checkpoint
from tff_hdp import models
from tff_hdp import round_executor
from tff_hdp import round_loop
from tff_hdp import templates
from tff_hdp.data import client_data as client_data_lib
from tff_hdp.data import federated_data
from tff_hdp.data import sampling
from tff_hdp.fedhdp import config as config_lib
from tff_hdp.fedhdp import evaluation
from tff_hdp.fedhdp import executors
from tff_hdp.fedhdp import personal_store
from tff_hdp.fedhdp import privacy_groups
from tff_hdp.fedhdp import process as process_lib
from tff_hdp.fedhdp import tff_backend
from tff_hdp.privacy import mechanism_key
from tff_hdp.privacy import privacy_ledger


def _shuffled(x, y, rng):
  """A client's data in this round's order (one permutation per round)."""
  order = rng.permutation(len(y))
  return x[order].astype(np.float32), y[order].astype(np.int32)


def privacy_record(ledger: privacy_ledger.PrivacyLedger,
                   epsilon: dict[str, float],
                   config: config_lib.FedHdpConfig,
                   groups: Sequence[privacy_groups.PrivacyGroup] = ()
                   ) -> dict[str, Any]:
  """What the run's epsilons are: a bound (under which neighbours) or not,
  whether its noise and cohorts were secret, and per group of `groups` (the
  private ones, in `epsilon`, and those without noise) its guarantee."""
  why = ('the non-private baseline adds no noise'
         if not config_lib.run_algorithm(config).noised else
         'these clients opted out of privacy (no noise)')
  return {
      **mechanism_key.privacy_record(
          ledger, config.mechanism_seed, epsilon,
          {g.name: why for g in groups if g.name not in epsilon}),
      'accountant': config.accountant,
      'delta': config.delta,
      'sampling': 'poisson' if config.poisson_sampling else 'fixed cohort',
      'denominators': config.denominators,
  }


class FedHdpRounds(round_loop.System):
  """Algorithm 2's rounds for the shared loop (`round_loop.run`).

  A round samples the cohort (Poisson at q, or a fixed cohort) from the
  run's key, drops the clients of groups never queried (r = 0), hands the
  clients' shuffled data, group indices and Ditto models to the executor
  (`executors.Cohort`), and keeps the Ditto models it returns
  (`RoundOutput.clients`); each private group that was queried
  spends one round of its ledger; evaluation is the global model's on the
  server test set. `last_cohort` is the last round's clients, for the
  audit and tests: it is never published.
  """

  def __init__(self, experiment: 'Experiment'):
    self._pieces = experiment
    self._excluded = config_lib.excluded_groups(experiment.setup.groups)
    self._sampling = experiment.config.round_sampling(
        experiment.data.num_clients)
    self._cohort_key = None
    self.last_cohort = np.zeros(0, np.int64)

  def start(self, key):
    self._cohort_key = mechanism_key.cohort_key(key)
    return self._pieces.executor.initialize(key)

  def _cohort(self, rng) -> np.ndarray:
    config = self._pieces.config
    client_groups = self._pieces.setup.client_groups
    cohort = sampling.sample_cohort(
        self._pieces.data.num_clients, config.clients_per_round, rng,
        poisson=config.poisson_sampling, sampling_rate=config.sampling_rate)
    return np.array([c for c in cohort
                     if client_groups[c] not in self._excluded], np.int64)

  def run_round(self, state, round_num):
    store = self._pieces.store
    state = tff_backend.to_numpy(state)
    rng = mechanism_key.round_rng(self._cohort_key, round_num)
    clients = self._cohort(rng)
    self.last_cohort = clients
    # An empty cohort runs the same release as any other (issue 60): the
    # groups' noise on zero sums, the clip update from noise alone, the same
    # measurements; skipping it would release less than the ledger charges.
    output = self.execute(state, self._round_cohort(state, clients, rng))
    if store is not None and len(clients):
      store.scatter(clients, output.clients)
    return output.state, {k: float(v) if not isinstance(v, int) else v
                          for k, v in output.measurements.items()}

  def _round_cohort(self, state, clients, rng) -> executors.Cohort:
    """What the round needs of `clients`: their data shuffled by `rng`,
    their groups and ids, and their Ditto models (theta^t, or theta^0 with
    `ditto_init='initial'`, for a client without one)."""
    pieces = self._pieces
    data = [_shuffled(*pieces.data.train[c], rng) for c in clients]
    theta = templates.global_weights(state)
    start = (pieces.initial_weights
             if pieces.config.ditto_init == 'initial' else theta)
    personal = (pieces.store.gather(clients, start)
                if pieces.store is not None and len(clients) else
                [theta] * len(clients))
    info = [
        collections.OrderedDict(
            group=np.int32(pieces.setup.client_groups[c]),
            client_id=np.int32(c))
        for c in clients
    ]
    return executors.Cohort(data, info, personal)

  def execute(self, state, cohort: executors.Cohort
              ) -> round_executor.RoundOutput:
    """The executor's round on the cohort. A method that acts between the
    clients' work and the server's (`idp_scale`'s per-client clip norms)
    overrides it; the cohort is `run_round`'s."""
    return self._pieces.executor.next(state, cohort)

  def account(self, ledger, round_num):
    for i, group in enumerate(self._pieces.setup.groups):
      if group.is_private and i not in self._excluded:
        ledger.step(group.name,
                    noise_multiplier=group.effective_noise_multiplier,
                    **self._sampling)

  def evaluate(self, state, ledger):
    loss, accuracy = evaluation.loss_and_accuracy(
        self._pieces.spec, templates.global_weights(state),
        *self._pieces.data.server_test)
    return {'loss': loss, 'accuracy': accuracy}


class ProfileObserver(round_loop.Observer):
  """Appends, after each round, where the executor's time and work went
  (`direct_backend.DirectRound`'s `last_round_seconds` and
  `last_round_work`; empty for the others)."""

  def __init__(self, executor: round_executor.RoundExecutor,
               profile: list[dict[str, Any]]):
    self._executor = executor
    self._profile = profile

  def after_round(self, round_num, state, entry):
    self._profile.append({
        'seconds': dict(getattr(self._executor, 'last_round_seconds', {})),
        'work': dict(getattr(self._executor, 'last_round_work', {}))})


@dataclasses.dataclass
class Experiment(round_loop.Experiment):
  """A run's pieces before its rounds (`prepare`)."""
  config: config_lib.FedHdpConfig
  data: federated_data.FederatedData
  setup: config_lib.Setup  # The opt-out draw, the groups, the ratios.
  spec: models.ModelSpec
  executor: round_executor.RoundExecutor  # `executors.build_executor`'s.
  store: Optional[personal_store.PersonalModelStore]  # Ditto's models.
  initial_weights: Any = None  # theta^0 (`config.ditto_init`).

  def system(self) -> FedHdpRounds:
    """Algorithm 2's T rounds."""
    return FedHdpRounds(self)

  def new_ledger(self) -> privacy_ledger.PrivacyLedger:
    return privacy_ledger.PrivacyLedger(**self.config.ledger_terms())

  def client_store(self) -> Optional[personal_store.PersonalModelStore]:
    return self.store


def prepare(config: config_lib.FedHdpConfig, data, *,
            store_dir: Optional[str] = None,
            mechanism_groups=None) -> Experiment:
  """Draws the opt-outs and builds the model, the aggregator and executor.

  Args:
    config: The run's hyperparameters.
    data: The federated dataset: a `FederatedData`, or a TFF `ClientData`
      (clients in `client_ids` order, `client_data.to_federated_data`).
    store_dir: Keep the Ditto models memory-mapped in this directory instead
      of in memory (FEMNIST: 3,400 x 213,630 float32 = 2.9 GB).
    mechanism_groups: The groups the aggregator runs with, if not the
      configured ones (an audit's planted fault, `audit.train_audited`;
      the accountant keeps the configured ones).
  """
  data = client_data_lib.as_federated_data(data)
  setup = config_lib.resolve(config, data)
  spec = models.build_model(config.model, data.input_shape, data.num_classes)
  initial_weights = spec.init(config.seed)
  executor = executors.build_executor(
      config.round_backend, spec, initial_weights,
      process_lib.aggregator_factory(config, setup, groups=mechanism_groups,
                                     key_in_state=True),
      settings=process_lib.client_settings(config, setup.groups),
      workers=config.tff_workers)
  store = (personal_store.PersonalModelStore(
      data.num_clients, spec.shapes, directory=store_dir)
           if config.ditto else None)
  return Experiment(config, data, setup, spec, executor, store,
                    [np.asarray(w, np.float32) for w in initial_weights])


# Algorithm 2's T rounds in the shared loop, from the initial state or a
# checkpoint of the same configuration, with observers around every round.
run_rounds = round_loop.run_rounds


def results_record(experiment: Experiment, run: checkpoint.Run,
                   wall_clock_seconds: float) -> dict[str, Any]:
  """{'config', 'dataset', 'setup', 'metrics', 'epsilon', 'privacy',
  'history', 'wall_clock_seconds'}: the metrics of paper 001's tables
  (global and Ditto accuracies per group), epsilon per private group; and
  on a split of one label per client, 'personal_models': the Ditto models
  on their label's held-out images and their own training images
  (`evaluation.personal_models_on_label_pools`)."""
  config, setup, spec = experiment.config, experiment.setup, experiment.spec
  data, ledger = experiment.data, run.ledger
  final = templates.global_weights(run.state)
  client_global = evaluation.per_client_accuracy(spec, final, data.test)
  client_personal = evaluation.personal_accuracy(spec, experiment.store,
                                                 client_global, data.test)
  names = [setup.groups[g].name for g in setup.client_groups]
  metrics = dict(
      evaluation.summarize(
          evaluation.accuracy(spec, final, *data.server_test), client_global,
          client_personal, names))
  if not config.ditto:  # No personal models: the local columns are undefined.
    for key in list(metrics):
      if key.startswith(('acc_l', 'delta_l')):
        metrics[key] = None
  epsilon = {
      g.name: ledger.get_epsilon(g.name, config.delta, config.accountant)
      for g in setup.groups if g.is_private
  }
  record = {
      'config': dataclasses.asdict(config),
      'dataset': data.name,
      'setup': {
          'groups': [dataclasses.asdict(g) for g in setup.groups],
          'num_opted_out': int(setup.opted_out.sum()),
          'value_noise_multipliers': list(setup.value_noise_multipliers),
          'clipped_count_stddev': setup.clipped_count_stddev,
          'model_parameters': spec.num_parameters,
      },
      'metrics': metrics,
      'epsilon': epsilon,
      'privacy': privacy_record(ledger, epsilon, config, setup.groups),
      'history': run.history,
      'wall_clock_seconds': wall_clock_seconds,
  }
  if data.draw not in (None, 'disjoint'):  # Records of the default unchanged.
    record['client_draw'] = data.draw
    record['examples_per_client'] = int(len(data.train[0][1]))
  if config.ditto and experiment.store is not None and (
      data.client_labels is not None):
    record['personal_models'] = evaluation.personal_models_on_label_pools(
        spec, experiment.store, final, data.train, data.server_test,
        data.client_labels, names)
  return record


def train(config: config_lib.FedHdpConfig, data, *,
          store_dir: Optional[str] = None, **options) -> dict[str, Any]:
  """Runs one experiment and returns its results record.

  Args:
    config: The run's hyperparameters.
    data: The federated dataset: a `FederatedData`, or a TFF `ClientData`
      (clients in `client_ids` order, `client_data.to_federated_data`).
    store_dir: See `prepare`.
    **options: `round_loop.Options`' checkpoint_dir, checkpoint_every,
      keep_checkpoints, progress, summary_writer and on_round.

  Returns:
    `results_record`'s record.
  """
  return round_loop.train(
      functools.partial(prepare, config, data, store_dir=store_dir),
      results_record, **options)
