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
"""Canary clients for auditing a federated run (shared; numpy only).

Andrew et al. (ICLR 2024, arXiv:2302.03098): a canary is a client whose
update is a fixed random unit direction c_k of the model space, scaled beyond
the clip norm (so its clipped update is S^t c_k); in high dimension the
directions are nearly orthogonal to each other and to every real update.
Every round each canary is sampled like a client, and after training the
auditor computes its statistic, the largest cosine over rounds between the
round's global update and c_k ("all iterates observed").

One set serves both audits of `auditing`: each canary is inserted into the
run with probability 1/2 (Steinke et al.'s one-run audit needs exactly this
randomisation), and the never-inserted ones are the random directions that
Andrew et al. compare the inserted ones with (a never-inserted canary is a
fresh random direction that the run never saw). Inserted canaries are
sampled each round independently with probability q (Poisson sampling: the
accountant's assumption, exactly).

Within a group the directions are exactly orthonormal when the group's
m x d frame fits in `ORTHOGONAL_BYTES` (and m <= d): a uniformly random
orthonormal frame, the QR factor of an m x d Gaussian matrix, each c_k still
uniform on the sphere. Independent directions would give each canary's
projections a persistent offset sum_j <c_j, c_k> over the other sampled
canaries, which lowers the estimates when m is not small against d (how
much: docs/audit.md, "Canaries"). Larger frames (UDP-Alg's hypernetwork)
are drawn index by index, independent, from (seed, canary index), and
regenerated when needed; at that d the offset is negligible.
"""

from typing import Optional, Sequence

import numpy as np

REDUCTIONS = ('max', 'sum')

# Separates the canaries' random streams from the run's own (sampling.py).
_STREAM = 0xCA4A
# Largest group frame (m x d float32) drawn exactly orthogonal and kept.
ORTHOGONAL_BYTES = 256 * 2**20


class CanarySet:
  """m canaries in each of several groups, each inserted with probability 1/2.

  Attributes:
    groups: [M] the group of each canary (canaries of group i are
      m * i .. m * (i + 1) - 1).
    included: [M] whether each canary is inserted into the run.
    dimension: d, the number of model parameters.
  """

  def __init__(self, canaries_per_group: int, num_groups: int,
               dimension: int, seed: int):
    if canaries_per_group < 2:
      raise ValueError(
          f'canaries_per_group must be >= 2, got {canaries_per_group}')
    if num_groups < 1 or dimension < 1:
      raise ValueError(f'need num_groups >= 1 and dimension >= 1, got '
                       f'{num_groups} and {dimension}')
    self.canaries_per_group = canaries_per_group
    self.dimension = dimension
    self._seed = seed
    self.groups = np.repeat(np.arange(num_groups, dtype=np.int32),
                            canaries_per_group)
    rng = np.random.default_rng([seed, _STREAM, 0])
    self.included = rng.random(self.groups.size) < 0.5
    self.orthogonal = (canaries_per_group <= dimension and
                       4 * canaries_per_group * dimension <= ORTHOGONAL_BYTES)
    self._frames = {}

  def __len__(self) -> int:
    return self.groups.size

  def _frame(self, group: int) -> np.ndarray:
    """[m, d] the orthonormal directions of group `group` (module doc)."""
    frame = self._frames.get(group)
    if frame is None:
      gaussian = np.random.default_rng(
          [self._seed, _STREAM, 3, group]).standard_normal(
              (self.dimension, self.canaries_per_group), np.float32)
      q, r = np.linalg.qr(gaussian)
      # Signs of R's diagonal on Q: the Haar-distributed frame (Mezzadri 2007).
      frame = (q * np.sign(np.diag(r))).T.copy()
      self._frames[group] = frame
    return frame

  def directions(self, indices: Sequence[int]) -> np.ndarray:
    """[len(indices), d] float32 unit vectors c_k (uniform on the sphere;
    orthogonal within a group when `orthogonal`, module doc)."""
    out = np.empty((len(indices), self.dimension), np.float32)
    if self.orthogonal:
      m = self.canaries_per_group
      for row, k in enumerate(indices):
        out[row] = self._frame(int(k) // m)[int(k) % m]
      return out
    for row, k in enumerate(indices):
      # float32 draws: faster than float64 ones (docs/performance.md), which
      # matters at UDP-Alg's millions of hypernetwork parameters.
      v = np.random.default_rng([self._seed, _STREAM, 1, int(k)
                                 ]).standard_normal(self.dimension, np.float32)
      out[row] = v / np.linalg.norm(v.astype(np.float64))
    return out

  def sample(self, round_num: int, rate: float) -> np.ndarray:
    """Inserted canaries taking part in round `round_num` (probability q)."""
    if not 0 <= rate <= 1:
      raise ValueError(f'rate must be in [0, 1], got {rate}')
    rng = np.random.default_rng([self._seed, _STREAM, 2, round_num])
    taken = rng.random(self.groups.size) < rate
    return np.flatnonzero(taken & self.included)

  def projections(self, observations: np.ndarray, indices: Sequence[int],
                  chunk: Optional[int] = None) -> np.ndarray:
    """[len(indices), T] <o_t, c_k> of the canaries `indices` on each of the
    T observations [T, d] (directions generated `chunk` at a time; default
    as many as fit in 256 MB, at most 128)."""
    if chunk is None:
      chunk = max(1, min(128, 2**26 // self.dimension))
    observations = np.asarray(observations, np.float32)
    if observations.ndim != 2 or observations.shape[1] != self.dimension:
      raise ValueError(f'observations must be [T, {self.dimension}], got '
                       f'{observations.shape}')
    indices = np.asarray(indices)
    out = np.empty((indices.size, observations.shape[0]), np.float64)
    for start in range(0, indices.size, chunk):
      rows = indices[start:start + chunk]
      out[start:start + rows.size] = self.directions(rows) @ observations.T
    return out

  def statistics(self, unit_updates: np.ndarray, reduce: str = 'max',
                 chunk: int = 256) -> np.ndarray:
    """[M] statistic of every canary from the cosines cos(Delta_t, c_k).

    Args:
      unit_updates: [T, d] the rounds' global updates, each scaled to norm 1.
      reduce: 'max' over rounds (Andrew et al.'s all-iterates statistic) or
        'sum' over rounds divided by sqrt(T).
      chunk: Canaries whose directions are generated at once.
    """
    if reduce not in REDUCTIONS:
      raise ValueError(f'unknown reduce {reduce!r}; allowed: '
                       f'{", ".join(REDUCTIONS)}')
    updates = np.asarray(unit_updates, np.float32)
    if updates.ndim != 2 or updates.shape[1] != self.dimension or (
        updates.shape[0] < 1):
      raise ValueError(f'unit_updates must be [T >= 1, {self.dimension}], got '
                       f'{updates.shape}')
    out = np.empty(len(self), np.float64)
    for start in range(0, len(self), chunk):
      rows = range(start, min(start + chunk, len(self)))
      cosines = updates @ self.directions(rows).T
      out[start:rows.stop] = (cosines.max(axis=0) if reduce == 'max' else
                              cosines.sum(axis=0) / np.sqrt(len(updates)))
    return out
