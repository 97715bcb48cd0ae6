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
"""An empirical privacy audit of a FedHDP run (paper 001), group by group.

What is audited: the client-level guarantee of each privacy group i, as the
accountant states it: group i's releases over the run are (epsilon_i,
delta)-DP with respect to adding or removing one client of group i.
`train_audited(config, data, FedHdpAudit(...))` adds `canaries_per_group`
canary clients (`tff_hdp.privacy.canaries`) to every group. To the server a
canary of group i is an ordinary client of group i: sampled each round with
probability q, its update its direction scaled to `CANARY_NORM_FACTOR` x S^t
(so the group's query clips it to S^t c_k), counted in N_i^t, its clip-count
record b = 0. Canaries have no data and no personal model: the real
clients' metrics are over the real clients only, on a global model that
does carry the canaries' updates, as in Andrew et al.

The auditor (`tff_hdp.privacy.canary_audit`) observes, with
`observe='release'` (default), group i's own noised sum every round (the
average times the public N_i^t), before the groups are combined, minus the
trained clients' clipped updates, which DP's adversary may know (FedHDP's
opt-outs are not protected at all); the LR statistic reads it at group i's
claimed value noise z_i, not z_eff (the clip count, the rest of z_eff, is
one scalar that all canaries share). `observe='global'` is the global model
after each round (Andrew et al.'s all-iterates observer, cosine statistics
max and sum). Per group: Andrew et al.'s estimate and Steinke et al.'s
lower bound at 95% beside the RDP and PLD epsilons. `planted_noise_scale`
multiplies the named groups' z_i in the mechanism only (a positive control
that only `run_scripts/audit_fedhdp.py` accepts). Only the direct backend
takes canaries (`round_with_canaries` composes `DirectRound.client_work`
and `aggregate`); TFF's runtime would need them as clients with data. What the
observers see and the measured results: docs/audit.md.
"""

import collections
import dataclasses
import time
from typing import Any, Optional, Sequence

import numpy as np

from tff_hdp import round_executor
from tff_hdp.fedhdp import config as config_lib
from tff_hdp.fedhdp import privacy_groups
from tff_hdp.privacy import canary_audit

# A canary's update norm, in units of the round's clip norm S^t (> 1: always
# clipped, to exactly S^t).
CANARY_NORM_FACTOR = 10.0


def planted_group_names(groups: Sequence[privacy_groups.PrivacyGroup],
                   scale: float,
                   names: Optional[Sequence[str]] = None) -> tuple[str, ...]:
  """The names of the groups whose noise is scaled by `scale`, checked.

  Args:
    groups: The run's privacy groups.
    scale: f > 0 (1: nothing planted, the empty tuple).
    names: Groups to plant in; default every private group.
  """
  if not scale > 0:
    raise ValueError(f'planted_noise_scale must be > 0, got {scale}')
  private = [g.name for g in groups if g.is_private]
  planted = tuple(private if names is None else names)
  for name in planted:
    if name not in private:
      raise ValueError(f'planted_noise_group {name!r} is not a private group '
                       f'of this run; allowed: {", ".join(private)}')
  return planted if scale != 1 else ()


