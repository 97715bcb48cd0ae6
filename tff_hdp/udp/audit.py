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
"""The canary-user audit of UDP-Alg's phi (paper 004; issue 11, item 5).

What is audited: phi's iterates, which UDP-Alg releases as (epsilon, delta)
user-level DP (`tff_hdp.udp`). `train_audited(config, data, UdpAudit(...))`
adds m canary users (`tff_hdp.privacy.canary_audit`), each inserted with
probability 1/2 and, once inserted, sampled every round with probability q
like any user. A sampled canary's record in the estimator is its clipped,
weighted hypernetwork gradient chosen as the worst case of Lemma 3.1: a fixed
direction c_k of phi's space at norm S with weight max_u w_u, so it adds
max_w S c_k to sum_u w_u Clip(g_u, S) before the noise. Canaries have no
data, embedding or model: the real users' metrics are theirs alone, and W
(the estimator's denominator) stays the real users', a public constant.

The audited run composes the driver's experiment (`training.prepare`,
`training.run_rounds`, `training.results_record`) with its own step of the
direct round (`AuditedRound`, the step of a `direct_backend.DirectRound`):
the users' weighted clipped sum (`hypernetfl.users_step`), plus the
sampled canaries' records, released and stepped as in every run
(`hypernetfl.phi_step`; `audited_phi_step`). The observed release is that
minus the users' sum (`known_residual`).

What the auditor observes (`tff_hdp.privacy.canary_audit`):
`observe='release'` (default) is the noised estimator itself, every round:
its sum sum_u w_u Clip(g_u, S) + records + N(0, (z max_w S)^2 I) minus the
real users' weighted clipped gradients (which DP's adversary may know),
divided by max_w S; the LR statistic reads it with the claimed z.
`observe='global'` is phi's round step, read by the cosine statistics. The
report is `canary_audit`'s (docs/audit.md): the RDP and PLD epsilons,
Andrew et al.'s estimate and Steinke et al.'s lower bound. A planted fault
(`planted_noise_scale`) multiplies the mechanism's z, not the accountant's
nor the statistic's.
"""

import dataclasses
import time
from typing import Any, Optional, Sequence

import numpy as np
import tensorflow as tf

from tff_hdp import round_loop
from tff_hdp.data import federated_data
from tff_hdp.privacy import canary_audit
from tff_hdp.udp import config as config_lib
from tff_hdp.udp import hypernetfl
from tff_hdp.udp import hypernetwork
from tff_hdp.udp import direct_backend
from tff_hdp.udp import training

GROUP = 'phi'


class UdpAudit:
  """Canary users of one UDP-Alg run, and the audit of phi after it."""

  def __init__(self, net: hypernetwork.HyperNetwork, *, canaries: int,
               sampling_rate: float, seed: int,
               planted_noise_scale: float = 1.0,
               noise_multiplier: Optional[float] = None,
               observe: str = 'release'):
    """Initializes the audit.

    Args:
      net: The hypernetwork (phi's shapes).
      canaries: m canary users (each inserted with probability 1/2).
      sampling_rate: q.
      seed: Seed of the canaries.
      planted_noise_scale: f > 0, the factor on the mechanism's z.
      noise_multiplier: The run's claimed z (the LR statistic's); required
        for observe='release'.
      observe: 'release' or 'global' (module doc).
    """
    if not planted_noise_scale > 0:
      raise ValueError(
          f'planted_noise_scale must be > 0, got {planted_noise_scale}')
    if observe not in canary_audit.OBSERVERS:
      raise ValueError(f'unknown observer {observe!r}; allowed: '
                       f'{", ".join(canary_audit.OBSERVERS)}')
    if observe == 'release' and not noise_multiplier:
      raise ValueError('observe=release needs the run\'s noise_multiplier')
    self.observe = observe
    self.shapes = [tuple(s) for s in net.shapes]
    self.planted_noise_scale = float(planted_noise_scale)
    self.audit = canary_audit.CanaryAudit([GROUP], canaries,
                                          net.num_parameters, sampling_rate,
                                          seed,
                                          noise_multipliers=[noise_multiplier])
    self.canaries = self.audit.canaries

  def mechanism_noise_multiplier(self, noise_multiplier: float) -> float:
    return noise_multiplier * self.planted_noise_scale

  def round_records(self, round_num: int, clip: float, max_weight: float):
    """(sum of this round's canary records per phi tensor, their count)."""
    taken = self.audit.sample(round_num)
    flat = self.canaries.directions(taken).sum(axis=0) * np.float32(
        max_weight * clip) if len(taken) else np.zeros(
            self.canaries.dimension, np.float32)
    records, start = [], 0
    for shape in self.shapes:
      size = int(np.prod(shape))
      records.append(flat[start:start + size].reshape(shape))
      start += size
    return records, int(len(taken))

  def observe_round(self, old_phi, new_phi, release, clip: float,
                    max_weight: float) -> None:
    """Records what the observer sees of one round: phi's step phi_t -
    phi_{t+1} = lambda grad_phi (global; phi descends, so a canary's record
    pushes it along -c_k), or the release minus the known records, in units
    of max_w S (release)."""
    if self.observe == 'global':
      self.audit.observe(new_phi, old_phi)
    else:
      self.audit.observe_release(0, release, max_weight * clip)

  def report(self, epsilon: Optional[float], delta: float,
             statistic: str = 'lr',
             accounted_pld: Optional[float] = None) -> list[dict[str, Any]]:
    return self.audit.report({GROUP: epsilon}, delta, statistic,
                             {GROUP: self.planted_noise_scale},
                             observe=self.observe,
                             accounted_pld={GROUP: accounted_pld})


