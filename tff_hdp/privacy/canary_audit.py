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

What FedHDP's audit (`tff_hdp.fedhdp.audit`) and UDP-Alg's
(`tff_hdp.udp.audit`) share: the canaries of each audited group
(`canaries.CanarySet`, inserted with probability 1/2, Poisson-sampled at
rate q), the observed rounds' updates (all iterates), and the report per
group: the accounted epsilon beside Andrew et al.'s estimate and Steinke et
al.'s lower bound (`auditing`). How a sampled canary enters the mechanism is
the system's business.
"""

import math
from typing import Any, Optional, Sequence

import numpy as np

from tff_hdp.privacy import auditing
from tff_hdp.privacy import canaries as canaries_lib


class CanaryAudit:
  """Canaries of several groups, the observed updates, and the report."""

  def __init__(self, group_names: Sequence[str], canaries_per_group: int,
               dimension: int, sampling_rate: float, seed: int):
    self.group_names = tuple(group_names)
    self.sampling_rate = sampling_rate
    self.canaries = canaries_lib.CanarySet(
        canaries_per_group, len(self.group_names), dimension, seed)
    self._unit_updates = []
    self._participations = np.zeros(len(self.canaries), np.int64)

  def sample(self, round_num: int) -> np.ndarray:
    """The inserted canaries taking part in round `round_num`."""
    taken = self.canaries.sample(round_num, self.sampling_rate)
    self._participations[taken] += 1
    return taken

  def observe(self, old_weights, new_weights) -> None:
    """Records the round's update of the released model (all iterates)."""
    delta = np.concatenate([
        (np.asarray(n, np.float32) - np.asarray(o, np.float32)).ravel()
        for o, n in zip(old_weights, new_weights)
    ])
    norm = np.linalg.norm(delta)
    if norm > 0:  # A round that changed nothing carries no signal.
      self._unit_updates.append(delta / norm)

  def report(self, accounted: dict[str, Optional[float]], delta: float,
             statistic: str = 'max',
             planted: Optional[dict[str, float]] = None
             ) -> list[dict[str, Any]]:
    """One record per group: accounted, estimated and lower-bound epsilon."""
    planted = planted or {}
    statistics = self.canaries.statistics(np.stack(self._unit_updates),
                                          statistic)
    included = self.canaries.included
    rows = []
    for i, name in enumerate(self.group_names):
      mine = self.canaries.groups == i
      inserted = statistics[mine & included]
      null = statistics[mine & ~included]
      rows.append({
          'group': name,
          'statistic': statistic,
          'epsilon_accounted': accounted.get(name),
          'epsilon_estimate': _estimate(null, inserted, delta),
          'epsilon_lower_bound': auditing.one_run_audit(
              statistics[mine], included[mine], delta),
          'planted_noise_scale': planted.get(name, 1.0),
          'canaries': int(mine.sum()),
          'canaries_inserted': int(inserted.size),
          'mean_participations': float(
              self._participations[mine & included].mean())
                                 if inserted.size else 0.0,
          'inserted_statistic': _moments(inserted),
          'null_statistic': _moments(null),
      })
    return rows


def format_line(row: dict[str, Any]) -> str:
  """A report row as one line: group=<name> epsilon_accounted=<x>
  epsilon_estimate=<y> epsilon_lower_bound=<z> ('none' for no accounted
  epsilon, 'inf' for an unbounded estimate)."""

  def fmt(value):
    if value is None:
      return 'none'
    return 'inf' if math.isinf(value) else f'{value:.3f}'

  return (f'group={row["group"]} epsilon_accounted='
          f'{fmt(row["epsilon_accounted"])} epsilon_estimate='
          f'{fmt(row["epsilon_estimate"])} epsilon_lower_bound='
          f'{fmt(row["epsilon_lower_bound"])}')


def _estimate(null: np.ndarray, inserted: np.ndarray, delta: float) -> float:
  if null.size < 2 or inserted.size < 2:
    return float('nan')  # Too few canaries on one side to fit a Gaussian.
  return auditing.estimate_epsilon(null, inserted, delta)


def _moments(values: np.ndarray) -> dict[str, float]:
  return {'mean': float(values.mean()) if values.size else float('nan'),
          'std': float(values.std(ddof=1)) if values.size > 1 else float('nan')}
