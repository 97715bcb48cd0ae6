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

What is audited: the whole training run as the accountant describes it, a
client-level guarantee per privacy group i: the sequence of global models
(all iterates) is (epsilon_i, delta)-DP with respect to adding or removing one
client of group i. `training.train(..., audit=FedHdpAudit(...))` adds
`canaries_per_group` canary clients (`tff_hdp.privacy.canaries`) to every
group. A canary of group i is, to the server, an ordinary client of group i:
each round it is sampled with probability q, its update is its direction
scaled to `CANARY_NORM_FACTOR` x S^t (beyond the clip norm, so the group's
query clips it to S^t c_k), it is counted in N_i^t and its clip-count record
is b = 0. Canaries have no data and no personal model, so the real clients'
metrics (global and Ditto accuracies, per client and averaged) are computed
over the real clients only; the global model they are measured on does carry
the canaries' updates, as in Andrew et al.

After training, per group: Andrew et al.'s one-shot estimate (Gaussian fits
to the statistics of the inserted canaries and of the never-inserted ones,
then the epsilon between them at the run's delta) and Steinke et al.'s lower
bound at 95% confidence (`tff_hdp.privacy.auditing`).

The positive control `planted_noise_scale` multiplies the value noise z_i of
the named groups by f in the mechanism only; the accountant keeps the
configured z_eff. It exists to check that the audit can see a bug, and only
`run_scripts/audit_privacy.py` accepts it.

Only the vectorized backend takes canaries (`VectorizedBackend.next`'s
`extra_updates`); TFF's runtime would need them as clients with data.
"""

import dataclasses
from typing import Any, Optional, Sequence

import numpy as np

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
               planted_groups: Optional[Sequence[str]] = None):
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
    """
    self.planted_groups = planted_group_names(groups, planted_noise_scale,
                                              planted_groups)
    self.groups = tuple(groups)
    self.shapes = [tuple(s) for s in spec.shapes]
    self.planted_noise_scale = float(planted_noise_scale)
    self.audit = canary_audit.CanaryAudit(
        [g.name for g in groups], canaries_per_group, spec.num_parameters,
        sampling_rate, seed)
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

  def observe(self, old_weights, new_weights) -> None:
    """Records the round's global update Delta_t (all iterates observed)."""
    self.audit.observe(old_weights, new_weights)

  def report(self, epsilon: dict[str, float], delta: float,
             statistic: str = 'max') -> list[dict[str, Any]]:
    """One record per group: accounted, estimated and lower-bound epsilon."""
    return self.audit.report(
        epsilon, delta, statistic,
        {name: self.planted_noise_scale for name in self.planted_groups})
