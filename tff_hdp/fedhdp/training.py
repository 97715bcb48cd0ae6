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
the privacy groups, the aggregator and a round backend (`tff_backend`: TFF's
runtime; `direct_backend`: the same round in plain TensorFlow, faster), and
each round samples a cohort, feeds the clients' data and Ditto models to
`backend.next`, stores the updated personal models, steps the privacy ledger
of each private group that was queried, and evaluates the global model every
`eval_every` rounds. It returns one results record (config, spec-section-7 metrics, epsilon per group, history).

Everything random is derived from `config.seed`: opt-outs, initial weights,
cohorts and local shuffles (numpy, per round), DP noise (stateless, from the
server state) and dropout (stateless, per round and client).

FedHDP with r = 0 never communicates with private clients (paper 001,
Appendix C): they are dropped from the sampled cohort, never train a personal
model (so theirs is the global model) and spend no privacy budget.
"""

import collections
import dataclasses
import time
from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf

from tff_hdp.privacy import canary_audit
from tff_hdp.privacy import privacy_ledger
from tff_hdp import checkpoint
from tff_hdp.fedhdp import config as config_lib
from tff_hdp.fedhdp import evaluation
from tff_hdp.data import client_data as client_data_lib
from tff_hdp.data import federated_data
from tff_hdp.fedhdp import hdp_factory
from tff_hdp import models
from tff_hdp import templates
from tff_hdp.fedhdp import personal_store
from tff_hdp.data import sampling
from tff_hdp.fedhdp import tff_backend


def _shuffled(x, y, rng):
  """A client's data in this round's order (one permutation per round)."""
  order = rng.permutation(len(y))
  return x[order].astype(np.float32), y[order].astype(np.int32)


def build_backend(name: str, spec, initial_weights, factory, settings,
                  workers=(), privacy=None):
  """The round backend called `name` (see `tff_backend` for the interface).

  With `workers` (host:port of running TFF workers), the TFF backend spreads
  each round's clients over them (`distributed`).
  """
  if name == 'tff' and workers:
    from tff_hdp.fedhdp import distributed  # pylint: disable=g-import-not-at-top
    return distributed.DistributedTffBackend(spec, initial_weights, factory,
                                             settings, list(workers))
  if name == 'tff':
    return tff_backend.TffBackend(spec, initial_weights, factory, settings,
                                  privacy)
  if name == 'direct':
    from tff_hdp.fedhdp import direct_backend  # pylint: disable=g-import-not-at-top
    return direct_backend.DirectBackend(spec, initial_weights, factory,
                                        settings)
  raise ValueError(f'unknown backend {name!r}; allowed: '
                   f'{", ".join(config_lib.BACKENDS)}')


def privacy_record(ledger: privacy_ledger.PrivacyLedger,
                   epsilon: dict[str, float],
                   config: config_lib.FedHdpConfig) -> dict[str, Any]:
  """What the run's epsilons are: a bound (under which neighbours) or not."""
  return {
      'is_bound': ledger.is_bound,
      'accountant': config.accountant,
      'delta': config.delta,
      'sampling': 'poisson' if config.poisson_sampling else 'fixed cohort',
      'denominators': config.denominators,
      'guarantee': {g: ledger.guarantee(g) for g in epsilon},
  }


