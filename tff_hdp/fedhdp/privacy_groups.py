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
"""Privacy groups, and who opts out.

Paper 001 (Section 4, Algorithm 2) splits the N clients into l groups
C_1..C_l by privacy level. Group i is averaged on its own,

    Delta_i = (1/N_i^t) sum_{j in C_i^t} Clip(Delta_j, S^t)
              + N(0, (z_i S^t / N_i^t)^2 I),

and the groups are combined with w_i = r_i N_i^t / sum_k r_k N_k^t. A group is
described here by a `PrivacyGroup`; an algorithm (paper 001, Section 5;
`tff_hdp.fedhdp.algorithm`) chooses the run's groups and maps each client to
one of them.

This module is TensorFlow-free.
"""

import dataclasses
from typing import Optional, Sequence

import numpy as np

PRIVATE = 'private'
NON_PRIVATE = 'non_private'


@dataclasses.dataclass(frozen=True)
class PrivacyGroup:
  """One privacy level and how its clients' updates are aggregated.

  Attributes:
    name: Metric and accounting name, e.g. 'private' or 'non_private'.
    noise_multiplier: Value noise multiplier z_i (noise stddev z_i S^t on the
      group's sum). None for a non-private group (z_i = 0, no accounting).
    ratio: The weight ratio r_i >= 0 of Algorithm 2 (w_i proportional to
      r_i N_i^t). Two groups: r = r_private / r_non_private.
    clip: Whether updates are clipped to S^t. Every group of Algorithm 2 is
      clipped; only the Non-Private baseline turns clipping off.
    ditto_lambda: Ditto's lambda for this group's clients (lambda_p/lambda_np).
    effective_noise_multiplier: z_eff, the value the accountant uses (value
      noise and clip-count noise together, see `clip_noise`); None when
      non-private.
  """

  name: str
  noise_multiplier: Optional[float]
  ratio: float = 1.0
  clip: bool = True
  ditto_lambda: float = 0.0
  effective_noise_multiplier: Optional[float] = None

  def __post_init__(self):
    if self.noise_multiplier is not None and self.noise_multiplier < 0:
      raise ValueError(f'group {self.name!r}: noise_multiplier must be >= 0 '
                       f'or None (non-private), got {self.noise_multiplier}')
    if not self.ratio >= 0:
      raise ValueError(
          f'group {self.name!r}: ratio must be >= 0, got {self.ratio}')
    if not self.ditto_lambda >= 0:
      raise ValueError(f'group {self.name!r}: ditto_lambda must be >= 0, got '
                       f'{self.ditto_lambda}')
    if self.noise_multiplier is not None and not self.clip:
      raise ValueError(f'group {self.name!r}: a private group must clip')

  @property
  def is_private(self) -> bool:
    return self.noise_multiplier is not None


def private_group_names(num_levels: int) -> list[str]:
  """'private' for one private level, else 'private_1', ..., 'private_l'."""
  if num_levels == 1:
    return [PRIVATE]
  return [f'{PRIVATE}_{i + 1}' for i in range(num_levels)]


def build_groups(algorithm,
                 *,
                 noise_multipliers: Sequence[float] = (0.0,),
                 effective_noise_multipliers: Optional[Sequence[float]] = None,
                 lambda_p: float = 0.0,
                 lambda_np: float = 0.0) -> tuple[PrivacyGroup, ...]:
  """The aggregation groups of `algorithm` (paper 001, Section 5).

  With l private levels, the private levels' groups (r = 1, Ditto's
  lambda_p) and the non-private (opt-out) group are made here, and
  `algorithm.combine` returns the run's groups from them: for FedHDP and
  HDP-FedAvg groups 0..l-1 are the levels and group l the opt-outs (FedHDP
  with its r_i), so `assign_groups` maps a client to its level, or to l if
  it opted out. The single-group baselines put every client in one group:
  everyone non-private (Non-Private, no clipping) or everyone private at the
  strictest level (DP-FedAvg), and they report under that group's name, as
  the papers' tables do.

  Args:
    algorithm: A `tff_hdp.fedhdp.algorithm.Algorithm`.
    noise_multipliers: Value noise multiplier z_i of each private level.
    effective_noise_multipliers: z_eff of each level (for accounting).
    lambda_p: Ditto lambda of private clients.
    lambda_np: Ditto lambda of non-private clients.

  Returns:
    The groups, indexed by the group ids that `assign_groups` gives clients.
  """
  levels = len(noise_multipliers)
  if levels < 1:
    raise ValueError('at least one private level is needed')
  if effective_noise_multipliers is None:
    effective_noise_multipliers = [None] * levels
  if len(effective_noise_multipliers) != levels:
    raise ValueError(f'{levels} private levels need {levels} values of '
                     f'z_eff, got {len(effective_noise_multipliers)}')
  private = [
      PrivacyGroup(name, noise_multiplier=z, ditto_lambda=lambda_p,
                   effective_noise_multiplier=z_eff)
      for name, z, z_eff in zip(private_group_names(levels),
                                noise_multipliers,
                                effective_noise_multipliers)
  ]
  non_private = PrivacyGroup(NON_PRIVATE, None, ditto_lambda=lambda_np)
  return tuple(algorithm.combine(tuple(private), non_private))


