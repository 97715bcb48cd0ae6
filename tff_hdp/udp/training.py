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
their K local batches, runs `hypernetfl.round_step` as one `tf.function`,
writes back phi and the sampled embeddings, steps the accountant (UDP only:
a Poisson-subsampled Gaussian of rate q and multiplier z per round), and
every `eval_every` rounds measures each user's generated model on its local
test data. It returns one results record.

Everything random comes from `config.seed`: phi^0 and the embeddings, the
users and batches of round t (numpy, from (seed, t)), and the noise (a
stateless key in the server state, split every round). A run checkpointed
with `checkpoint_dir` resumes to exactly the results of an uninterrupted one.
"""

import collections
import dataclasses
import math
import time
from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf

from tff_hdp import checkpoint
from tff_hdp import models
from tff_hdp.data import federated_data
from tff_hdp.data import sampling
from tff_hdp.privacy import canary_audit
from tff_hdp.udp import config as config_lib
from tff_hdp.udp import hypernetfl
from tff_hdp.udp import hypernetwork

LEDGER_NAME = 'phi'


def user_weights(data: federated_data.FederatedData,
                 sample_cap: float) -> np.ndarray:
  """w_u = min(|D_u| / w_hat, 1) for every user."""
  sizes = np.array([len(y) for _, y in data.train], np.float64)
  return np.minimum(sizes / sample_cap, 1.0)


def local_batches(data: federated_data.FederatedData, users: np.ndarray,
                  steps: int, batch_size: int, rng: np.random.Generator):
  """The sampled users' data and the K batches each takes.

  A user with n >= b examples takes b distinct ones at random each step
  (pFedHN draws a fresh shuffled batch each inner step); one with n < b
  takes all of them every step (the rest is masked padding).

  Returns:
    (x [B, n_max, ...], y [B, n_max], indices [K, B, b], mask [K, B, b]).
  """
  sizes = np.array([len(data.train[u][1]) for u in users], np.int64)
  n_max = int(sizes.max())
  x = np.zeros((len(users), n_max) + tuple(data.input_shape), np.float32)
  y = np.zeros((len(users), n_max), np.int32)
  indices = np.zeros((steps, len(users), batch_size), np.int32)
  mask = np.zeros((steps, len(users), batch_size), np.float32)
  for i, u in enumerate(users):
    n = int(sizes[i])
    x[i, :n], y[i, :n] = data.train[u]
    if n >= batch_size:
      order = np.argsort(rng.random((steps, n)), axis=1)
      indices[:, i] = order[:, :batch_size]
      mask[:, i] = 1.0
    else:
      indices[:, i, :n] = np.arange(n)
      mask[:, i, :n] = 1.0
  return x, y, indices, mask


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


def max_cohort(num_users: int, rate: float) -> int:
  """Rows of the TFF process's cohort stack: qN + 6 standard deviations of
  the Poisson cohort size (exceeded with probability below 1e-8), at most
  N."""
  mean = rate * num_users
  return min(num_users,
             int(math.ceil(mean + 6 * math.sqrt(mean * (1 - rate)))) + 1)


def _tff_round_fn(net, config, max_weight, denominator, num_users):
  """The round on TFF's runtime (`process.build_process`), or over
  `config.tff_workers` (`distributed.DistributedRound`); same interface."""
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

    def distributed_round_fn(state, users, x, y, indices, mask, weights):
      new_state, measurements = spread(state, users, x, y, indices, mask,
                                       weights)
      return new_state, {**measurements, **extra(weights)}

    return distributed_round_fn

  from tff_hdp.udp import process  # pylint: disable=g-import-not-at-top
  rows = 1 if config.algorithm == 'pfedhn' else max_cohort(
      num_users, config.sampling_rate)
  iterative = process.build_process(net, num_users=num_users,
                                    max_cohort=rows, seed=config.seed,
                                    **constants)

  def round_fn(state, users, x, y, indices, mask, weights):
    cohort, clients = process.cohort_and_clients(users, weights, x, y,
                                                 indices, mask, rows)
    new_state, measurements = iterative.next(state, cohort, clients)
    return tf.nest.map_structure(np.asarray, new_state), {
        'noise_stddev': measurements['noise_stddev'], **extra(weights)}

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
  if config.algorithm == 'pfedhn':
    max_weight, denominator = 1.0, 1.0
  else:
    max_weight = float(weights.max())
    denominator = config.sampling_rate * float(weights.sum())
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
  no_extra = [tf.zeros(shape) for shape in net.shapes]
  if config.backend == 'tff':
    tff_round = _tff_round_fn(net, config, max_weight, denominator,
                              num_users)
  run = checkpoint.start_run(
      config, collections.OrderedDict(
          phi=net.init(config.seed),
          embeddings=net.init_embeddings(num_users, config.seed),
          noise_key=np.array([config.seed, 0x554450], np.int64)),
      total_rounds=config.rounds, checkpoint_dir=checkpoint_dir,
      checkpoint_every=checkpoint_every, progress=progress,
      summary_writer=summary_writer, on_round=on_round)
  state = tf.nest.map_structure(np.asarray, run.state)
  ledger = run.ledger
  for round_num in run.rounds:
    rng = sampling.round_rng(config.seed, round_num)
    if config.algorithm == 'pfedhn':
      users = rng.integers(0, num_users, size=1)
      round_weights = np.ones(1, np.float32)
    else:
      users = sampling.sample_cohort(num_users, 1, rng, poisson=True,
                                     sampling_rate=config.sampling_rate)
      round_weights = weights[users].astype(np.float32)
    key, next_key = tf.random.experimental.stateless_split(
        state['noise_key'], 2).numpy()
    entry = {'round': round_num + 1, 'users_sampled': int(len(users))}
    extra = no_extra
    if audit is not None:
      extra, entry['canaries_sampled'] = audit.round_records(
          round_num, config.clip, max_weight)
    old_phi = state['phi']
    release = []
    if len(users) and config.backend == 'tff':
      x, y, indices, mask = local_batches(data, users, config.local_steps,
                                          config.batch_size, rng)
      state, measurements = tff_round(state, users, x, y, indices, mask,
                                      round_weights)
      entry.update({k: float(v) for k, v in measurements.items()})
    elif len(users):
      x, y, indices, mask = local_batches(data, users, config.local_steps,
                                          config.batch_size, rng)
      phi, new_embeddings, measurements, *release = round_fn(
          [tf.constant(p) for p in state['phi']],
          state['embeddings'][users], x, y, indices, mask, round_weights,
          key, extra)
      state['phi'] = [p.numpy() for p in phi]
      state['embeddings'] = state['embeddings'].copy()
      state['embeddings'][users] = new_embeddings.numpy()
      entry.update({k: float(v) for k, v in measurements.items()})
    else:  # Nobody sampled: the noised (empty) estimator is still released.
      out = empty_round_fn([tf.constant(p) for p in state['phi']], key, extra)
      phi, release = out if observe_release else (out, [])
      release = [release] if observe_release else []
      state['phi'] = [p.numpy() for p in phi]
    if config.backend != 'tff' or not len(users):
      state['noise_key'] = next_key  # The process splits its own key.
    if audit is not None:
      audit.observe_round(old_phi, state['phi'],
                          release[0] if release else None, config.clip,
                          max_weight)
    if config.private:
      ledger.step(LEDGER_NAME, config.sampling_rate, config.noise_multiplier)
    if (round_num + 1) % config.eval_every == 0 or (
        round_num + 1 == config.rounds):
      losses, accuracies = user_evaluation(net, state['phi'],
                                           state['embeddings'], data)
      entry['loss'] = float(np.nanmean(losses))
      entry['accuracy'] = float(np.nanmean(accuracies))
      if config.private:  # The curve of Figures 2-3: accuracy against eps.
        entry['epsilon'] = ledger.get_epsilon(LEDGER_NAME, config.delta,
                                              config.accountant)
    run.state = state
    run.end_round(round_num + 1, entry)

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
