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
user-level DP (`tff_hdp.udp`). `training.train(..., audit=UdpAudit(...))`
adds m canary users (`tff_hdp.privacy.canary_audit`), each inserted with
probability 1/2 and, once inserted, sampled every round with probability q
like any user. A sampled canary's record in the estimator is its clipped,
weighted hypernetwork gradient chosen as the worst case of Lemma 3.1: a fixed
direction c_k of phi's space at norm S with weight max_u w_u, so it adds
max_w S c_k to sum_u w_u Clip(g_u, S) before the noise. Canaries have no
data, no embedding and no model, so the real users' metrics are theirs
alone; W (the estimator's denominator) stays the real users' (a public
constant of the run).

What the auditor observes (`tff_hdp.privacy.canary_audit`):
`observe='release'` (default) is the noised estimator itself, every round:
its sum sum_u w_u Clip(g_u, S) + records + N(0, (z max_w S)^2 I) minus the
real users' weighted clipped gradients (which DP's adversary may know),
divided by max_w S; the LR statistic reads it with the claimed z.
`observe='global'` is phi's round step, read by the cosine statistics. The
report is `canary_audit`'s: the RDP and PLD epsilons, Andrew et al.'s
estimate and Steinke et al.'s lower bound. A planted fault
(`planted_noise_scale`) multiplies the mechanism's z, not the accountant's
nor the statistic's.
"""

from typing import Any, Optional

import numpy as np

from tff_hdp.privacy import canary_audit
from tff_hdp.udp import hypernetwork

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
