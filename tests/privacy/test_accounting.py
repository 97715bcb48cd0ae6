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
"""Tests for tff_hdp.privacy.accounting.

Three kinds of checks:
  * paper values: Table 7 of paper 001 (epsilon at delta = 1e-4, T = 500);
  * an independent re-derivation of epsilon that does not use `dp_accounting`:
    A_alpha by numerical integration (scipy.integrate.quad) and by the binomial
    closed form, RDP -> (eps, delta) by the conversion formula of Balle et al.
    2020, Prop. 12 (the one `dp_accounting` uses);
  * the classic conversion on Opacus's orders, as Robust-HDP calibrates.

The ledger is tested in test_privacy_ledger.py, FedHDP's split of z_eff into
(z, z_b) in tests/fedhdp/test_clip_noise.py.
"""

import math
from unittest import mock

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
from scipy import integrate
from scipy import special

from tff_hdp.privacy import accounting
from tff_hdp.robust_hdp import privacy_preferences


# dp_accounting's default RDP orders, written out (not imported) so that the
# reference below shares nothing with the code under test.
_ORDERS = ([1 + x / 10.0 for x in range(1, 100)] + list(range(11, 64)) +
           [128, 256, 512, 1024])
_INTEGER_ORDERS = list(range(2, 65)) + [128, 256]


# ----------------------------------------------------------------------------
# Independent reference (Mironov, Talwar, Zhang 2019; Balle et al. 2020).
# ----------------------------------------------------------------------------


def _log_a_quad(q, sigma, alpha):
  """log A_alpha = log E_{x~N(0,s^2)}[((1-q) + q exp((2x-1)/(2 s^2)))^alpha].

  Integrated with scipy.integrate.quad in a log-shifted form: the integrand
  has a mode near x = 0 and, for large alpha, one near x = alpha; the interval
  [-40 s, alpha + 40 s] holds all but exp(-800) of the mass.
  """
  s2 = sigma**2

  def log_integrand(x):
    log_ratio = np.logaddexp(np.log1p(-q), np.log(q) + (2 * x - 1) / (2 * s2))
    return (alpha * log_ratio - x * x / (2 * s2) -
            0.5 * np.log(2 * np.pi * s2))

  lo, hi = -40.0 * sigma, alpha + 40.0 * sigma
  grid = np.linspace(lo, hi, 20001)
  values = log_integrand(grid)
  peak = float(values.max())
  breaks = sorted({0.0, float(alpha), float(grid[np.argmax(values)])})
  integral, _ = integrate.quad(
      lambda x: np.exp(log_integrand(x) - peak),
      lo,
      hi,
      points=breaks,
      limit=1000,
      epsabs=0.0,
      epsrel=1e-12)
  return peak + math.log(integral)


def _log_a_binomial(q, sigma, alpha):
  """Integer alpha: sum_k C(alpha,k) (1-q)^(alpha-k) q^k e^((k^2-k)/(2s^2))."""
  k = np.arange(alpha + 1)
  log_terms = (
      special.gammaln(alpha + 1) - special.gammaln(k + 1) -
      special.gammaln(alpha - k + 1) + k * np.log(q) +
      (alpha - k) * np.log1p(-q) + (k * k - k) / (2 * sigma**2))
  return float(special.logsumexp(log_terms))


def _reference_rdp(q, sigma, rounds, orders, log_a):
  return np.array([rounds * log_a(q, sigma, a) / (a - 1) for a in orders])


def _reference_epsilon(orders, rdp, delta):
  """(eps, delta) from RDP: Balle et al. 2020 Prop. 12, minimised over orders.

  eps(alpha) = rdp + log(1 - 1/alpha) - (log(delta) + log(alpha)) / (alpha-1),
  with eps = 0 when the KL bound delta >= sqrt(1 - exp(-rdp)) already holds
  (Bretagnolle-Huber: TV <= sqrt(1 - exp(-KL)), KL <= rdp(alpha)), and orders
  alpha <= 1.01 skipped as numerically unstable.
  """
  best = math.inf
  for a, r in zip(orders, rdp):
    if delta >= math.sqrt(-math.expm1(-r)):
      eps = 0.0
    elif a > 1.01:
      eps = r + math.log1p(-1 / a) - (math.log(delta) + math.log(a)) / (a - 1)
    else:
      eps = math.inf
    best = min(best, eps)
  return max(0.0, best)