class FedHdpAudit:
  """Canaries and planted noise for one FedHDP run, and the audit after it."""

  def __init__(self, groups: Sequence[privacy_groups.PrivacyGroup],
               spec, *, canaries_per_group: int,
               sampling_rate: float, seed: int,
               planted_noise_scale: float = 1.0,
               planted_groups: Optional[Sequence[str]] = None,
               observe: str = 'release'):
    """Initializes the audit.

    Args:
      groups: The run's privacy groups (`config.resolve(...).groups`).
      spec: The `tff_hdp.models.ModelSpec` (its parameter count is the
        canaries' dimension).
      canaries_per_group: m, canaries per group (each inserted w.p. 1/2).
      sampling_rate: q, the rate at which inserted canaries are sampled.
      seed: Seed of the canaries (directions, insertion, sampling).
      planted_noise_scale: f > 0, the factor on the planted groups' noise.
      planted_groups: Names of the groups whose noise is scaled; default
        every private group.
      observe: 'release' or 'global' (module doc).
    """
    self.planted_groups = planted_group_names(groups, planted_noise_scale,
                                              planted_groups)
    self.groups = tuple(groups)
    self.shapes = [tuple(s) for s in spec.shapes]
    self.planted_noise_scale = float(planted_noise_scale)
    if observe not in canary_audit.OBSERVERS:
      raise ValueError(f'unknown observer {observe!r}; allowed: '
                       f'{", ".join(canary_audit.OBSERVERS)}')
    self.observe = observe
    self.audit = canary_audit.CanaryAudit(
        [g.name for g in groups], canaries_per_group, spec.num_parameters,
        sampling_rate, seed,
        noise_multipliers=[g.noise_multiplier if g.is_private else None
                           for g in groups])
    self.canaries = self.audit.canaries

  def mechanism_groups(self) -> tuple[privacy_groups.PrivacyGroup, ...]:
    """The groups the mechanism runs with: planted groups' z_i times f."""
    return tuple(
        dataclasses.replace(g, noise_multiplier=g.noise_multiplier *
                            self.planted_noise_scale)
        if g.name in self.planted_groups else g for g in self.groups)

  def round_updates(self, round_num: int, clip_norm: float):
    """This round's sampled canaries as extra client updates.

    Returns:
      (updates, groups): per model tensor, the stacked [K_c, ...] canary
      updates (10 S^t c_k); and their [K_c] group indices.
    """
    taken = self.audit.sample(round_num)
    flat = self.canaries.directions(taken) * np.float32(
        CANARY_NORM_FACTOR * clip_norm)
    updates, start = [], 0
    for shape in self.shapes:
      size = int(np.prod(shape))
      updates.append(flat[:, start:start + size].reshape((len(taken),) +
                                                         shape))
      start += size
    return updates, self.canaries.groups[taken]

  def observe_round(self, old_weights, new_weights, releases, counts,
                    clip_norm: float) -> None:
    """Records what the observer sees of one round.

    Args:
      old_weights, new_weights: The global model before and after it.
      releases: Per group, its noised sum minus the trained clients'
        clipped updates (`round_with_canaries`); None for the global
        observer.
      counts: Per group, its clients and canaries in the round, N_i^t
        (the audit's own knowledge: no run publishes it).
      clip_norm: S^t, the round's clip norm.
    """
    if self.observe == 'global':
      self.audit.observe(old_weights, new_weights)
      return
    for i, group in enumerate(self.groups):
      # A group with no client this round released nothing (its average is
      # zero by definition), and no canary of it was sampled.
      if counts[i] > 0:
        self.audit.observe_release(i, releases[i], clip_norm)

  def watching(self, executor, excluded: set[int]) -> 'AuditedRound':
    """`executor` (a `direct_backend.DirectRound`) with this audit's
    canaries in every round (see `AuditedRound`); the driver's loop must
    also have it as an observer (`round_loop.Observer`), so that it knows
    the round."""
    return AuditedRound(self, executor, excluded)

  def report(self, epsilon: dict[str, float], delta: float,
             statistic: str = 'lr',
             accounted_pld: Optional[dict[str, float]] = None
             ) -> list[dict[str, Any]]:
    """One record per group: accounted, estimated and lower-bound epsilon."""
    return self.audit.report(
        epsilon, delta, statistic,
        {name: self.planted_noise_scale for name in self.planted_groups},
        observe=self.observe, accounted_pld=accounted_pld)


def round_with_canaries(executor, state, cohort, canaries,
                        observe_release: bool = True):
  """One round of a `direct_backend.DirectRound` with canary clients,
  observed.

  The canaries are clients that did no local work: their updates join the
  trained clients' (`executor.client_work`) in the mechanism
  (`executor.aggregate`), clipped by their group's query, counted in
  N_i^t and in the clip count.

  Args:
    executor: A `direct_backend.DirectRound`.
    state, cohort: As its `next`; the cohort (an `executors.Cohort`) may be
      empty.
    canaries: (updates, groups): per weight tensor the stacked [K_c, ...]
      canary updates, and their [K_c] group indices.
    observe_release: Also return what the release observer reads.

  Returns:
    (the round's `RoundOutput`, observation): the observation is, per
    group, its noised sum minus the trained clients' clipped sum (numpy,
    per weight tensor), what an auditor who knows the trained clients'
    records learns from the group's release; None without
    `observe_release`.
  """
  work = executor.client_work(state, cohort)
  updates, groups = canaries
  deltas = [np.concatenate([np.asarray(d), np.asarray(u, np.float32)])
            for d, u in zip(work.deltas, updates)]
  new_state, measurements, releases = executor.aggregate(
      state, deltas, np.concatenate([work.groups, groups]))
  output = round_executor.RoundOutput(new_state, measurements, work.personal)
  if not observe_release:
    return output, None
  releases = [[np.asarray(r) for r in group] for group in releases]
  if len(cohort.data):
    known = executor.clipped_sums(state, work.deltas, work.groups)
    releases = [[r - k for r, k in zip(group, known_group)]
                for group, known_group in zip(releases, known)]
  return output, releases


