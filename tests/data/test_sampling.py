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
"""Cohort sampling: Poisson cohorts are what the accountant assumes."""

import numpy as np
from scipy import stats

from tff_hdp.data import sampling
from tff_hdp.privacy import mechanism_key


def _rng(seed, round_num):
  """Round `round_num`'s generator under the key of mechanism seed `seed`."""
  return mechanism_key.round_rng(mechanism_key.new_key(seed), round_num)


def test_poisson_cohort_sizes_are_binomial():
  # FedHDP's default: each of N clients independently with probability q,
  # so the cohort size is Binomial(N, q). A chi-square goodness of fit over
  # 4,000 rounds (bins pooled to >= 5 expected), fixed seed.
  n, q, rounds = 200, 0.2, 4000
  sizes = np.array([
      len(sampling.sample_cohort(n, 0, _rng(7, t),
                                 poisson=True, sampling_rate=q))
      for t in range(rounds)])
  lo, hi = stats.binom.ppf([1e-3, 1 - 1e-3], n, q).astype(int)
  edges = np.arange(lo, hi + 2)
  observed = np.array([(sizes < lo).sum()] +
                      [(sizes == k).sum() for k in edges[:-1]] +
                      [(sizes > hi).sum()])
  probs = np.concatenate([[stats.binom.cdf(lo - 1, n, q)],
                          stats.binom.pmf(edges[:-1], n, q),
                          [stats.binom.sf(hi, n, q)]])
  expected = rounds * probs
  # Pool neighbouring bins until each expects >= 5.
  pooled_o, pooled_e, acc_o, acc_e = [], [], 0.0, 0.0
  for o, e in zip(observed, expected):
    acc_o, acc_e = acc_o + o, acc_e + e
    if acc_e >= 5:
      pooled_o.append(acc_o)
      pooled_e.append(acc_e)
      acc_o = acc_e = 0.0
  pooled_o[-1] += acc_o
  pooled_e[-1] += acc_e
  _, p_value = stats.chisquare(pooled_o, pooled_e)
  assert p_value > 1e-3, p_value
  # Mean and variance against N q and N q (1 - q), 5 standard errors.
  assert abs(sizes.mean() - n * q) < 5 * np.sqrt(n * q * (1 - q) / rounds)
  assert abs(sizes.var() / (n * q * (1 - q)) - 1) < 5 * np.sqrt(2 / rounds)


def test_poisson_cohorts_include_each_client_at_rate_q():
  n, q, rounds = 50, 0.1, 4000
  hits = np.zeros(n)
  for t in range(rounds):
    hits[sampling.sample_cohort(n, 0, _rng(3, t), poisson=True,
                                sampling_rate=q)] += 1
  _, p_value = stats.chisquare(hits)  # Uniform across clients.
  assert p_value > 1e-3, p_value
  assert abs(hits.sum() / (n * rounds) - q) < 5 * np.sqrt(
      q * (1 - q) / (n * rounds))


def test_fixed_cohorts_have_the_asked_size_and_no_repeats():
  for t in range(20):
    cohort = sampling.sample_cohort(200, 40, _rng(1, t))
    assert len(cohort) == 40 == len(set(cohort.tolist()))


def test_a_round_draws_the_same_cohort_when_resumed():
  a = sampling.sample_cohort(100, 0, _rng(5, 17), poisson=True,
                             sampling_rate=0.3)
  b = sampling.sample_cohort(100, 0, _rng(5, 17), poisson=True,
                             sampling_rate=0.3)
  np.testing.assert_array_equal(a, b)