def _random_settings(seed, n):
  rng = np.random.default_rng(seed)
  for _ in range(n):
    q = float(10**rng.uniform(-3, np.log10(0.5)))
    z = float(rng.uniform(0.6, 5))
    rounds = int(rng.integers(1, 2001))
    delta = float(10**rng.uniform(-8, -3))
    yield q, z, rounds, delta


class ComputeEpsilonTest(parameterized.TestCase):

  @parameterized.named_parameters(
      # Paper 001, Table 7 / Tables 8, 10, 11: (q, z_eff, T, delta) -> eps.
      ('mnist', 0.05, 1.5, 500, 1e-4, 3.6),
      ('fmnist', 0.03, 4.0, 500, 1e-4, 0.6),
      ('femnist', 0.03, 1.0, 500, 1e-4, 4.1),
  )
  def test_paper_table7(self, q, z, rounds, delta, paper_eps):
    eps = accounting.compute_epsilon(q, z, rounds, delta)
    # Measured: 3.6081, 0.5759, 4.1220; the paper rounds to one decimal.
    self.assertEqual(round(eps, 1), paper_eps)
    self.assertLess(abs(eps - paper_eps), 0.05)

  @parameterized.parameters((0.05, 1.5), (0.03, 4.0), (0.2, 0.7), (0.01, 0.5))
  def test_reference_quadrature_matches_closed_form(self, q, z):
    # The two halves of the reference agree with each other first.
    for alpha in (2, 3, 7, 20, 63, 256):
      self.assertAlmostEqual(
          _log_a_quad(q, z, alpha) / _log_a_binomial(q, z, alpha), 1.0,
          delta=1e-8)

  def test_matches_independent_quadrature_on_default_orders(self):
    for q, z, rounds, delta in _random_settings(seed=0, n=5):
      with self.subTest(q=q, z=z, rounds=rounds, delta=delta):
        rdp = _reference_rdp(q, z, rounds, _ORDERS, _log_a_quad)
        expected = _reference_epsilon(_ORDERS, rdp, delta)
        actual = accounting.compute_epsilon(q, z, rounds, delta)
        self.assertGreater(expected, 0.0)
        self.assertLess(abs(actual / expected - 1.0), 1e-6)

  def test_matches_independent_closed_form_on_integer_orders(self):
    for q, z, rounds, delta in _random_settings(seed=1, n=8):
      with self.subTest(q=q, z=z, rounds=rounds, delta=delta):
        rdp = _reference_rdp(q, z, rounds, _INTEGER_ORDERS, _log_a_binomial)
        expected = _reference_epsilon(_INTEGER_ORDERS, rdp, delta)
        actual = accounting.compute_epsilon(
            q, z, rounds, delta, orders=_INTEGER_ORDERS)
        self.assertLess(abs(actual / expected - 1.0), 1e-9)

  def test_full_sampling_is_the_gaussian_mechanism(self):
    # q = 1: RDP of T Gaussian mechanisms is T alpha / (2 z^2) exactly.
    z, rounds, delta = 3.0, 10, 1e-5
    rdp = [rounds * a / (2 * z**2) for a in _ORDERS]
    self.assertAlmostEqual(
        accounting.compute_epsilon(1.0, z, rounds, delta),
        _reference_epsilon(_ORDERS, rdp, delta),
        places=12)

  def test_edge_cases(self):
    self.assertEqual(accounting.compute_epsilon(0.05, 1.5, 0, 1e-4), 0.0)
    self.assertEqual(accounting.compute_epsilon(0.0, 1.5, 500, 1e-4), 0.0)
    self.assertEqual(accounting.compute_epsilon(0.0, 0.0, 500, 1e-4), 0.0)
    self.assertEqual(accounting.compute_epsilon(0.05, 0.0, 1, 1e-4), math.inf)

  def test_monotone(self):
    base = accounting.compute_epsilon(0.05, 1.5, 500, 1e-4)
    self.assertGreater(accounting.compute_epsilon(0.05, 1.5, 501, 1e-4), base)
    self.assertGreater(accounting.compute_epsilon(0.06, 1.5, 500, 1e-4), base)
    self.assertLess(accounting.compute_epsilon(0.05, 1.6, 500, 1e-4), base)
    self.assertLess(accounting.compute_epsilon(0.05, 1.5, 500, 1e-3), base)

  @parameterized.named_parameters(
      ('delta_zero', dict(delta=0.0), 'delta must be in (0, 1)'),
      ('delta_one', dict(delta=1.0), 'delta must be in (0, 1)'),
      ('delta_nan', dict(delta=float('nan')), 'delta'),
      ('q_negative', dict(sampling_rate=-0.1),
       'sampling_rate must be in [0, 1]'),
      ('q_above_one', dict(sampling_rate=1.01),
       'sampling_rate must be in [0, 1]'),
      ('z_negative', dict(noise_multiplier=-1.0),
       'noise_multiplier must be >= 0'),
      ('z_inf', dict(noise_multiplier=math.inf),
       'noise_multiplier must be >= 0'),
      ('rounds_negative', dict(rounds=-1), 'rounds must be an integer >= 0'),
      ('rounds_fraction', dict(rounds=2.5), 'rounds must be an integer >= 0'),
      ('rounds_bool', dict(rounds=True), 'rounds must be an integer >= 0'),
  )
  def test_bad_arguments(self, override, message):
    args = dict(sampling_rate=0.05, noise_multiplier=1.5, rounds=500,
                delta=1e-4)
    args.update(override)
    with self.assertRaises(ValueError) as cm:
      accounting.compute_epsilon(**args)
    self.assertIn(message, str(cm.exception))
    self.assertNotIn('\n', str(cm.exception))

  def test_takes_an_accountant_as_its_inverse_does(self):
    # The same settings as an `Accountant` or as the three arguments give the
    # same epsilon; both at once are refused in one line.
    for name, orders, conversion in (('rdp', None, 'classic'),
                                     ('rdp', _INTEGER_ORDERS, 'improved'),
                                     ('pld', None, 'improved')):
      with self.subTest(name=name, orders=orders, conversion=conversion):
        self.assertEqual(
            accounting.compute_epsilon(
                0.05, 1.5, 200, 1e-4,
                accountant=accounting.Accountant(name, orders, conversion)),
            accounting.compute_epsilon(0.05, 1.5, 200, 1e-4, orders=orders,
                                       conversion=conversion,
                                       accountant=name))
    with self.assertRaises(ValueError) as cm:
      accounting.compute_epsilon(
          0.05, 1.5, 200, 1e-4, conversion='classic',
          accountant=accounting.Accountant(conversion='classic'))
    self.assertIn('given by the Accountant', str(cm.exception))
    self.assertNotIn('\n', str(cm.exception))


