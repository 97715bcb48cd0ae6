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

`train(config, data)` builds the hypernetwork for the data's users, and each
round samples users (Poisson at rate q; pFedHN: one user uniformly), draws
their K local batches, runs `hypernetfl.round_step` as one `tf.function`
(backend 'direct') or a round of the `LearningProcess` of
`process.compose_udp_process` (backend 'tff': the process
`process.build_udp_process` builds, the same numbers), writes back phi and
the sampled embeddings, steps the accountant (UDP only: a
Poisson-subsampled Gaussian of rate q and multiplier z per round), and every
`eval_every` rounds measures each user's generated model on its local test
data. It returns one results record.

Everything random comes from `config.seed`: phi^0 and the embeddings, the
users and batches of round t (numpy, from (seed, t)), and the noise (a
stateless key in the server state, split every round). A run checkpointed
with `checkpoint_dir` resumes to exactly the results of an uninterrupted one.
"""

import collections
import dataclasses
import time
from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf

from tff_hdp import models
from tff_hdp import round_loop
from tff_hdp.data import federated_data
from tff_hdp.data import sampling
from tff_hdp.privacy import canary_audit
from tff_hdp.udp import config as config_lib
from tff_hdp.udp import hypernetfl
from tff_hdp.udp import hypernetwork
from tff_hdp.udp import process

LEDGER_NAME = 'phi'


def user_weights(data: federated_data.FederatedData,
                 sample_cap: float) -> np.ndarray:
  """w_u = min(|D_u| / w_hat, 1) for every user."""
  return process.weights_from_sizes([len(y) for _, y in data.train],
                                    sample_cap)


def estimator_constants(config: config_lib.UdpConfig,
                        weights: np.ndarray) -> tuple[float, float]:
  """(max_weight, denominator) of the run: max_u w_u and q W; 1 and 1 for
  pFedHN (unweighted, one user per step)."""
  if config.algorithm == 'pfedhn':
    return 1.0, 1.0
  return process.estimator_constants(weights, config.sampling_rate)


# The users' batches and the TFF cohort's rows, shared with the process
# (which defines them, so as not to depend on this driver).
local_batches = process.local_batches
max_cohort = process.max_cohort


def _round_fn(net: hypernetwork.HyperNetwork, config: config_lib.UdpConfig,
              max_weight: float, denominator: float,
              noise_multiplier: Optional[float] = None,
              return_release: bool = False):
  """`hypernetfl.round_step` with this run's constants, as one tf.function.

  `noise_multiplier` is the mechanism's z (default the config's; an audit's
  planted fault changes it). The last argument is the records added before
  the noise (zeros without an audit). `return_release`: both functions also
  return the release minus the users' known records (`hypernetfl.phi_step`).
  """
  z = config.mechanism_noise_multiplier if noise_multiplier is None else (
      noise_multiplier)
  phi_specs = [tf.TensorSpec(s, tf.float32) for s in net.shapes]
  signature = [
      [tf.TensorSpec(s, tf.float32) for s in net.shapes],
      tf.TensorSpec((None, net.embedding_dim), tf.float32),
      tf.TensorSpec((None, None) + net.target.input_shape, tf.float32),
      tf.TensorSpec((None, None), tf.int32),
      tf.TensorSpec((None, None, config.batch_size), tf.int32),
      tf.TensorSpec((None, None, config.batch_size), tf.float32),
      tf.TensorSpec((None,), tf.float32),
      tf.TensorSpec((2,), tf.int64),
      phi_specs,
  ]

  @tf.function(input_signature=signature)
  def round_fn(phi, embeddings, x, y, indices, mask, weights, key, extra):
    return hypernetfl.round_step(
        net, phi, embeddings, x, y, indices, mask, weights, key,
        clip=config.clip, noise_multiplier=z, max_weight=max_weight,
        denominator=denominator,
        local_learning_rate=config.local_learning_rate,
        hyper_learning_rate=config.hyper_learning_rate,
        embedding_learning_rate=config.embedding_learning_rate,
        clip_and_noise=config.clips, extra_total=extra,
        return_release=return_release)

  @tf.function(input_signature=[phi_specs, signature[7], phi_specs])
  def empty_round_fn(phi, key, extra):
    return hypernetfl.empty_round_step(
        phi, key, clip=config.clip, noise_multiplier=z,
        max_weight=max_weight, denominator=denominator,
        hyper_learning_rate=config.hyper_learning_rate,
        clip_and_noise=config.clips, extra_total=extra,
        return_release=return_release)

  return round_fn, empty_round_fn


def _tff_round_fn(net, config, max_weight, denominator, num_users):
  """The round on TFF's runtime: the learning process
  (`process.compose_udp_process`), or over `config.tff_workers`
  (`distributed.DistributedRound`). Both take
  (round number, state, users, x, y, indices, mask, weights) and return
  (new state, measurements); the process also runs the rounds in which
  nobody was sampled (it releases the noised empty estimator)."""
  constants = dict(
      local_steps=config.local_steps,
      batch_size=config.batch_size, clip=config.clip,
      noise_multiplier=config.mechanism_noise_multiplier,
      max_weight=max_weight, denominator=denominator,
      local_learning_rate=config.local_learning_rate,
      hyper_learning_rate=config.hyper_learning_rate,
      embedding_learning_rate=config.embedding_learning_rate,
      clip_and_noise=config.clips)
  extra = lambda weights: {'user_weight_max': float(np.max(weights)),
                           'user_weight_sum': float(np.sum(weights))}
  if config.tff_workers:
    from tff_hdp.udp import distributed  # pylint: disable=g-import-not-at-top
    spread = distributed.DistributedRound(net, config.tff_workers,
                                          **constants)

    def distributed_round_fn(round_num, state, users, x, y, indices, mask,
                             weights):
      del round_num  # The distributed round's state has no counter.
      new_state, measurements = spread(state, users, x, y, indices, mask,
                                       weights)
      return new_state, {**measurements, **extra(weights)}

    distributed_round_fn.runs_empty_rounds = False
    return distributed_round_fn

  rows = 1 if config.algorithm == 'pfedhn' else max_cohort(
      num_users, config.sampling_rate)
  learning = process.compose_udp_process(
      net, num_users=num_users, max_cohort=rows, seed=config.seed,
      privacy=process.udp_privacy(
          config.sampling_rate, config.noise_multiplier,
          clip_and_noise=config.private, delta=config.delta,
          accountant=config.accountant),
      **constants)

  def round_fn(round_num, state, users, x, y, indices, mask, weights):
    clients = process.client_elements(users, weights, x, y, indices, mask,
                                      rows) if len(users) else []
    process_state = collections.OrderedDict(
        round_num=np.int32(round_num), phi=state['phi'],
        embeddings=state['embeddings'], noise_key=state['noise_key'])
    output = learning.next(process_state, clients)
    new_state = collections.OrderedDict(
        (key, tf.nest.map_structure(np.asarray, output.state[key]))
        for key in ('phi', 'embeddings', 'noise_key'))
    if not len(users):  # As the direct backend's empty round: no metrics.
      return new_state, {}
    return new_state, {
        'noise_stddev': output.metrics['noise_stddev'], **extra(weights)}

  round_fn.runs_empty_rounds = True
  return round_fn


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


class UdpRounds(round_loop.System):
  """Algorithm 1's rounds for the shared loop (`round_loop.run`).

  A round samples the users (Poisson at q; pFedHN one user), draws their K
  local batches and runs the round on TFF's runtime (the learning process)
  or directly (one tf.function; a round with no user still releases the
  noised empty estimator); the ledger spends one round of the user-level
  mechanism; evaluation is every user's generated model on its test data,
  with the epsilon so far (the curve of Figures 2-3). An audit's canary
  users join the direct round's estimator and it observes the release.
  """

  def __init__(self, net: hypernetwork.HyperNetwork,
               config: config_lib.UdpConfig,
               data: federated_data.FederatedData, weights: np.ndarray,
               round_fn, empty_round_fn, tff_round, *, audit,
               max_weight: float, observe_release: bool):
    self._net = net
    self._config = config
    self._data = data
    self._weights = weights
    self._round_fn = round_fn
    self._empty_round_fn = empty_round_fn
    self._tff_round = tff_round
    self._audit = audit
    self._max_weight = max_weight
    self._observe_release = observe_release
    self._no_extra = [tf.zeros(shape) for shape in net.shapes]

  def _users(self, rng) -> tuple[np.ndarray, np.ndarray]:
    if self._config.algorithm == 'pfedhn':
      return (rng.integers(0, self._data.num_clients, size=1),
              np.ones(1, np.float32))
    users = sampling.sample_cohort(self._data.num_clients, 1, rng,
                                   poisson=True,
                                   sampling_rate=self._config.sampling_rate)
    return users, self._weights[users].astype(np.float32)

  def run_round(self, state, round_num):
    config = self._config
    state = tf.nest.map_structure(np.asarray, state)
    rng = sampling.round_rng(config.seed, round_num)
    users, round_weights = self._users(rng)
    key, next_key = tf.random.experimental.stateless_split(
        state['noise_key'], 2).numpy()
    entry = {'users_sampled': int(len(users))}
    extra = self._no_extra
    if self._audit is not None:
      extra, entry['canaries_sampled'] = self._audit.round_records(
          round_num, config.clip, self._max_weight)
    old_phi = state['phi']
    release = []
    on_tff = self._tff_round is not None and (
        len(users) or self._tff_round.runs_empty_rounds)
    batches = (local_batches(self._data, users, config.local_steps,
                             config.batch_size, rng)
               if len(users) else (None,) * 4)
    if on_tff:
      state, measurements = self._tff_round(round_num, state, users,
                                            *batches, round_weights)
      entry.update({k: float(v) for k, v in measurements.items()})
    elif len(users):
      phi, new_embeddings, measurements, *release = self._round_fn(
          [tf.constant(p) for p in state['phi']],
          state['embeddings'][users], *batches, round_weights, key, extra)
      state['phi'] = [p.numpy() for p in phi]
      state['embeddings'] = state['embeddings'].copy()
      state['embeddings'][users] = new_embeddings.numpy()
      entry.update({k: float(v) for k, v in measurements.items()})
    else:  # Nobody sampled: the noised (empty) estimator is still released.
      out = self._empty_round_fn([tf.constant(p) for p in state['phi']],
                                 key, extra)
      phi, release = out if self._observe_release else (out, [])
      release = [release] if self._observe_release else []
      state['phi'] = [p.numpy() for p in phi]
    if not on_tff:
      state['noise_key'] = next_key  # The process splits its own key.
    if self._audit is not None:
      self._audit.observe_round(old_phi, state['phi'],
                                release[0] if release else None, config.clip,
                                self._max_weight)
    return state, entry

  def account(self, ledger, round_num):
    if self._config.private:
      ledger.step(LEDGER_NAME, self._config.sampling_rate,
                  self._config.noise_multiplier)

  def evaluate(self, state, ledger):
    losses, accuracies = user_evaluation(self._net, state['phi'],
                                         state['embeddings'], self._data)
    entry = {'loss': float(np.nanmean(losses)),
             'accuracy': float(np.nanmean(accuracies))}
    if self._config.private:  # The curve of Figures 2-3: accuracy against eps.
      entry['epsilon'] = ledger.get_epsilon(LEDGER_NAME, self._config.delta,
                                            self._config.accountant)
    return entry


def train(config: config_lib.UdpConfig,
          data: federated_data.FederatedData,
          *,
          summary_writer: Optional[tf.summary.SummaryWriter] = None,
          progress: bool = False,
          on_round: Optional[Callable[[int, dict], None]] = None,
          checkpoint_dir: Optional[str] = None,
          checkpoint_every: int = 10,
          audit: Optional[Any] = None,
          audit_statistic: str = 'lr') -> dict[str, Any]:
  """Runs one experiment and returns its results record.

  With `audit` (a `tff_hdp.udp.audit.UdpAudit`), its canary users join every
  round's estimator, the mechanism runs with its noise multiplier (a planted
  fault), the accountant keeps the configured one, and the record gains an
  'audit' entry (direct backend, no checkpoints).

  Returns:
    {'config', 'dataset', 'setup', 'epsilon', 'metrics', 'history',
     'wall_clock_seconds'}; `metrics` holds the final per-user accuracies
    of the generated models, their mean and variance.
  """
  config.validate()
  start = time.time()
  num_users = data.num_clients
  target = models.build_model(config.target, data.input_shape,
                              data.num_classes)
  net = hypernetwork.HyperNetwork(
      target, config.embedding_dim or
      hypernetwork.default_embedding_dim(num_users))
  weights = user_weights(data, config.sample_cap)
  max_weight, denominator = estimator_constants(config, weights)
  if audit is not None:  # A bad observer/statistic pair fails before work.
    canary_audit.check_observer(audit.observe, audit_statistic)
  if audit is not None and (config.backend != 'direct' or checkpoint_dir or
                            not config.private):
    raise ValueError('an audit runs UDP-Alg on the direct backend without '
                     f'checkpoints; got algorithm {config.algorithm!r}, '
                     f'backend {config.backend!r}, checkpoint_dir '
                     f'{checkpoint_dir!r}')
  observe_release = audit is not None and audit.observe == 'release'
  round_fn, empty_round_fn = _round_fn(
      net, config, max_weight, denominator,
      None if audit is None else audit.mechanism_noise_multiplier(
          config.noise_multiplier),
      return_release=observe_release)
  tff_round = (_tff_round_fn(net, config, max_weight, denominator, num_users)
               if config.backend == 'tff' else None)
  rounds = UdpRounds(net, config, data, weights, round_fn, empty_round_fn,
                     tff_round, audit=audit, max_weight=max_weight,
                     observe_release=observe_release)
  run = round_loop.run(
      rounds, config, collections.OrderedDict(
          phi=net.init(config.seed),
          embeddings=net.init_embeddings(num_users, config.seed),
          noise_key=np.array([config.seed, 0x554450], np.int64)),
      total_rounds=config.rounds, eval_every=config.eval_every,
      checkpoint_dir=checkpoint_dir, checkpoint_every=checkpoint_every,
      progress=progress, summary_writer=summary_writer, on_round=on_round)
  state, ledger = run.state, run.ledger

  _, accuracies = user_evaluation(net, state['phi'], state['embeddings'],
                                 data)
  epsilon = (ledger.get_epsilon(LEDGER_NAME, config.delta, config.accountant)
             if config.private else None)
  record = {
      'config': dataclasses.asdict(config),
      'dataset': data.name,
      'setup': {
          'num_users': num_users,
          'hypernetwork_parameters': net.num_parameters,
          'target_parameters': target.num_parameters,
          'embedding_dim': net.embedding_dim,
          'max_user_weight': max_weight,
          'denominator': denominator,
          'noise_stddev': (config.noise_multiplier * max_weight *
                           config.clip / denominator
                           if config.private else 0.0),
      },
      'epsilon': epsilon,
      'metrics': {
          'accuracy_mean': float(np.nanmean(accuracies)),
          'accuracy_var': float(np.nanvar(accuracies)),
          'user_accuracy': [float(a) for a in accuracies],
      },
      'history': run.history,
      'wall_clock_seconds': time.time() - start,
  }
  if audit is not None:
    record['audit'] = audit.report(
        ledger.get_epsilon(LEDGER_NAME, config.delta), config.delta,
        audit_statistic,
        accounted_pld=ledger.get_epsilon(LEDGER_NAME, config.delta, 'pld'))
  return record
