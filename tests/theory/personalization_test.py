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
"""Tests of `tff_hdp.theory.personalization` (Lemma 3, Theorem 8, Table 4).

The lambda* of the paper are checked against a numerical minimisation of the
personal model's risk, Theorem 8 against Lemma 3, and Table 4's entries both
by substitution into eq. (83) and as the table prints them.
"""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
from scipy import optimize

from tff_hdp import theory


def _random_setups(seed, count=20):
  """Random (alpha2, tau2, gamma2, n, n_private) with 1 <= N_p < N."""
  rng = np.random.default_rng(seed)
  for _ in range(count):
    n = int(rng.integers(3, 200))
    n_private = int(rng.integers(1, n))
    yield (float(rng.uniform(0.05, 3.0)), float(rng.uniform(0.01, 2.0)),
           float(10**rng.uniform(-3, 1)), n, n_private)


def _argmin_lambda(risk):
  """Minimises risk(lambda) over lambda = exp(t) with scipy."""
  result = optimize.minimize_scalar(
      lambda t: risk(np.exp(t)), bounds=(-25.0, 25.0), method='bounded',
      options={'xatol': 1e-10})
  return float(np.exp(result.x))


def _theorem8_lambdas(seed):
  """(setup, r*, private, Theorem 8's lambda*) of both groups of each
  `_random_setups(seed)` setup, as (DataModel(alpha2, tau2), gamma2, n,
  n_private)."""
  for alpha2, tau2, gamma2, n, n_p in _random_setups(seed):
    setup = (theory.DataModel(alpha2, tau2), gamma2, n, n_p)
    r_star = theory.optimal_ratio(alpha2 + tau2, gamma2, n_p)
    yield setup, r_star, False, theory.optimal_lambda_np(alpha2, tau2)
    yield setup, r_star, True, theory.optimal_lambda_p(alpha2, tau2, gamma2,
                                                       n, n_p)