class ClassicConversionTest(parameterized.TestCase):
  """conversion='classic': eps = min_alpha rdp - log(delta)/(alpha - 1)."""

  def test_matches_independent_quadrature(self):
    orders = (1.5, 2.0, 3.5, 8.0, 20.0, 63.0)
    for q, z, rounds, delta in _random_settings(seed=2, n=5):
      with self.subTest(q=q, z=z, rounds=rounds, delta=delta):
        rdp = _reference_rdp(q, z, rounds, orders, _log_a_quad)
        expected = min(r - math.log(delta) / (a - 1)
                       for a, r in zip(orders, rdp))
        actual = accounting.compute_epsilon(
            q, z, rounds, delta, orders=orders, conversion='classic')
        self.assertLess(abs(actual / expected - 1.0), 1e-6)

  def test_looser_than_improved_and_floored(self):
    orders = privacy_preferences.OPACUS_ORDERS
    for q, z, rounds, delta in _random_settings(seed=3, n=3):
      classic = accounting.compute_epsilon(q, z, rounds, delta, orders=orders,
                                           conversion='classic')
      improved = accounting.compute_epsilon(q, z, rounds, delta,
                                            orders=orders)
      self.assertGreater(classic, improved)
    # With huge noise the classic bound stays above -log(delta)/(63 - 1).
    floor = -math.log(1e-4) / 62
    eps = accounting.compute_epsilon(0.01, 1e4, 10, 1e-4, orders=orders,
                                     conversion='classic')
    self.assertGreater(eps, floor)
    self.assertLess(eps, floor * (1 + 1e-6))

  def test_round_trip(self):
    z = accounting.noise_multiplier_for_epsilon(
        1.0, 0.02, 2000, 1e-4, accountant=accounting.Accountant(
            orders=privacy_preferences.OPACUS_ORDERS, conversion='classic'))
    eps = accounting.compute_epsilon(0.02, z, 2000, 1e-4,
                                     orders=privacy_preferences.OPACUS_ORDERS,
                                     conversion='classic')
    self.assertLessEqual(eps, 1.0)
    self.assertGreater(eps, 1.0 - 1e-4)
    # More noise than the improved conversion needs for the same epsilon.
    self.assertGreater(
        z, accounting.noise_multiplier_for_epsilon(
            1.0, 0.02, 2000, 1e-4, accountant=accounting.Accountant(
                orders=privacy_preferences.OPACUS_ORDERS)))

  def test_unreachable_and_unknown(self):
    with self.assertRaisesRegex(ValueError, 'not reachable'):
      accounting.noise_multiplier_for_epsilon(
          0.1, 0.02, 100, 1e-4, accountant=accounting.Accountant(
              orders=privacy_preferences.OPACUS_ORDERS, conversion='classic'))
    with self.assertRaisesRegex(ValueError, "unknown conversion 'tight'"):
      accounting.compute_epsilon(0.02, 1.0, 10, 1e-4, conversion='tight')