class AuditedRound(round_executor.RoundExecutor):
  """The direct round with an audit's canaries, observed.

  Every round, the audit's sampled canaries of the groups the run queries
  (FedHDP at r = 0 never queries its private group, so its canaries stay
  out too) join the cohort as clients that did no local work
  (`round_with_canaries`), and the audit observes the round's releases or
  global models. The driver runs it as its executor and as an observer of
  its loop (`before_round` tells it the round). A round with neither
  clients nor canaries releases the groups' noise alone, as without an
  audit (it carries nothing of a canary, so it is not observed).
  """

  backend = round_executor.DIRECT

  def __init__(self, audit: FedHdpAudit, executor, excluded: set[int]):
    self._audit = audit
    self._executor = executor
    self._excluded = sorted(excluded)
    self._round_num = 0

  # An observer of the driver's loop (`round_loop.Observer`'s two methods;
  # this module stays TensorFlow-free for the binary's checks, so it does
  # not import the loop).
  def before_round(self, round_num: int, state) -> None:
    self._round_num = round_num

  def after_round(self, round_num: int, state, entry: dict) -> None:
    pass

  def initialize(self, key):
    return self._executor.initialize(key)

  def next(self, state, cohort) -> round_executor.RoundOutput:
    clip_norm = float(state['aggregator']['clip_norm'])
    updates, groups = self._audit.round_updates(self._round_num, clip_norm)
    keep = ~np.isin(groups, self._excluded)
    if not keep.any() and not len(cohort.data):  # The noise-only release.
      return self._executor.next(state, cohort)
    theta = [np.asarray(w) for w in state['global_weights']]
    output, releases = round_with_canaries(
        self._executor, state, cohort,
        ([u[keep] for u in updates], groups[keep]),
        observe_release=self._audit.observe == 'release')
    counts = np.bincount(
        np.concatenate([[int(i['group']) for i in cohort.info],
                        groups[keep]]).astype(np.int64),
        minlength=len(self._audit.groups))
    self._audit.observe_round(
        theta, [np.asarray(w) for w in output.state['global_weights']],
        releases, counts, clip_norm)
    if not keep.any():
      return output
    return output._replace(measurements=collections.OrderedDict(
        [('num_canaries', int(keep.sum()))] +
        list(output.measurements.items())))


def train_audited(config: config_lib.FedHdpConfig, data, audit: FedHdpAudit,
                  statistic: str = 'lr', *,
                  progress: bool = False) -> dict[str, Any]:
  """`training.train` with `audit`'s canaries in every round, observed.

  The mechanism runs with the audit's groups (a planted fault), the
  accountant with the configured ones; the record gains an 'audit' entry,
  one row per group (`FedHdpAudit.report` with `statistic`). The direct
  backend only, without checkpoints.
  """
  # TensorFlow only now: the binary's checks above this module stay quiet.
  from tff_hdp import round_loop  # pylint: disable=g-import-not-at-top
  from tff_hdp.fedhdp import training  # pylint: disable=g-import-not-at-top

  canary_audit.check_observer(audit.observe, statistic)  # Before any work.
  if config.backend != 'direct':
    raise ValueError('an audit runs on the direct backend without '
                     f'checkpoints; got backend {config.backend!r}')
  start = time.time()
  experiment = training.prepare(config, data,
                                mechanism_groups=audit.mechanism_groups())
  setup = experiment.setup
  executor = audit.watching(experiment.executor,
                            config_lib.excluded_groups(setup.groups))
  experiment = dataclasses.replace(experiment, executor=executor)
  run = training.run_rounds(experiment, observers=[executor],
                            options=round_loop.Options(progress=progress))
  record = training.results_record(experiment, run, time.time() - start)
  private = [g.name for g in setup.groups if g.is_private]
  record['audit'] = audit.report(
      {name: run.ledger.get_epsilon(name, config.delta) for name in private},
      config.delta, statistic,
      accounted_pld={name: run.ledger.get_epsilon(name, config.delta, 'pld')
                     for name in private})
  return record
