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
"""Tests of `tff_hdp.theory.multi_level` (paper 001, Appendix A.6).

The optimal ratios are checked by minimising the server variance numerically,
eq. (61) in its product form, and the numerical lambda_j* against the
stationary point of the personal risk derived independently below.
"""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
from scipy import optimize

from tff_hdp import theory


def _random_levels(seed, count=12):
  """Random (alpha2, tau2, gamma2s, sizes) with 2 to 5 privacy levels."""
  rng = np.random.default_rng(seed)
  for _ in range(count):
    levels = int(rng.integers(2, 6))
    gamma2s = 10**rng.uniform(-3, 0, size=levels)
    gamma2s[0] = 0.0 if rng.uniform() < 0.5 else gamma2s[0]
    yield (float(rng.uniform(0.05, 2.0)), float(rng.uniform(0.0, 1.0)),
           gamma2s, rng.integers(2, 60, size=levels).astype(float))


def _stationary_lambda(alpha2, tau2, gamma2s, sizes, ratios, group, own):
  """lambda* from d/dlambda E||theta_j(lambda) - phi_j||^2 = 0, by hand.

  Builds the explicit per-client weight vector and the covariance of the
  errors (e_j, theta - phi_j); theta_j - phi_j = (e_j + lam (theta - phi_j)) /
  (1 + lam), so lambda* = (Var e - Cov) / (Var(theta - phi_j) - Cov).
  """
  group_of = np.repeat(np.arange(len(sizes)), sizes.astype(int))
  weights = np.asarray(ratios)[group_of]
  weights = weights / weights.sum()
  noise = (sizes * gamma2s)[group_of]
  j = int(np.argmax(group_of == group))  # The first client of the group.
  # theta - phi_j = sum_i w_i (p_i + e_i + l_i) - p_j.
  coef_p = weights.copy()
  coef_p[j] -= 1.0
  coef_l = weights.copy()
  if not own:
    coef_l[j] = 0.0
  var_global = (np.sum(coef_p**2) * tau2 + np.sum(weights**2) * alpha2 +
                np.sum(coef_l**2 * noise))
  cov = weights[j] * alpha2
  return (alpha2 - cov) / (var_global - cov)


