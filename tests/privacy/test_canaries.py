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
"""tff_hdp.privacy.canaries: directions, insertion, sampling rate, statistic."""

import numpy as np
import pytest
from scipy import stats

from tff_hdp.privacy import canaries


def test_small_frames_are_orthonormal_within_a_group_and_uniform():
  a = canaries.CanarySet(50, 2, 200, seed=3)
  assert a.orthogonal
  d = a.directions(range(100))
  np.testing.assert_array_equal(d, canaries.CanarySet(50, 2, 200, seed=3)
                                .directions(range(100)))
  for group in (d[:50], d[50:]):
    np.testing.assert_allclose(group @ group.T, np.eye(50), atol=1e-5)
  # Two groups' frames are independent, not orthogonal to each other.
  assert np.abs(d[:50] @ d[50:].T).max() > 0.1
  # Each direction is uniform on the sphere: a fixed coordinate of c_k
  # times sqrt(d) is close to N(0, 1) over many draws (KS test, fixed seed).
  first = np.concatenate([
      canaries.CanarySet(50, 1, 200, seed=s).directions(range(50))[:, 0]
      for s in range(40)]) * np.sqrt(200)
  assert stats.kstest(first, 'norm').pvalue > 0.01


def test_large_frames_are_independent_and_nearly_orthogonal():
  a = canaries.CanarySet(20, 2, 4000, seed=3)
  a.orthogonal = False  # As for a frame above ORTHOGONAL_BYTES.
  b = canaries.CanarySet(20, 2, 4000, seed=3)
  d = a.directions(range(40))
  np.testing.assert_allclose(np.linalg.norm(d, axis=1), 1.0, rtol=1e-6)
  b.orthogonal = False
  np.testing.assert_array_equal(d, b.directions(range(40)))
  np.testing.assert_array_equal(d[[5, 7]], a.directions([5, 7]))
  gram = d @ d.T - np.eye(40)
  # Off-diagonal cosines of random unit vectors in d = 4000: std 1/sqrt(d).
  assert np.abs(gram).max() < 6 / np.sqrt(4000)
  c = canaries.CanarySet(20, 2, 4000, seed=4)
  c.orthogonal = False
  assert not np.array_equal(d, c.directions(range(40)))
  assert not canaries.CanarySet(10, 1, 2**26, seed=0).orthogonal


def test_each_group_holds_m_canaries_inserted_with_probability_half():
  s = canaries.CanarySet(1000, 3, 10, seed=0)
  np.testing.assert_array_equal(np.bincount(s.groups), [1000] * 3)
  # Binomial(3000, 1/2): a two-sided test at level 1e-4 (fixed seed).
  inserted = int(s.included.sum())
  assert stats.binomtest(inserted, 3000, 0.5).pvalue > 1e-4


@pytest.mark.parametrize('rate', [0.03, 0.2])
def test_sampling_follows_the_rate_and_only_inserted_canaries(rate):
  s = canaries.CanarySet(200, 2, 10, seed=1)
  rounds = 300
  counts = np.zeros(len(s), np.int64)
  for t in range(rounds):
    taken = s.sample(t, rate)
    assert len(np.unique(taken)) == len(taken)
    counts[taken] += 1
  assert not counts[~s.included].any()
  # Independent Bernoulli(q) per inserted canary and round.
  total = int(counts[s.included].sum())
  trials = int(s.included.sum()) * rounds
  assert stats.binomtest(total, trials, rate).pvalue > 1e-4
  # A canary's participations are Binomial(T, q): compare the spread too.
  per_canary = counts[s.included]
  assert per_canary.var() == pytest.approx(rounds * rate * (1 - rate),
                                           rel=0.25)
  np.testing.assert_array_equal(s.sample(5, rate), s.sample(5, rate))


def test_statistics_max_and_sum_of_cosines():
  s = canaries.CanarySet(3, 2, 50, seed=2)
  rng = np.random.default_rng(0)
  updates = rng.normal(size=(4, 50))
  updates[2] = s.directions([4])[0] * 7.0  # Round 2 is canary 4 itself.
  unit = updates / np.linalg.norm(updates, axis=1, keepdims=True)
  cosines = unit @ s.directions(range(6)).T
  maxima = s.statistics(unit, 'max', chunk=4)
  np.testing.assert_allclose(maxima, cosines.max(0), rtol=1e-5, atol=1e-6)
  assert maxima[4] == pytest.approx(1.0, abs=1e-6)
  np.testing.assert_allclose(s.statistics(unit, 'sum'), cosines.sum(0) / 2,
                             rtol=1e-5, atol=1e-6)
  with pytest.raises(ValueError, match='allowed: max, sum'):
    s.statistics(unit, 'mean')
  with pytest.raises(ValueError, match=r'\[T >= 1, 50\]'):
    s.statistics(unit[:, :10])


def test_bad_arguments():
  with pytest.raises(ValueError, match='canaries_per_group'):
    canaries.CanarySet(1, 2, 10, seed=0)
  with pytest.raises(ValueError, match='rate'):
    canaries.CanarySet(2, 2, 10, seed=0).sample(0, 1.5)


def test_release_audit_of_a_group_never_released_estimates_zero():
  from tff_hdp.privacy import canary_audit  # pylint: disable=g-import-not-at-top
  audit = canary_audit.CanaryAudit(['a', 'b'], 10, 50, 0.5, seed=0,
                                   noise_multipliers=[1.0, 1.0])
  rng = np.random.default_rng(0)
  for _ in range(5):
    audit.observe_release(0, [rng.normal(size=50)], 1.0)
  rows = audit.report({'a': 1.0, 'b': 1.0}, 1e-5)
  assert rows[0]['observations'] == 5 and rows[1]['observations'] == 0
  assert rows[1]['epsilon_estimate'] == 0.0
  assert rows[1]['epsilon_lower_bound'] == 0.0
