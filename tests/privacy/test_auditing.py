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
"""tff_hdp.privacy.auditing: epsilon of two Gaussians, against independent
computations (dp_accounting's PLD of the Gaussian mechanism, a fine-grid
integral)."""

import functools
import math

import dp_accounting
from dp_accounting import pld
import numpy as np
import pytest
from scipy import stats

from tff_hdp.privacy import accounting
from tff_hdp.privacy import auditing


@functools.lru_cache()
def _pld_gaussian_epsilon(noise_multiplier, delta):
  accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
  accountant.compose(dp_accounting.GaussianDpEvent(noise_multiplier))
  return accountant.get_epsilon(delta)


@pytest.mark.parametrize('separation', [0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize('delta', [1e-3, 1e-5])
def test_equal_variances_are_the_gaussian_mechanism(separation, delta):
  # N(mu, s^2) against N(0, s^2) is the Gaussian mechanism with noise
  # multiplier s / mu; dp_accounting's PLD computes its epsilon independently.
  for scale in (1.0, 0.01):
    eps = auditing.gaussians_epsilon((separation * scale, scale), (0.0, scale),
                                     delta)
    expected = _pld_gaussian_epsilon(1.0 / separation, delta)
    assert eps == pytest.approx(expected, rel=2e-3, abs=2e-3)


def _grid_hockey_stick(eps, p, q):
  """The integral of max(0, p - e^eps q) by the trapezoid rule on 2M points
  (adaptive quadrature mis-handles the kinks where the integrand meets 0)."""
  lo = min(p[0] - 12 * p[1], q[0] - 12 * q[1])
  hi = max(p[0] + 12 * p[1], q[0] + 12 * q[1])
  x = np.linspace(lo, hi, 2_000_001)
  f = np.maximum(0.0, stats.norm.pdf(x, *p) - math.exp(eps) *
                 stats.norm.pdf(x, *q))
  return float(np.trapz(f, x))


@pytest.mark.parametrize('p,q', [((1.0, 2.0), (0.0, 1.0)),
                                 ((0.0, 0.5), (0.3, 1.0)),
                                 ((2.0, 1.5), (0.0, 1.0)),
                                 ((1.0, 1.0), (0.0, 1.0))])
@pytest.mark.parametrize('eps', [0.0, 0.5, 2.0])
def test_unequal_variances_match_quadrature(p, q, eps):
  assert auditing.hockey_stick(eps, p, q) == pytest.approx(
      _grid_hockey_stick(eps, p, q), abs=1e-8)


def test_epsilon_is_where_the_divergence_meets_delta():
  p, q, delta = (1.5, 1.3), (0.0, 1.0), 1e-4
  eps = auditing.gaussians_epsilon(p, q, delta)
  worst = max(auditing.hockey_stick(eps, p, q), auditing.hockey_stick(eps, q, p))
  assert worst == pytest.approx(delta, rel=1e-6)
  # Symmetric in its arguments, 0 for identical distributions, monotone.
  assert auditing.gaussians_epsilon(q, p, delta) == pytest.approx(eps)
  assert auditing.gaussians_epsilon(q, q, delta) == 0.0
  assert auditing.gaussians_epsilon((2.0, 1.3), q, delta) > eps


def test_estimate_from_samples_recovers_a_known_gaussian_mechanism():
  # Statistics drawn from N(2, 1) (canaries) and N(0, 1) (null): the estimate
  # approaches the Gaussian mechanism's epsilon at noise multiplier 1/2.
  rng = np.random.default_rng(0)
  null = rng.normal(0.0, 1.0, 200_000)
  canary = rng.normal(2.0, 1.0, 200_000)
  expected = _pld_gaussian_epsilon(0.5, 1e-5)
  estimate = auditing.estimate_epsilon(null, canary, 1e-5)
  # Sampling error of the fitted means/stds is about 0.3% here; epsilon is
  # roughly linear in the separation, so 3% is a wide, sound margin.
  assert estimate == pytest.approx(expected, rel=0.03)


def test_bad_input():
  with pytest.raises(ValueError, match='delta must be in'):
    auditing.gaussians_epsilon((1.0, 1.0), (0.0, 1.0), 0.0)
  with pytest.raises(ValueError, match='standard deviations must be > 0'):
    auditing.hockey_stick(0.0, (1.0, 0.0), (0.0, 1.0))
  with pytest.raises(ValueError, match='need at least 2'):
    auditing.estimate_epsilon([0.0], [1.0, 2.0], 1e-5)


def _algorithm3_p_value(m, r, v, eps, delta):
  """Steinke et al.'s Algorithm 3 as printed (a loop), for comparison."""
  q = 1 / (1 + math.exp(-eps))
  beta = stats.binom.sf(v - 1, r, q)
  alpha, total = 0.0, 0.0
  for i in range(1, v + 1):
    total += stats.binom.pmf(v - i, r, q)
    if total > i * alpha:
      alpha = total / i
  return min(beta + alpha * delta * 2 * m, 1.0)


@pytest.mark.parametrize('m,r,v', [(100, 20, 15), (1000, 100, 70),
                                   (50, 50, 50), (10, 4, 0)])
@pytest.mark.parametrize('eps', [0.0, 0.5, 2.0])
@pytest.mark.parametrize('delta', [0.0, 1e-5, 1e-2])
def test_one_run_p_value_is_algorithm_3(m, r, v, eps, delta):
  assert auditing.one_run_p_value(m, r, v, eps, delta) == pytest.approx(
      _algorithm3_p_value(m, r, v, eps, delta), rel=1e-10, abs=1e-15)


@pytest.mark.parametrize('r', [5, 20, 100])
def test_all_correct_guesses_at_delta_zero_give_the_closed_form(r):
  # p(eps) = q^r with q = e^eps / (1 + e^eps): rejected while q^r < 0.05.
  q = 0.05**(1 / r)
  expected = math.log(q / (1 - q))
  assert auditing.one_run_lower_bound(r, r, r, 0.0) == pytest.approx(
      expected, rel=1e-9)


def test_lower_bound_is_zero_for_chance_guessing():
  assert auditing.one_run_lower_bound(1000, 200, 100, 1e-5) == 0.0


def test_one_run_guesses_counts_top_and_bottom():
  scores = [5.0, 1.0, 4.0, 0.0, 3.0, 2.0]
  included = [True, False, False, False, True, True]
  # Top 2 are scores 5 (in) and 4 (out); bottom 2 are 0 (out) and 1 (out).
  assert auditing.one_run_guesses(scores, included, 2, 2) == (4, 3)
  assert auditing.one_run_guesses(scores, included, 0, 1) == (1, 1)
  with pytest.raises(ValueError, match='k_'):
    auditing.one_run_guesses(scores, included, 4, 3)


@pytest.mark.parametrize('separation', [1.0, 3.0])
def test_one_run_audit_is_sound_and_sees_gaussian_mechanism(separation):
  # Included canaries score N(mu, 1), excluded N(0, 1): each canary's score
  # is a Gaussian mechanism of noise multiplier 1/mu, (eps(delta), delta)-DP.
  # A sound bound never exceeds eps(delta); with mu = 3 it is well above 0.
  delta = 1e-5
  true_epsilon = _pld_gaussian_epsilon(1 / separation, delta)
  rng = np.random.default_rng(7)
  bounds = []
  for _ in range(20):
    included = rng.random(1000) < 0.5
    scores = rng.normal(size=1000) + separation * included
    bounds.append(auditing.one_run_audit(scores, included, delta))
  assert max(bounds) <= true_epsilon
  if separation == 3.0:
    assert min(bounds) > 1.0


def test_gaussians_epsilon_is_infinite_far_apart():
  assert auditing.gaussians_epsilon((10.0, 0.1), (0.0, 0.1), 1e-5) == math.inf


# ------------------------------------------- the likelihood-ratio statistic


def test_likelihood_ratio_is_the_mixture_log_density_ratio():
  # Independently: log of the mixture density over the null density, from
  # scipy's normal pdfs, summed over rounds; per-round s_t and sigma_t.
  rng = np.random.default_rng(0)
  x = rng.normal(0.0, 2.0, (5, 7))
  s = np.linspace(0.5, 2.0, 7)
  sigma = np.linspace(1.0, 3.0, 7)
  for q in (0.05, 0.3, 1.0):
    mixture = q * stats.norm.pdf(x, s, sigma) + (1 - q) * stats.norm.pdf(
        x, 0.0, sigma)
    want = np.log(mixture / stats.norm.pdf(x, 0.0, sigma)).sum(axis=1)
    got = auditing.likelihood_ratio_statistic(x, s, sigma, q)
    np.testing.assert_allclose(got, want, rtol=1e-10)
  # And by hand, one canary, one round: log(1 - q + q e^((s x - s^2/2)/sigma^2)).
  got = auditing.likelihood_ratio_statistic([[3.0]], [2.0], [1.5], 0.2)
  assert got[0] == pytest.approx(
      math.log(0.8 + 0.2 * math.exp((6.0 - 2.0) / 2.25)), rel=1e-12)


def test_likelihood_ratio_does_not_overflow():
  # a = 1e4: a naive exp overflows; the statistic is log q + a.
  got = auditing.likelihood_ratio_statistic([[1e4 + 0.5]], [1.0], [1.0], 0.1)
  assert got[0] == pytest.approx(math.log(0.1) + 1e4, rel=1e-12)
  with pytest.raises(ValueError, match='rate must be in'):
    auditing.likelihood_ratio_statistic([[0.0]], [1.0], [1.0], 1.5)
  assert auditing.likelihood_ratio_statistic([[5.0]], [1.0], [1.0],
                                             0.0)[0] == 0.0
  with pytest.raises(ValueError, match='noise_std must be > 0'):
    auditing.likelihood_ratio_statistic([[0.0]], [1.0], [0.0], 0.5)


def _auc(inserted, null):
  """P(an inserted canary's statistic > a null one's) (Mann-Whitney)."""
  u = stats.mannwhitneyu(inserted, null, alternative='greater').statistic
  return u / (len(inserted) * len(null))


def test_likelihood_ratio_separates_better_than_sum_and_max():
  # 1,000 inserted and 1,000 null canaries over 100 rounds; an inserted one
  # is sampled with q = 0.05 and then adds s = 2 under noise sigma = 1. With
  # this seed: AUC 0.874 (lr), 0.758 (sum), 0.815 (max). An AUC from 1,000
  # against 1,000 has a standard error below 0.011, so the 0.03 margin asked
  # here is about 3 of them (the measured one is 6).
  rng = np.random.default_rng(1)
  k, t, q, s, sigma = 1000, 100, 0.05, 2.0, 1.0
  null = rng.normal(0.0, sigma, (k, t))
  inserted = rng.normal(0.0, sigma, (k, t)) + s * (rng.random((k, t)) < q)
  auc = {
      'lr': _auc(auditing.likelihood_ratio_statistic(inserted, s, sigma, q),
                 auditing.likelihood_ratio_statistic(null, s, sigma, q)),
      'sum': _auc(inserted.sum(axis=1), null.sum(axis=1)),
      'max': _auc(inserted.max(axis=1), null.max(axis=1)),
  }
  assert auc['sum'] > 0.5 and auc['max'] > 0.5, auc
  assert auc['lr'] - max(auc['sum'], auc['max']) > 0.03, auc


@pytest.mark.parametrize('q, z, rounds', [(0.2, 2.0, 100), (0.2, 1.55, 100),
                                           (0.05, 1.0, 600)])
def test_equal_variance_lr_estimate_is_tight_and_sees_halved_noise(q, z,
                                                                   rounds):
  # Simulated release observations of 2,000 canaries (about half inserted):
  # x_t = 1[sampled] + N(0, z^2). The equal-variance (GDP) fit of the LR
  # statistic lands between 0.5 and 1.05 of the RDP epsilon (below the PLD
  # one, the mechanism's exact epsilon up to discretisation), and above RDP
  # once the noise is halved while the statistic keeps the claimed z. With
  # this seed the ratios to RDP are 0.81, 0.77, 0.79 (PLD's: 0.90) and,
  # halved, 1.89, 1.82, 2.12; the free-variance fit overshoots RDP itself
  # (1.12, 1.21, 1.27), which is why the LR statistic is fitted this way.
  delta, m = 1e-4, 2000
  rdp = accounting.compute_epsilon(q, z, rounds, delta)
  pld = accounting.compute_epsilon(q, z, rounds, delta, accountant='pld')
  for factor in (1.0, 0.5):
    rng = np.random.default_rng(7)
    included = rng.random(m) < 0.5
    sampled = (rng.random((m, rounds)) < q) & included[:, None]
    x = rng.standard_normal((m, rounds)) * z * factor + sampled
    lr = auditing.likelihood_ratio_statistic(x, 1.0, z, q)
    estimate = auditing.estimate_epsilon(lr[~included], lr[included], delta,
                                         equal_variance=True)
    if factor == 1.0:
      assert 0.5 * rdp <= estimate <= pld, (estimate, pld, rdp)
      free = auditing.estimate_epsilon(lr[~included], lr[included], delta)
      assert free > rdp, (free, rdp)
    else:
      assert estimate > 1.2 * rdp, (estimate, rdp)


def test_noiseless_statistics_give_infinite_or_zero_epsilon():
  assert auditing.estimate_epsilon([0.0, 0.0], [1.0, 1.0], 1e-5,
                                   equal_variance=True) == math.inf
  assert auditing.estimate_epsilon([1.0, 1.0], [1.0, 1.0], 1e-5) == 0.0