def audited_phi_step(phi: Sequence[tf.Tensor], total: Sequence[tf.Tensor],
                     records: Sequence[tf.Tensor], key: tf.Tensor,
                     constants: hypernetfl.RoundConstants
                     ) -> hypernetfl.PhiStep:
  """`hypernetfl.phi_step` with the canaries' `records` joining the users'
  weighted clipped sum `total` before the noise."""
  return hypernetfl.phi_step(phi, [t + r for t, r in zip(total, records)],
                             key, constants)


def known_residual(step: hypernetfl.PhiStep,
                   total: Sequence[tf.Tensor]) -> list[tf.Tensor]:
  """The release minus the users' own weighted clipped sum `total`: what an
  auditor who knows the users' records learns from it."""
  return [s - t for s, t in zip(step.release, total)]


class AuditedRound(round_loop.Observer):
  """The direct round's step with the audit's canaries, and the audit's
  observer.

  Called as `direct_backend.RoundStep` is (the `step` of the run's
  `direct_backend.DirectRound`), a round adds the round's sampled
  canaries' records to the users' weighted clipped sum
  (`hypernetfl.users_step`, then `audited_phi_step`; with no user, to an
  empty sum), and its measurements start with 'canaries_sampled'. As an
  observer of the loop (`round_loop.Observer`), it gives the audit each
  round's phi step or release minus the users' sum (`known_residual`, only
  computed for observe='release'; `UdpAudit.observe_round`).
  """

  def __init__(self, audit: UdpAudit, net: hypernetwork.HyperNetwork,
               constants: hypernetfl.RoundConstants, batch_size: int):
    self._audit = audit
    self._constants = constants
    signature = direct_backend.round_signature(net, batch_size)
    phi_specs = signature[0]
    observed = (known_residual if audit.observe == 'release' else
                lambda step, total: [])

    batch_specs = hypernetfl.UserBatches(*signature[2:6])

    # No autograph, as `direct_backend.RoundStep`'s round.
    @tf.function(input_signature=[phi_specs, signature[1], batch_specs,
                                  signature[6], signature[7], phi_specs],
                 autograph=False)
    def round_fn(phi, embeddings, batches, weights, key, records):
      users = hypernetfl.users_step(net, phi, embeddings, batches, weights,
                                    constants)
      step = audited_phi_step(phi, users.total, records, key, constants)
      return (hypernetfl.round_result(users, step),
              observed(step, users.total))

    @tf.function(input_signature=[phi_specs, signature[7], phi_specs],
                 autograph=False)
    def empty_round_fn(phi, key, records):
      zeros = [tf.zeros_like(p) for p in phi]
      step = audited_phi_step(phi, zeros, records, key, constants)
      return step.phi, step.noise_stddev, observed(step, zeros)

    self._round_fn = round_fn
    self._empty_round_fn = empty_round_fn
    self._old_phi = self._release = None

  def __call__(self, round_num: int, phi, embeddings, batches, weights, key):
    records, count = self._audit.round_records(
        round_num, self._constants.clip, self._constants.max_weight)
    phi = [tf.constant(p) for p in phi]
    if batches is None:
      new_phi, stddev, self._release = self._empty_round_fn(phi, key,
                                                            records)
      return ([p.numpy() for p in new_phi], None,
              {'canaries_sampled': count, 'noise_stddev': float(stddev)})
    result, self._release = self._round_fn(
        phi, embeddings, hypernetfl.UserBatches(*batches), weights, key,
        records)
    return ([p.numpy() for p in result.phi], result.embeddings.numpy(),
            {'canaries_sampled': count,
             **{k: float(v) for k, v in result.measurements.items()}})

  def before_round(self, round_num: int, state) -> None:
    self._old_phi = state['phi']

  def after_round(self, round_num: int, state, entry: dict) -> None:
    self._audit.observe_round(self._old_phi, state['phi'], self._release,
                              self._constants.clip,
                              self._constants.max_weight)


def train_audited(config: config_lib.UdpConfig,
                  data: federated_data.FederatedData, audit: UdpAudit,
                  statistic: str = 'lr', *,
                  progress: bool = False) -> dict[str, Any]:
  """`training.train`'s run with `audit`'s canary users, and its report.

  The canaries join every round's estimator, the mechanism runs with the
  audit's noise multiplier (a planted fault), the accountant keeps the
  configured one. UDP-Alg only, on the direct backend, without
  checkpoints.

  Returns:
    `training.train`'s record with an 'audit' entry (`UdpAudit.report` with
    `statistic`).
  """
  config.validate()
  canary_audit.check_observer(audit.observe, statistic)
  if config.backend != 'direct' or not config.private:
    raise ValueError('an audit runs UDP-Alg on the direct backend without '
                     f'checkpoints; got algorithm {config.algorithm!r}, '
                     f'backend {config.backend!r}')
  start = time.time()
  experiment = training.prepare(
      config, data, noise_multiplier=audit.mechanism_noise_multiplier(
          config.noise_multiplier))
  audited = AuditedRound(audit, experiment.net, experiment.constants,
                         config.batch_size)
  experiment = dataclasses.replace(
      experiment, executor=direct_backend.DirectRound(
          experiment.net, experiment.config, experiment.constants,
          experiment.data.num_clients, step=audited))
  run = training.run_rounds(experiment, observers=[audited],
                            options=round_loop.Options(progress=progress))
  record = training.results_record(experiment, run, time.time() - start)
  record['audit'] = audit.report(
      run.ledger.get_epsilon(training.LEDGER_NAME, config.delta),
      config.delta, statistic,
      accounted_pld=run.ledger.get_epsilon(training.LEDGER_NAME, config.delta,
                                           'pld'))
  return record