def train(config: config_lib.FedHdpConfig,
          data: federated_data.FederatedData,
          *,
          summary_writer: Optional[tf.summary.SummaryWriter] = None,
          progress: bool = False,
          on_round: Optional[Callable[[int, dict], None]] = None,
          checkpoint_dir: Optional[str] = None,
          checkpoint_every: int = 10,
          store_dir: Optional[str] = None,
          audit: Optional[Any] = None,
          audit_statistic: str = 'lr',
          profile: Optional[list[dict[str, Any]]] = None) -> dict[str, Any]:
  """Runs one experiment and returns its results record.

  Args:
    config: The run's hyperparameters.
    data: The federated dataset: a `FederatedData`, or a TFF `ClientData`
      (clients in `client_ids` order, `client_data.to_federated_data`).
    summary_writer: Optional TensorBoard writer for per-round scalars.
    progress: Show a progress bar over rounds (tqdm, on stderr).
    on_round: Called as on_round(round, history_entry) after each round.
    checkpoint_dir: If given, progress is saved there every
      `checkpoint_every` rounds and after the last, and a run finding a
      checkpoint of the same configuration there resumes from it.
    checkpoint_every: See `checkpoint_dir`.
    store_dir: Keep the Ditto models memory-mapped in this directory instead
      of in memory (FEMNIST: 3,400 x 213,630 float32 = 2.9 GB).
    audit: A `tff_hdp.fedhdp.audit.FedHdpAudit` built from this config's
      groups: its canaries join every round's aggregation, its mechanism
      groups replace the configured ones (a planted fault), the accountant
      keeps the configured ones, and the results gain an 'audit' record.
      Direct backend only, without checkpoints.
    audit_statistic: The canaries' statistic ('max' or 'sum', see
      `tff_hdp.privacy.canaries.CanarySet.statistics`).
    profile: If given, each round appends where the backend's time and work
      went: {'seconds': ..., 'work': ...} from the direct backend's
      `last_round_seconds` and `last_round_work` (empty for TFF's).

  Returns:
    {'config', 'dataset', 'setup', 'metrics', 'epsilon', 'history',
     'wall_clock_seconds'}.
  """
  start = time.time()
  data = client_data_lib.as_federated_data(data)
  setup = config_lib.resolve(config, data)
  spec = models.build_model(config.model, data.input_shape, data.num_classes)
  if audit is not None:  # A bad observer/statistic pair fails before work.
    canary_audit.check_observer(audit.observe, audit_statistic)
  if audit is not None and (config.backend != 'direct' or
                            checkpoint_dir is not None):
    raise ValueError('an audit runs on the direct backend without '
                     f'checkpoints; got backend {config.backend!r} and '
                     f'checkpoint_dir {checkpoint_dir!r}')
  factory = hdp_factory.HeterogeneousDPFactory(
      setup.groups if audit is None else audit.mechanism_groups(),
      initial_clip=config.initial_clip,
      target_quantile=config.target_quantile,
      clip_learning_rate=config.clip_learning_rate,
      expected_counts=setup.expected_counts,
      clipped_count_stddev=setup.clipped_count_stddev,
      seed=config.seed)
  settings = tff_backend.ClientSettings(
      ditto_lambdas=tuple(g.ditto_lambda for g in setup.groups),
      local_epochs=config.local_epochs,
      batch_size=config.batch_size,
      learning_rate=config.learning_rate,
      personal_learning_rate=config.personal_learning_rate,
      lr_decay_factor=config.lr_decay_factor,
      lr_decay_rounds=config.lr_decay_rounds,
      ditto=config.ditto,
      seed=config.seed)
  backend = build_backend(config.backend, spec, spec.init(config.seed),
                          factory, settings, config.tff_workers)
  store = (personal_store.PersonalModelStore(
      data.num_clients, spec.shapes, directory=store_dir)
           if config.ditto else None)
  excluded = config_lib.excluded_groups(setup.groups)
  round_sampling = config.round_sampling(data.num_clients)
  run = checkpoint.start_run(
      config, backend.initialize(), total_rounds=config.rounds,
      checkpoint_dir=checkpoint_dir, checkpoint_every=checkpoint_every,
      store=store, progress=progress, summary_writer=summary_writer,
      on_round=on_round,
      ledger=privacy_ledger.PrivacyLedger(is_bound=config.epsilon_is_bound))
  state = tff_backend.to_numpy(run.state)
  ledger = run.ledger
  for round_num in run.rounds:
    rng = sampling.round_rng(config.seed, round_num)
    cohort = sampling.sample_cohort(
        data.num_clients, config.clients_per_round, rng,
        poisson=config.poisson_sampling, sampling_rate=config.sampling_rate)
    cohort = np.array([c for c in cohort
                       if setup.client_groups[c] not in excluded], np.int64)
    theta = templates.global_weights(state)
    extra = {}
    if audit is not None:
      canary_updates, canary_groups = audit.round_updates(
          round_num, float(state['aggregator']['clip_norm']))
      # Like real clients, canaries of a group never communicated with
      # (FedHDP at r = 0) stay out of the round.
      keep = ~np.isin(canary_groups, sorted(excluded))
      if keep.any():
        extra['extra_updates'] = ([u[keep] for u in canary_updates],
                                  canary_groups[keep])
    if len(cohort) or extra:
      client_data = [_shuffled(*data.train[c], rng) for c in cohort]
      personal = (store.gather(cohort, theta) if store is not None and
                  len(cohort) else [theta] * len(cohort))
      info = [
          collections.OrderedDict(
              group=np.int32(setup.client_groups[c]), client_id=np.int32(c))
          for c in cohort
      ]
      if audit is not None:
        extra['observe_releases'] = audit.observe == 'release'
      clip_norm = float(state['aggregator']['clip_norm'])
      state, personal, measurements = backend.next(state, client_data,
                                                   personal, info, **extra)
      if audit is not None:
        audit.observe_round(theta, templates.global_weights(state),
                            backend.last_round_releases, measurements,
                            clip_norm)
      if store is not None and len(cohort):
        store.scatter(cohort, personal)
    else:
      measurements = {}
    if profile is not None:
      profile.append({
          'seconds': dict(getattr(backend, 'last_round_seconds', {})),
          'work': dict(getattr(backend, 'last_round_work', {}))})
    for i, group in enumerate(setup.groups):
      if group.is_private and i not in excluded:
        ledger.step(group.name,
                    noise_multiplier=group.effective_noise_multiplier,
                    **round_sampling)
    entry = {'round': round_num + 1, 'num_clients': int(len(cohort))}
    if 'extra_updates' in extra:
      entry['num_canaries'] = int(len(extra['extra_updates'][1]))
    entry.update({k: float(v) for k, v in measurements.items()})
    if (round_num + 1) % config.eval_every == 0 or round_num + 1 == config.rounds:
      entry['loss'], entry['accuracy'] = evaluation.loss_and_accuracy(
          spec, templates.global_weights(state), *data.server_test)
    run.state = state
    run.end_round(round_num + 1, entry)

  final = templates.global_weights(state)
  client_global = evaluation.per_client_accuracy(spec, final, data.test)
  client_personal = evaluation.personal_accuracy(spec, store, client_global,
                                                 data.test)
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
      'privacy': privacy_record(ledger, epsilon, config),
      'history': run.history,
      'wall_clock_seconds': time.time() - start,
  }
  if audit is not None:
    rdp = {g.name: ledger.get_epsilon(g.name, config.delta)
           for g in setup.groups if g.is_private}
    record['audit'] = audit.report(
        rdp, config.delta, audit_statistic,
        accounted_pld={g.name: ledger.get_epsilon(g.name, config.delta, 'pld')
                       for g in setup.groups if g.is_private})
  return record