class MultiLevelTest(parameterized.TestCase):

  def test_weights_sum_to_one(self):
    weights = theory.group_weights([1.0, 0.3, 0.1], [5, 20, 75])
    self.assertAlmostEqual(np.sum(weights * [5, 20, 75]), 1.0)
    self.assertAlmostEqual(weights[1] / weights[0], 0.3)

  def test_optimal_ratios_minimise_server_variance(self):
    for alpha2, tau2, gamma2s, sizes in _random_levels(0):
      sigma_c2 = alpha2 + tau2

      def variance(log_ratios, sigma_c2=sigma_c2, gamma2s=gamma2s,
                   sizes=sizes):
        ratios = np.exp(np.concatenate([[0.0], log_ratios]))
        return theory.multi_level_server_variance(sigma_c2, gamma2s, sizes,
                                                  ratios)

      result = optimize.minimize(variance, np.zeros(len(sizes) - 1),
                                 method='BFGS', options={'gtol': 1e-12})
      r_star = theory.optimal_ratios(sigma_c2, gamma2s, sizes)
      optimum = theory.multi_level_optimal_server_variance(
          sigma_c2, gamma2s, sizes)
      self.assertAlmostEqual(r_star[0], 1.0)
      np.testing.assert_allclose(np.exp(result.x), r_star[1:], rtol=1e-3)
      self.assertAlmostEqual(result.fun, optimum, delta=1e-8 * optimum)
      self.assertAlmostEqual(
          theory.multi_level_server_variance(sigma_c2, gamma2s, sizes, r_star),
          optimum, delta=1e-12 * optimum)

  def test_eq61_product_form(self):
    for alpha2, tau2, gamma2s, sizes in _random_levels(1):
      variances = alpha2 + tau2 + sizes * gamma2s
      numerator = np.prod(variances)
      denominator = sum(
          sizes[i] * np.prod(np.delete(variances, i))
          for i in range(len(sizes)))
      expected = numerator / denominator
      self.assertAlmostEqual(
          theory.multi_level_optimal_server_variance(alpha2 + tau2, gamma2s,
                                                     sizes),
          expected, delta=1e-12 * expected)

  def test_two_levels_reproduce_lemma2(self):
    # Eqs. (28)-(29) with two private groups.
    rng = np.random.default_rng(2)
    for _ in range(10):
      sigma_c2 = rng.uniform(0.1, 3.0)
      g1, g2 = 10**rng.uniform(-3, 0, size=2)
      n1, n2 = rng.integers(1, 100, size=2)
      n = n1 + n2
      rho1 = n1 / n
      r_star = (sigma_c2 + n1 * g1) / (sigma_c2 + n2 * g2)
      np.testing.assert_allclose(
          theory.optimal_ratios(sigma_c2, [g1, g2], [n1, n2]), [1.0, r_star])
      eq29 = ((sigma_c2 + n1 * g1) * (sigma_c2 + n2 * g2) /
              (sigma_c2 + (1 - rho1) * n1 * g1 + rho1 * n2 * g2) / n)
      self.assertAlmostEqual(
          theory.multi_level_optimal_server_variance(sigma_c2, [g1, g2],
                                                     [n1, n2]),
          eq29, delta=1e-12 * eq29)

  def test_two_levels_match_the_opt_out_closed_forms(self):
    sigma_c2, gamma2, n, n_np, r = 0.9, 0.04, 50, 7, 0.3
    self.assertAlmostEqual(
        theory.multi_level_server_variance(sigma_c2, [0.0, gamma2],
                                           [n_np, n - n_np], [1.0, r]),
        theory.server_variance(sigma_c2, gamma2, n, n_np / n, r), delta=1e-14)
    # DP-FedAvg is one group whose clients add N_p gamma^2 each.
    self.assertAlmostEqual(
        theory.multi_level_server_variance(
            sigma_c2, [(n - n_np) / n * gamma2], [n], [1.0]),
        theory.dp_fedavg_server_variance(sigma_c2, gamma2, n, n_np / n),
        delta=1e-14)

  @parameterized.parameters(True, False)
  def test_numerical_lambda_is_the_stationary_point(self, own):
    rng = np.random.default_rng(3)
    for alpha2, tau2, gamma2s, sizes in _random_levels(4):
      # Arbitrary ratios, not only the optimal ones.
      ratios = 10**rng.uniform(-2, 0, size=len(sizes))
      for group in range(len(sizes)):
        expected = _stationary_lambda(alpha2, tau2, gamma2s, sizes, ratios,
                                      group, own)
        numeric = theory.multi_level_optimal_lambda(
            alpha2, tau2, gamma2s, sizes, ratios, group,
            own_noise_in_global=own)
        if expected <= 0:  # The global model is the best (lambda* = inf).
          self.assertEqual(numeric, np.inf)
        else:
          self.assertAlmostEqual(numeric, expected, delta=1e-6 * expected)

  def test_numerical_lambda_minimises_local_risk_on_a_grid(self):
    grid = np.logspace(-3, 4, 7001)
    for alpha2, tau2, gamma2s, sizes in _random_levels(5, count=6):
      ratios = theory.optimal_ratios(alpha2 + tau2, gamma2s, sizes)
      for group in range(len(sizes)):
        risks = theory.multi_level_local_risk(grid, alpha2, tau2, gamma2s,
                                              sizes, ratios, group)
        lam = theory.multi_level_optimal_lambda(alpha2, tau2, gamma2s, sizes,
                                                ratios, group)
        best = risks.min()
        at_lam = theory.multi_level_local_risk(lam, alpha2, tau2, gamma2s,
                                               sizes, ratios, group)
        self.assertLessEqual(at_lam, best * (1 + 1e-12))
        if 1e-3 < lam < 1e4:
          self.assertAlmostEqual(np.log10(grid[np.argmin(risks)]),
                                 np.log10(lam), delta=2e-3)

  def test_fedhdp_reaches_bayes_risk_with_many_levels(self):
    # With r_i* and the client's own noise removed (eq. (77)), one lambda
    # makes the personal model the Bayes estimate (75): the risk equals (74).
    for alpha2, tau2, gamma2s, sizes in _random_levels(6):
      ratios = theory.optimal_ratios(alpha2 + tau2, gamma2s, sizes)
      for group in range(len(sizes)):
        lam = theory.multi_level_optimal_lambda(
            alpha2, tau2, gamma2s, sizes, ratios, group,
            own_noise_in_global=False)
        bayes = theory.multi_level_bayes_local_risk(alpha2, tau2, gamma2s,
                                                    sizes, group)
        risk = theory.multi_level_local_risk(
            lam, alpha2, tau2, gamma2s, sizes, ratios, group,
            own_noise_in_global=False)
        self.assertAlmostEqual(risk, bayes, delta=1e-9 * bayes)
        # Algorithm 1 as written pays for the client's own noise.
        self.assertGreaterEqual(
            theory.multi_level_local_risk(lam, alpha2, tau2, gamma2s, sizes,
                                          ratios, group),
            bayes * (1 - 1e-12))

  def test_bayes_risk_by_brute_force_gls(self):
    # Eq. (74) as the variance of the generalised least-squares estimate of
    # phi_j from (phi_hat_j, psi_i for i != j), computed with matrices.
    alpha2, tau2 = 0.5, 0.3
    gamma2s = np.array([0.0, 0.02, 0.2])
    sizes = np.array([2.0, 3.0, 4.0])
    for group in range(3):
      group_of = np.repeat(np.arange(3), sizes.astype(int))
      j = int(np.argmax(group_of == group))
      others = np.delete(np.arange(len(group_of)), j)
      noise = (sizes * gamma2s)[group_of]
      # Observations y = [phi_hat_j, psi_others] of the unknowns
      # (phi, p_j): phi_hat_j = phi + p_j + e_j, psi_i = phi + noise_i.
      design = np.zeros((1 + len(others), 2))
      design[:, 0] = 1.0
      design[0, 1] = 1.0
      cov = np.diag(np.concatenate(
          [[alpha2], alpha2 + tau2 + noise[others]]))
      # Prior p_j ~ N(0, tau2); flat prior on phi (added as a tiny precision).
      precision = design.T @ np.linalg.inv(cov) @ design + np.diag(
          [1e-12, 1.0 / tau2])
      posterior = np.linalg.inv(precision)
      target = np.array([1.0, 1.0])  # phi_j = phi + p_j.
      expected = target @ posterior @ target
      self.assertAlmostEqual(
          theory.multi_level_bayes_local_risk(alpha2, tau2, gamma2s, sizes,
                                              group),
          expected, delta=1e-9)

  def test_bad_arguments(self):
    with self.assertRaisesRegex(ValueError, 'one entry per privacy group'):
      theory.optimal_ratios(1.0, [0.0, 0.1], [5, 6, 7])
    with self.assertRaisesRegex(ValueError, '^group must be an integer'):
      theory.multi_level_local_risk(1.0, 1.0, 0.1, [0.0, 0.1], [5, 6],
                                    [1.0, 0.5], 2)
    with self.assertRaisesRegex(ValueError, '^ratios must be positive'):
      theory.group_weights([0.0, 0.0], [3, 4])


if __name__ == '__main__':
  absltest.main()
