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
"""A canary audit of one training run, whatever the system (numpy/scipy).

What FedHDP's (`tff_hdp.fedhdp.audit`), UDP-Alg's (`tff_hdp.udp.audit`) and
Robust-HDP's (`tff_hdp.robust_hdp.audit`) audits share: the canaries of
each audited group (`canaries.CanarySet`, inserted with probability 1/2,
Poisson-sampled at rate q), what the auditor observes, and the report per
group: the accounted epsilon (RDP and PLD) beside Andrew et al.'s estimate
and Steinke et al.'s lower bound (`auditing`). How a sampled canary enters
the mechanism is the system's business (docs/audit.md).

Two observers (`OBSERVERS`):
- 'release' (the default): the adversary of the guarantee itself. It sees
  the audited group's own noised release every round (or step), before
  anything else is mixed in, and it knows every record but the canary's
  (DP's neighbouring-dataset adversary), so it subtracts their known
  contribution. What is left, in units of the record bound (the clip norm),
  is o_t = sum of the sampled canaries' unit directions + N(0, z^2 I), z the
  group's *claimed* noise multiplier. A canary's projections x_t = <o_t, c_k>
  are then a q-mixture of N(1, z^2) and N(0, z^2) if it is inserted, N(0, z^2)
  if not (the other canaries add nothing when orthonormal, `canaries`, about
  1/sqrt(d) each otherwise): the LR statistic's model (`statistic='lr'`).
- 'global': Andrew et al.'s observer of the released global model (all
  iterates): the cosines between each round's update and c_k, reduced by
  their max or sum. It is weaker by construction (the update mixes every
  group and the model's own movement) and has no LR statistic.

The LR statistic's estimate uses the equal-variance (GDP) fit
(`auditing.estimate_epsilon(equal_variance=True)`); max and sum keep
Andrew et al.'s free fit. A group whose release carries no noise (FedHDP's
opt-outs) has no LR: its canaries are read by the sum statistic.
"""

import math
from typing import Any, Optional, Sequence

import numpy as np

from tff_hdp.privacy import auditing
from tff_hdp.privacy import canaries as canaries_lib

OBSERVERS = ('release', 'global')
STATISTICS = ('lr', 'max', 'sum')


def check_observer(observe: str, statistic: str) -> None:
  """One-line ValueErrors for an unknown observer or statistic, or LR
  without the release it models."""
  if observe not in OBSERVERS:
    raise ValueError(f'unknown observer {observe!r}; allowed: '
                     f'{", ".join(OBSERVERS)}')
  if statistic not in STATISTICS:
    raise ValueError(f'unknown statistic {statistic!r}; allowed: '
                     f'{", ".join(STATISTICS)}')
  if statistic == 'lr' and observe != 'release':
    raise ValueError('the lr statistic models the release observation; with '
                     'observe=global use max or sum')