def assign_groups(algorithm,
                  opted_out: np.ndarray,
                  levels: Optional[np.ndarray] = None,
                  num_levels: Optional[int] = None) -> np.ndarray:
  """Maps each client to its group index in `build_groups(algorithm)`.

  Args:
    algorithm: A `tff_hdp.fedhdp.algorithm.Algorithm`.
    opted_out: Boolean array, True for clients that chose to opt out.
    levels: Private level (0..l-1) of each client that did not opt out;
      default all 0 (one private level).
    num_levels: l, the private levels of the groups (default: the highest
      level given plus one; give it when a level may have no client).

  Returns:
    int32 group ids (`algorithm.assign`): the client's level, or l if it
    opted out; all 0 for the single-group baselines.
  """
  opted_out = np.asarray(opted_out, dtype=bool)
  if levels is None:
    levels = np.zeros(opted_out.shape, np.int32)
  if num_levels is None:
    num_levels = int(np.max(levels, initial=0)) + 1
  return np.asarray(algorithm.assign(opted_out, np.asarray(levels),
                                     num_levels), np.int32)


def select_levels(opted_out: np.ndarray, level_fractions: Sequence[float],
                  seed: int) -> np.ndarray:
  """Assigns the clients that stay private to privacy levels, once.

  Level 0 is the default (strictest) level. `level_fractions[i]` is the
  fraction of the whole population at level i + 1, drawn uniformly among the
  clients that did not opt out, with a fixed seed.

  Returns:
    int32 level per client (0 for opted-out clients, whose level is unused).
  """
  opted_out = np.asarray(opted_out, dtype=bool)
  n = len(opted_out)
  counts = [int(round(f * n)) for f in level_fractions]
  private = np.flatnonzero(~opted_out)
  if any(f < 0 for f in level_fractions) or sum(counts) > len(private):
    raise ValueError(f'level fractions {list(level_fractions)} must be >= 0 '
                     f'and leave room within the {len(private)} private '
                     'clients')
  order = np.random.default_rng([seed, 0x1e7e1]).permutation(private)
  levels = np.zeros(n, np.int32)
  start = 0
  for i, count in enumerate(counts):
    levels[order[start:start + count]] = i + 1
    start += count
  return levels


def select_opt_outs(num_clients: int,
                    fraction: float,
                    seed: int,
                    *,
                    candidates: Optional[Sequence[int]] = None) -> np.ndarray:
  """Draws the opt-out clients once, uniformly, with a fixed seed.

  Paper 001 (Section 5): rho_np N clients opt out, drawn at random and kept
  fixed across all compared algorithms. The skewed variant (Table 9) draws
  them only among `candidates` (the clients holding digit 7).

  Args:
    num_clients: Population size N.
    fraction: rho_np in [0, 1).
    seed: Seed of the draw; the same seed gives the same set.
    candidates: Client indices eligible to opt out (default: everyone).

  Returns:
    Boolean array of length N, True for clients that opt out.
  """
  if not 0.0 <= fraction < 1.0:
    raise ValueError(f'opt-out fraction must be in [0, 1), got {fraction}')
  pool = np.arange(num_clients) if candidates is None else np.asarray(
      candidates)
  count = int(round(fraction * num_clients))
  if count > len(pool):
    raise ValueError(f'{count} opt-out clients requested but only '
                     f'{len(pool)} are eligible')
  rng = np.random.default_rng([seed, 0x0907])
  chosen = rng.choice(pool, size=count, replace=False)
  opted_out = np.zeros(num_clients, dtype=bool)
  opted_out[chosen] = True
  return opted_out