class NoiseMultiplierForEpsilonTest(parameterized.TestCase):

  @parameterized.parameters(
      (3.6, 0.05, 500, 1e-4),
      (0.6, 0.03, 500, 1e-4),
      (4.1, 0.03, 500, 1e-4),
      (1.0, 0.2, 40, 1e-5),
      (8.0, 1.0, 1, 1e-6),
  )
  def test_round_trip(self, eps, q, rounds, delta):
    z = accounting.noise_multiplier_for_epsilon(eps, q, rounds, delta)
    achieved = accounting.compute_epsilon(q, z, rounds, delta)
    # Never less private than asked, and tight.
    self.assertLessEqual(achieved, eps)
    self.assertLess(eps - achieved, 1e-4 * eps)
    # Within the documented tolerance of the smallest such z.
    tol = accounting.DEFAULT_NOISE_TOLERANCE
    self.assertGreater(
        accounting.compute_epsilon(q, z - 2 * tol, rounds, delta), eps)

  def test_inverts_table7(self):
    for q, z, rounds in ((0.05, 1.5, 500), (0.03, 4.0, 500), (0.03, 1.0, 500)):
      eps = accounting.compute_epsilon(q, z, rounds, 1e-4)
      self.assertAlmostEqual(
          accounting.noise_multiplier_for_epsilon(eps, q, rounds, 1e-4),
          z,
          delta=1e-5)

  def test_custom_tolerance(self):
    z = accounting.noise_multiplier_for_epsilon(2.0, 0.05, 100, 1e-5, tol=1e-3)
    self.assertLessEqual(accounting.compute_epsilon(0.05, z, 100, 1e-5), 2.0)
    z_fine = accounting.noise_multiplier_for_epsilon(2.0, 0.05, 100, 1e-5)
    self.assertLess(abs(z - z_fine), 1e-3 + 1e-6)

  def test_no_release_needs_no_noise(self):
    self.assertEqual(
        accounting.noise_multiplier_for_epsilon(1.0, 0.05, 0, 1e-4), 0.0)
    self.assertEqual(
        accounting.noise_multiplier_for_epsilon(1.0, 0.0, 10, 1e-4), 0.0)

  @parameterized.parameters(
      (dict(name='prv'), 'unknown accountant .*rdp, pld'),
      (dict(conversion='tight'), "unknown conversion 'tight'"),
      (dict(orders=[0.5]), 'orders must be'))
  def test_accountant_is_checked_when_made(self, fields, message):
    with self.assertRaisesRegex(ValueError, message):
      accounting.Accountant(**fields)

  def test_accountant_by_name(self):
    self.assertEqual(accounting.as_accountant('pld'),
                     accounting.Accountant('pld'))
    self.assertEqual(accounting.Accountant(orders=[2, 3]).orders, (2.0, 3.0))
    with self.assertRaisesRegex(ValueError, 'unknown accountant'):
      accounting.noise_multiplier_for_epsilon(1.0, 0.05, 10, 1e-4,
                                              accountant='prv')

  @parameterized.named_parameters(
      ('eps_zero', dict(target_epsilon=0.0), 'target_epsilon must be > 0'),
      ('eps_negative', dict(target_epsilon=-1.0), 'target_epsilon must be > 0'),
      ('eps_inf', dict(target_epsilon=math.inf), 'target_epsilon must be > 0'),
      ('delta', dict(delta=1.5), 'delta must be in (0, 1)'),
      ('q', dict(sampling_rate=2.0), 'sampling_rate must be in [0, 1]'),
      ('rounds', dict(rounds=-3), 'rounds must be an integer >= 0'),
      ('tol', dict(tol=0.0), 'tol must be > 0'),
  )
  def test_bad_arguments(self, override, message):
    args = dict(target_epsilon=1.0, sampling_rate=0.05, rounds=500, delta=1e-4)
    args.update(override)
    with self.assertRaises(ValueError) as cm:
      accounting.noise_multiplier_for_epsilon(**args)
    self.assertIn(message, str(cm.exception))
    self.assertNotIn('\n', str(cm.exception))