class PersonalizationTest(parameterized.TestCase):

  def test_theorem8_minimises_the_personal_risk_at_r_star(self):
    for setup, r_star, private, closed_form in _theorem8_lambdas(0):
      args = (*setup, r_star, private)
      numeric = _argmin_lambda(
          lambda lam, args=args: theory.local_risk(
              lam, *args, own_noise_in_global=False))
      self.assertAlmostEqual(np.log(closed_form), np.log(numeric), delta=1e-4)

  def test_theorem8_reaches_the_bayes_risk(self):
    for setup, r_star, private, lam in _theorem8_lambdas(1):
      bayes = theory.bayes_local_risk(*setup, private)
      risk = theory.local_risk(lam, *setup, r_star, private,
                               own_noise_in_global=False)
      self.assertAlmostEqual(risk, bayes, delta=1e-10 * bayes)
      # Any other lambda, or the HDP-FedAvg ratio, is worse.
      self.assertGreater(
          theory.local_risk(2 * lam, *setup, r_star, private,
                            own_noise_in_global=False), bayes)

  def test_theorem8_is_lemma3_with_one_group_non_private(self):
    for alpha2, tau2, gamma2, n, n_p in _random_setups(2):
      lambda_np, lambda_p = theory.optimal_lambdas_two_level(
          alpha2, tau2, 0.0, gamma2, n - n_p, n_p)
      self.assertAlmostEqual(lambda_np, theory.optimal_lambda_np(alpha2, tau2),
                             delta=1e-10 * lambda_np)
      expected_p = theory.optimal_lambda_p(alpha2, tau2, gamma2, n, n_p)
      self.assertAlmostEqual(lambda_p, expected_p, delta=1e-10 * expected_p)

  def test_lemma3_matches_numerical_optimum_for_two_private_groups(self):
    rng = np.random.default_rng(3)
    for _ in range(15):
      alpha2, tau2 = rng.uniform(0.05, 2.0, size=2)
      gamma2s = 10**rng.uniform(-3, 0, size=2)
      sizes = rng.integers(2, 80, size=2)
      ratios = theory.optimal_ratios(alpha2 + tau2, gamma2s, sizes)
      expected = theory.optimal_lambdas_two_level(alpha2, tau2, *gamma2s,
                                                  *sizes)
      for group in (0, 1):
        numeric = theory.multi_level_optimal_lambda(
            alpha2, tau2, gamma2s, sizes, ratios, group,
            own_noise_in_global=False)
        self.assertAlmostEqual(numeric, expected[group],
                               delta=1e-6 * expected[group])

  def test_nonprivate_lambda_is_at_least_private_lambda(self):
    # Section 3.1.4: lambda*_np >= lambda*_p since r* <= 1.
    for alpha2, tau2, gamma2, n, n_p in _random_setups(4):
      self.assertGreaterEqual(
          theory.optimal_lambda_np(alpha2, tau2),
          theory.optimal_lambda_p(alpha2, tau2, gamma2, n, n_p))

  def test_private_lambda_vanishes_with_strong_privacy(self):
    # Appendix B (Table 4 discussion): with homogeneous privacy,
    # gamma^2 -> inf sends lambda*_p -> 0.
    gamma2 = np.logspace(-2, 12, 15)
    for tau2 in (0.0, 0.5):
      lambdas = theory.optimal_lambda_p(1.0, tau2, gamma2, 100, 100)
      self.assertTrue(np.all(np.diff(lambdas) < 0))
      self.assertLess(lambdas[-1], 1e-10)

  def test_private_lambda_limit_with_opt_outs(self):
    # Not in the paper: with N_np > 0 non-private clients, eq. (83) tends to
    # N_np / ((N_np + 1) Upsilon^2 + 1) as gamma^2 -> inf, not to 0: the
    # global model tends to the non-private clients' average.
    gamma2 = np.logspace(-2, 12, 15)
    n, n_p, alpha2 = 100, 60, 0.8
    for tau2 in (0.0, 0.5):
      lambdas = theory.optimal_lambda_p(alpha2, tau2, gamma2, n, n_p)
      self.assertTrue(np.all(np.diff(lambdas) < 0))
      n_np = n - n_p
      limit = n_np / ((n_np + 1) * tau2 / alpha2 + 1)
      self.assertAlmostEqual(lambdas[-1], limit, delta=1e-6 * limit)

  # Table 4 of paper 001.

  def test_table4_no_privacy_homogeneous_data_is_fedavg(self):
    self.assertEqual(theory.optimal_lambda_no_privacy(0.7, 0.0), np.inf)
    # General formula: every client non-private (N_p = 0), tau^2 = 0.
    self.assertEqual(
        theory.optimal_lambda(theory.DataModel(0.7, 0.0), 0.3, 50, 0, 1.0,
                              private=False),
        np.inf)

  def test_table4_no_privacy_heterogeneous_data_is_ditto(self):
    for alpha2, tau2, _, n, _ in _random_setups(5):
      table = alpha2 / tau2  # Table 4: lambda*_np = alpha^2 / tau^2.
      self.assertAlmostEqual(theory.optimal_lambda_no_privacy(alpha2, tau2),
                             table, delta=1e-12 * table)
      general = theory.optimal_lambda(theory.DataModel(alpha2, tau2), 0.0,
                                      n, 0, 1.0, private=False)
      self.assertAlmostEqual(general, table, delta=1e-6 * table)

  def test_table4_homogeneous_privacy_heterogeneous_data(self):
    for alpha2, tau2, gamma2, n, _ in _random_setups(6):
      rho_np = 0.0
      table = n * alpha2 / (n * tau2 + (1 - rho_np) * n * gamma2)
      substituted = theory.optimal_lambda_p(alpha2, tau2, gamma2, n, n)
      self.assertAlmostEqual(substituted, table, delta=1e-10 * table)
      self.assertAlmostEqual(
          theory.optimal_lambda_homogeneous_privacy(alpha2, tau2, gamma2),
          table, delta=1e-10 * table)
      numeric = theory.optimal_lambda(theory.DataModel(alpha2, tau2), gamma2,
                                      n, n, 1.0, private=True,
                                      own_noise_in_global=False)
      self.assertAlmostEqual(numeric, table, delta=1e-6 * table)

  def test_table4_homogeneous_privacy_homogeneous_data(self):
    for alpha2, _, gamma2, n, _ in _random_setups(7):
      substituted = theory.optimal_lambda_p(alpha2, 0.0, gamma2, n, n)
      self.assertAlmostEqual(substituted, alpha2 / gamma2,
                             delta=1e-10 * substituted)
      self.assertAlmostEqual(
          theory.optimal_lambda_homogeneous_privacy(alpha2, 0.0, gamma2),
          substituted, delta=1e-10 * substituted)
    # Table 4 prints 1 / gamma^2: the same at alpha^2 = 1.
    for gamma2 in (0.01, 0.5, 3.0):
      self.assertAlmostEqual(
          theory.optimal_lambda_p(1.0, 0.0, gamma2, 40, 40), 1.0 / gamma2,
          delta=1e-10 / gamma2)

  def test_own_noise_adds_its_weighted_variance(self):
    # Algorithm 1 keeps the client's own noise in theta: the risk grows by
    # (u w_p)^2 N_p gamma^2 with u = lambda / (1 + lambda).
    alpha2, tau2, gamma2, n, n_p, r = 0.6, 0.2, 0.05, 30, 25, 0.4
    data = theory.DataModel(alpha2, tau2)
    lam = np.array([0.0, 0.3, 2.0, 50.0])
    u = lam / (1 + lam)
    w_p = r / (n - n_p + r * n_p)
    with_noise = theory.local_risk(lam, data, gamma2, n, n_p, r, True)
    without = theory.local_risk(lam, data, gamma2, n, n_p, r, True,
                                own_noise_in_global=False)
    np.testing.assert_allclose(with_noise - without,
                               (u * w_p)**2 * n_p * gamma2, rtol=1e-10)
    # A non-private client has no noise of its own.
    np.testing.assert_allclose(
        theory.local_risk(lam, data, gamma2, n, n_p, r, False),
        theory.local_risk(lam, data, gamma2, n, n_p, r, False,
                          own_noise_in_global=False), rtol=1e-12)

  def test_local_risk_limits(self):
    # lambda = 0 is the local estimate (risk alpha^2); lambda = inf the global
    # model, whose risk is the server variance plus tau^2 minus the client's
    # own share.
    alpha2, tau2, gamma2, n, n_p, r = 0.6, 0.2, 0.05, 30, 25, 0.4
    data = theory.DataModel(alpha2, tau2)
    self.assertAlmostEqual(
        theory.local_risk(0.0, data, gamma2, n, n_p, r, True), alpha2)
    w_p = r / (n - n_p + r * n_p)
    server = theory.server_variance(alpha2 + tau2, gamma2, n, (n - n_p) / n, r)
    # E(theta - phi_j)^2 = E(theta - phi)^2 + tau^2 - 2 Cov(theta, p_j).
    expected = server + tau2 - 2 * w_p * tau2
    self.assertAlmostEqual(
        theory.local_risk(np.inf, data, gamma2, n, n_p, r, True),
        expected, delta=1e-12)

  def test_bad_arguments(self):
    with self.assertRaisesRegex(ValueError, '^n_private must be <= n'):
      theory.optimal_lambda_p(1.0, 0.1, 0.1, 10, 11)
    with self.assertRaisesRegex(ValueError, '^alpha2 must be > 0'):
      theory.optimal_lambda_np(0.0, 0.1)
    with self.assertRaisesRegex(ValueError, '^private must be a bool'):
      theory.local_risk(1.0, theory.DataModel(1.0, 0.1), 0.1, 10, 5, 0.5,
                        'yes')
    with self.assertRaisesRegex(ValueError, 'at least one client'):
      theory.local_risk(1.0, theory.DataModel(1.0, 0.1), 0.1, 10, 10, 0.5,
                        private=False)
    with self.assertRaisesRegex(TypeError, '^data must be a '):
      theory.local_risk(1.0, (1.0, 0.1), 0.1, 10, 5, 0.5, private=True)


if __name__ == '__main__':
  absltest.main()