class CanaryAudit:
  """Canaries of several groups, the observations, and the report."""

  def __init__(self, group_names: Sequence[str], canaries_per_group: int,
               dimension: int, sampling_rate, seed: int,
               noise_multipliers: Optional[Sequence[Optional[float]]] = None):
    """Initializes the audit.

    Args:
      group_names: The audited groups.
      canaries_per_group: m (each inserted with probability 1/2).
      dimension: d, the length of a flattened record.
      sampling_rate: q, one for all groups or one per group: the rate at
        which an inserted canary is sampled in each observed release.
      seed: Seed of the canaries.
      noise_multipliers: Per group, the claimed z of its release (None or 0
        for a noiseless group): the sigma of the LR statistic.
    """
    self.group_names = tuple(group_names)
    rates = np.broadcast_to(np.asarray(sampling_rate, np.float64),
                            (len(self.group_names),))
    self.sampling_rates = tuple(float(r) for r in rates)
    self.noise_multipliers = tuple(noise_multipliers or
                                   [None] * len(self.group_names))
    self.canaries = canaries_lib.CanarySet(
        canaries_per_group, len(self.group_names), dimension, seed)
    self._unit_updates = []
    self._releases = [[] for _ in self.group_names]
    self._participations = np.zeros(len(self.canaries), np.int64)

  def sample(self, round_num: int, group: Optional[int] = None) -> np.ndarray:
    """The inserted canaries taking part in round (or step) `round_num`: of
    every group at the common rate, or of `group` at its own rate."""
    if group is None:
      if len(set(self.sampling_rates)) != 1:
        raise ValueError('groups sample at different rates: name the group')
      taken = self.canaries.sample(round_num, self.sampling_rates[0])
    else:
      taken = self.canaries.sample(round_num, self.sampling_rates[group])
      taken = taken[self.canaries.groups[taken] == group]
    self._participations[taken] += 1
    return taken

  def observe(self, old_weights, new_weights) -> None:
    """Records the round's update of the released model (observe=global)."""
    delta = np.concatenate([
        (np.asarray(n, np.float32) - np.asarray(o, np.float32)).ravel()
        for o, n in zip(old_weights, new_weights)
    ])
    norm = np.linalg.norm(delta)
    if norm > 0:  # A round that changed nothing carries no signal.
      self._unit_updates.append(delta / norm)

  def observe_release(self, group: int, residual, record_bound: float
                      ) -> None:
    """Records group `group`'s release minus the known records
    (observe=release), divided by the record bound (the clip norm)."""
    flat = np.concatenate([np.asarray(r, np.float32).ravel()
                           for r in residual])
    self._releases[group].append(flat / np.float32(record_bound))

  def observations(self, group: int) -> int:
    return len(self._releases[group])

  def group_statistics(self, group: int, statistic: str,
                       observe: str) -> tuple[np.ndarray, str]:
    """([m] statistics of group `group`'s canaries, the statistic used)."""
    check_observer(observe, statistic)
    mine = np.flatnonzero(self.canaries.groups == group)
    if observe == 'global':
      return self.canaries.statistics(np.stack(self._unit_updates),
                                      statistic)[mine], statistic
    if not self._releases[group]:  # Never released (FedHDP at r = 0).
      return np.zeros(mine.size), statistic
    x = self.canaries.projections(np.stack(self._releases[group]), mine)
    z = self.noise_multipliers[group]
    if statistic == 'lr' and not z:
      statistic = 'sum'  # No noise: no likelihood ratio (module doc).
    if statistic == 'lr':
      return auditing.likelihood_ratio_statistic(
          x, 1.0, z, self.sampling_rates[group]), statistic
    if statistic == 'max':
      return x.max(axis=1), statistic
    return x.sum(axis=1) / math.sqrt(x.shape[1]), statistic

  def report(self, accounted: dict[str, Optional[float]], delta: float,
             statistic: str = 'lr',
             planted: Optional[dict[str, float]] = None,
             observe: str = 'release',
             accounted_pld: Optional[dict[str, Optional[float]]] = None
             ) -> list[dict[str, Any]]:
    """One record per group: accounted, estimated and lower-bound epsilon.

    `accounted` is the run's accountant's epsilon per group (None: not
    private), `accounted_pld` the PLD accountant's; each row carries both
    and the estimate's ratio to each.
    """
    planted = planted or {}
    accounted_pld = accounted_pld or {}
    included = self.canaries.included
    rows = []
    for i, name in enumerate(self.group_names):
      statistics, used = self.group_statistics(i, statistic, observe)
      mine = included[self.canaries.groups == i]
      inserted, null = statistics[mine], statistics[~mine]
      estimate = _estimate(null, inserted, delta, used == 'lr')
      eps, eps_pld = accounted.get(name), accounted_pld.get(name)
      rows.append({
          'group': name,
          'observe': observe,
          'statistic': used,
          'epsilon_accounted': eps,
          'epsilon_accounted_pld': eps_pld,
          'epsilon_estimate': estimate,
          'estimate_over_accounted': _ratio(estimate, eps),
          'estimate_over_accounted_pld': _ratio(estimate, eps_pld),
          'epsilon_lower_bound': auditing.one_run_audit(
              statistics, mine, delta),
          'planted_noise_scale': planted.get(name, 1.0),
          'canaries': int(mine.size),
          'canaries_inserted': int(inserted.size),
          'observations': (len(self._unit_updates) if observe == 'global'
                           else self.observations(i)),
          'mean_participations': float(
              self._participations[self.canaries.groups == i][mine].mean())
                                 if inserted.size else 0.0,
          'inserted_statistic': _moments(inserted),
          'null_statistic': _moments(null),
      })
    return rows


def format_line(row: dict[str, Any], key: str = 'group') -> str:
  """A report row as one line: <key>=<name> epsilon_accounted=<x>
  epsilon_estimate=<y> epsilon_lower_bound=<z> ('none' for no accounted
  epsilon, 'inf' for an unbounded estimate)."""

  def fmt(value):
    if value is None:
      return 'none'
    return 'inf' if math.isinf(value) else f'{value:.3f}'

  return (f'{key}={row["group"]} epsilon_accounted='
          f'{fmt(row["epsilon_accounted"])} epsilon_estimate='
          f'{fmt(row["epsilon_estimate"])} epsilon_lower_bound='
          f'{fmt(row["epsilon_lower_bound"])}')


def _ratio(estimate: float, accounted: Optional[float]) -> Optional[float]:
  if accounted is None or not accounted > 0:
    return None
  return estimate / accounted


def _estimate(null: np.ndarray, inserted: np.ndarray, delta: float,
              equal_variance: bool) -> float:
  if null.size < 2 or inserted.size < 2:
    return float('nan')  # Too few canaries on one side to fit a Gaussian.
  return auditing.estimate_epsilon(null, inserted, delta,
                                   equal_variance=equal_variance)


def _moments(values: np.ndarray) -> dict[str, float]:
  return {'mean': float(values.mean()) if values.size else float('nan'),
          'std': float(values.std(ddof=1)) if values.size > 1 else float('nan')}