# Orders of the batch calibration's comparisons: none below 1.5, whose
# dp_accounting series are the longest at q = 0.5, so that the calibration
# one epsilon at a time that they are compared with stays fast.
_FAST_ORDERS = (1.5, 2.5, 3.5, 2, 3, 4, 6, 8, 12, 16, 32, 64)
_FAST = accounting.Accountant(orders=_FAST_ORDERS)


class NoiseMultipliersForEpsilonsTest(parameterized.TestCase):

  def _assert_calibrated(self, eps, z, q, rounds, delta, orders=None,
                         tol=accounting.DEFAULT_NOISE_TOLERANCE):
    """dp_accounting's epsilon of z is within eps, and of z - tol over it."""
    self.assertLessEqual(
        accounting.compute_epsilon(q, z, rounds, delta, orders=orders), eps)
    self.assertGreater(
        accounting.compute_epsilon(q, z - tol, rounds, delta, orders=orders),
        eps)

  def test_each_z_is_one_calibrations_within_tol(self):
    q, rounds, delta = 0.5, 3, 1e-5
    epsilons = [1.0, 3.0, 1.0, 6.0]
    zs = accounting.noise_multipliers_for_epsilons(
        epsilons, q, rounds, delta, accountant=_FAST)
    self.assertLen(zs, 4)
    self.assertEqual(zs[0], zs[2])  # One calibration per distinct epsilon.
    tol = accounting.DEFAULT_NOISE_TOLERANCE
    for eps, z in zip(epsilons, zs):
      self._assert_calibrated(eps, z, q, rounds, delta, _FAST_ORDERS)
      one = accounting.noise_multiplier_for_epsilon(eps, q, rounds, delta,
                                                    accountant=_FAST)
      self.assertLessEqual(abs(z - one), tol)

  def test_the_benchmarks_setting_on_the_default_orders(self):
    # q = 0.5, T = 20, delta = 1e-5: HDP-Bench's cross-silo calibration.
    before = accounting._rdp_epsilon.cache_info().hits  # pylint: disable=protected-access
    (z,) = accounting.noise_multipliers_for_epsilons([2.0], 0.5, 20, 1e-5)
    # Its check by dp_accounting is remembered: epsilon of the same z is
    # not composed again.
    accounting.compute_epsilon(0.5, z, 20, 1e-5)
    self.assertEqual(
        accounting._rdp_epsilon.cache_info().hits, before + 1)  # pylint: disable=protected-access
    self._assert_calibrated(2.0, z, 0.5, 20, 1e-5)

  def test_a_search_off_by_a_fraction_of_tol_is_stepped_up(self):
    # The search's epsilon(z) is dp_accounting's at z + tol / 5: its root
    # lies tol / 5 below the library's, and the library's check moves it.
    tol = 1e-4
    search = accounting.rdp_search.epsilon
    with mock.patch.object(
        accounting.rdp_search, 'epsilon',
        lambda q, z, *args: search(q, z + tol / 5, *args)):
      zs = accounting.noise_multipliers_for_epsilons(
          [1.0, 4.0], 0.05, 50, 1e-5, tol=tol, accountant=_FAST)
    for eps, z in zip([1.0, 4.0], zs):
      self._assert_calibrated(eps, z, 0.05, 50, 1e-5, _FAST_ORDERS, tol)

  def test_a_search_that_disagrees_leaves_it_to_the_library(self):
    search = accounting.rdp_search.epsilon
    with mock.patch.object(accounting.rdp_search, 'epsilon',
                           lambda *args: 1.001 * search(*args)):
      zs = accounting.noise_multipliers_for_epsilons(
          [1.0, 4.0], 0.05, 50, 1e-5, accountant=_FAST)
    self.assertEqual(zs, [
        accounting.noise_multiplier_for_epsilon(e, 0.05, 50, 1e-5,
                                                accountant=_FAST)
        for e in (1.0, 4.0)])

  @parameterized.named_parameters(
      ('classic', dict(accountant=accounting.Accountant(
          orders=_FAST_ORDERS, conversion='classic'))),
      ('fixed_cohort', dict(population=200, accountant=_FAST)),
      ('no_release', dict(rounds=0)),
  )
  def test_other_accounting_calibrates_one_by_one(self, kwargs):
    args = dict(sampling_rate=0.05, rounds=50, delta=1e-5)
    args.update(kwargs)
    self.assertEqual(
        accounting.noise_multipliers_for_epsilons([1.0, 4.0], **args),
        [accounting.noise_multiplier_for_epsilon(e, **args)
         for e in (1.0, 4.0)])

  def test_bad_arguments(self):
    self.assertEqual(
        accounting.noise_multipliers_for_epsilons([], 0.5, 20, 1e-5), [])
    with self.assertRaisesRegex(ValueError, 'target_epsilon must be > 0'):
      accounting.noise_multipliers_for_epsilons([1.0, 0.0], 0.5, 20, 1e-5)
    with self.assertRaisesRegex(ValueError, 'tol must be > 0'):
      accounting.noise_multipliers_for_epsilons([1.0], 0.5, 20, 1e-5, tol=0)





def _pld_epsilon_reference(q, z, delta):
  """epsilon of ONE Poisson-subsampled Gaussian round, add-or-remove, without
  dp_accounting: the hockey-stick divergence of mu = (1 - q) N(0, z^2) +
  q N(1, z^2) against nu = N(0, z^2), in both directions. The ratio mu / nu
  = 1 - q + q exp((2x - 1) / (2 z^2)) increases in x, so {mu > e^eps nu} is
  x > x* and {nu > e^eps mu} is x < x**, with normal tail masses."""
  from scipy import optimize  # pylint: disable=g-import-not-at-top
  from scipy import stats  # pylint: disable=g-import-not-at-top

  def threshold(ratio):  # x with mu(x) / nu(x) = ratio (> 1 - q).
    return z * z * math.log((ratio - (1 - q)) / q) + 0.5

  def add(e):  # delta_{mu || nu}(e)
    x = threshold(math.exp(e))
    return ((1 - q) * stats.norm.sf(x, 0, z) + q * stats.norm.sf(x, 1, z) -
            math.exp(e) * stats.norm.sf(x, 0, z))

  def remove(e):  # delta_{nu || mu}(e); empty once e^-e <= 1 - q.
    if math.exp(-e) <= 1 - q:
      return 0.0
    x = threshold(math.exp(-e))
    return stats.norm.cdf(x, 0, z) - math.exp(e) * (
        (1 - q) * stats.norm.cdf(x, 0, z) + q * stats.norm.cdf(x, 1, z))

  best = 0.0
  for f in (add, remove):
    if f(0.0) > delta:
      hi = -math.log(1 - q) if f is remove else 50.0
      best = max(best, optimize.brentq(lambda e, f=f: f(e) - delta, 0.0, hi,
                                       xtol=1e-10))
  return best


class PldAccountantTest(parameterized.TestCase):
  """accountant='pld' against RDP and against independent computations."""

  @parameterized.parameters((0.2, 2.0, 100, 1e-4), (0.05, 1.5, 500, 1e-4),
                            (0.2, 1.55, 100, 1e-5), (0.01, 1.0, 1000, 1e-5))
  def test_at_most_rdp(self, q, z, rounds, delta):
    pld = accounting.compute_epsilon(q, z, rounds, delta, accountant='pld')
    rdp = accounting.compute_epsilon(q, z, rounds, delta)
    self.assertLess(pld, rdp)
    self.assertGreater(pld, 0.7 * rdp)  # Same mechanism: close, not equal.

  @parameterized.parameters((1.0, 1), (2.0, 10), (4.0, 100))
  def test_full_sampling_is_the_analytic_gaussian(self, z, rounds):
    # q = 1: T Gaussians compose to one with mu = sqrt(T) / z, whose
    # delta(eps) = Phi(-eps / mu + mu / 2) - e^eps Phi(-eps / mu - mu / 2)
    # (Balle and Wang 2018); solved here by bisection, without the package.
    from scipy import optimize  # pylint: disable=g-import-not-at-top
    from scipy import stats  # pylint: disable=g-import-not-at-top
    mu, delta = math.sqrt(rounds) / z, 1e-5
    expected = optimize.brentq(
        lambda e: stats.norm.cdf(-e / mu + mu / 2) - math.exp(e) *
        stats.norm.cdf(-e / mu - mu / 2) - delta, 0.0, 100.0, xtol=1e-10)
    got = accounting.compute_epsilon(1.0, z, rounds, delta, accountant='pld')
    # The discretisation is pessimistic: never below, and close.
    self.assertGreaterEqual(got, expected - 1e-6)
    self.assertLess(got, expected + 0.02 * max(1.0, expected))

  @parameterized.parameters((0.2, 1.0, 1e-3), (0.05, 0.8, 1e-4),
                            (0.5, 2.0, 1e-3))
  def test_one_subsampled_round_matches_quadrature(self, q, z, delta):
    expected = _pld_epsilon_reference(q, z, delta)
    got = accounting.compute_epsilon(q, z, 1, delta, accountant='pld')
    self.assertGreaterEqual(got, expected - 1e-4)
    self.assertLess(got, expected + 0.01 * max(1.0, expected))

  def test_calibration(self):
    z = accounting.noise_multiplier_for_epsilon(3.0, 0.2, 100, 1e-4,
                                                accountant='pld')
    self.assertLessEqual(
        accounting.compute_epsilon(0.2, z, 100, 1e-4, accountant='pld'),
        3.0)
    # PLD is tighter, so the same epsilon needs less noise than under RDP.
    self.assertLess(z, accounting.noise_multiplier_for_epsilon(
        3.0, 0.2, 100, 1e-4))

  def test_unknown_accountant(self):
    with self.assertRaisesRegex(ValueError, 'unknown accountant .*rdp, pld'):
      accounting.compute_epsilon(0.1, 1.0, 10, 1e-5, accountant='prv')


def _replace_one_pair_rdp(gamma, sigma, alpha):
  """Exact D_alpha(P || Q) of one replace-one pair, by quadrature.

  A fixed cohort of n out of N includes client i with probability
  gamma = n / N. Take every other client's clipped update to be 0: a round's
  noised sum (in units of S, noise stddev sigma) is then
  P = (1 - gamma) N(0, s^2) + gamma N(+1, s^2) on one dataset and
  Q = (1 - gamma) N(0, s^2) + gamma N(-1, s^2) with client i replaced (its
  update moved from +S to -S). These are outputs of the real mechanism on
  two replace-one neighbours, so the mechanism's RDP is at least this (a
  lower bound that any sound accountant must stay above).
  """
  from scipy import stats  # pylint: disable=g-import-not-at-top
  x = np.linspace(-1 - 40 * sigma, 1 + 40 * sigma, 400_001)
  log_p = np.logaddexp(
      np.log1p(-gamma) + stats.norm.logpdf(x, 0, sigma),
      np.log(gamma) + stats.norm.logpdf(x, 1, sigma))
  log_q = np.logaddexp(
      np.log1p(-gamma) + stats.norm.logpdf(x, 0, sigma),
      np.log(gamma) + stats.norm.logpdf(x, -1, sigma))
  log_f = alpha * log_p + (1 - alpha) * log_q
  peak = log_f.max()
  integral = np.trapz(np.exp(log_f - peak), x)
  return (peak + math.log(integral)) / (alpha - 1)


class FixedCohortTest(parameterized.TestCase):
  """A fixed cohort: sampling without replacement, replace-one neighbours."""

  def test_issue_settings(self):
    # The demo's fixed cohort (40 of 200, z_eff 2, 100 rounds) and Table 7's
    # MNIST (100 of 2,000, z_eff 1.5, 500 rounds), against dp_accounting's
    # RDP of SampledWithoutReplacementDpEvent at multiplier z_eff / 2.
    self.assertAlmostEqual(accounting.compute_epsilon(
        0.2, 2.0, 100, 1e-4, population=200), 27.50, places=2)
    self.assertAlmostEqual(accounting.compute_epsilon(
        0.05, 1.5, 500, 1e-4, population=2000), 22.40, places=2)

  @parameterized.parameters((2.0, 10), (4.0, 100), (8.0, 1000))
  def test_whole_population_is_the_gaussian_with_doubled_sensitivity(
      self, z, rounds):
    # n = N: every client takes part; replacing one moves the sum by 2S, so
    # T rounds are one Gaussian with mu = 2 sqrt(T) / z, whose exact
    # (eps, delta) is the analytic Gaussian's (Balle and Wang 2018). RDP's
    # conversion is a bound: at least that, and within 25% of it.
    from scipy import optimize  # pylint: disable=g-import-not-at-top
    from scipy import stats  # pylint: disable=g-import-not-at-top
    mu, delta = 2 * math.sqrt(rounds) / z, 1e-5
    exact = optimize.brentq(
        lambda e: stats.norm.cdf(-e / mu + mu / 2) - math.exp(e) *
        stats.norm.cdf(-e / mu - mu / 2) - delta, 0.0, 200.0, xtol=1e-10)
    got = accounting.compute_epsilon(1.0, z, rounds, delta, population=50)
    self.assertGreaterEqual(got, exact)
    self.assertLess(got, 1.25 * exact)

  @parameterized.parameters((40, 200, 2.0), (100, 2000, 1.5), (5, 10, 1.0))
  def test_rdp_is_above_an_exact_replace_one_pair(self, n, big_n, z):
    # Per round, at integer orders: our RDP (read off a one-order ledger's
    # epsilon is not possible, so compare (eps, delta) after the same
    # conversion) stays above the exact RDP of two replace-one neighbours.
    orders = [2, 3, 4, 6, 8, 12, 16, 24, 32]
    rounds, delta = 100, 1e-4
    exact = _reference_epsilon(
        orders, [rounds * _replace_one_pair_rdp(n / big_n, z, a)
                 for a in orders], delta)
    got = accounting.compute_epsilon(n / big_n, z, rounds, delta,
                                     orders=orders, population=big_n)
    self.assertGreaterEqual(got, exact)
    # The power of the check: accounting the cohort as Poisson under
    # add/remove (the old figure) falls below this pair's exact epsilon.
    poisson = accounting.compute_epsilon(n / big_n, z, rounds, delta,
                                         orders=orders)
    self.assertLess(poisson, exact)

  def test_calibration_meets_the_bound(self):
    z = accounting.noise_multiplier_for_epsilon(8.0, 0.2, 100, 1e-4,
                                                population=200)
    self.assertLessEqual(
        accounting.compute_epsilon(0.2, z, 100, 1e-4, population=200), 8.0)
    self.assertGreater(
        accounting.compute_epsilon(0.2, z - 1e-3, 100, 1e-4, population=200),
        8.0)

  @parameterized.parameters(
      (dict(population=7), 'cohort size'),
      (dict(population=0), 'cohort size'),
      (dict(population=200, accountant='pld'), "accountant 'pld' has no"))
  def test_bad_cohorts(self, kwargs, message):
    with self.assertRaisesRegex(ValueError, message):
      accounting.compute_epsilon(0.2, 2.0, 10, 1e-4, **kwargs)


if __name__ == '__main__':
  absltest.main()
