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
"""Statistical tests of `tff_hdp.theory.simulation` against the closed forms.

Each simulated mean-squared error must lie within `_Z` standard errors of its
closed form (standard errors estimated from the trials; with ~40 such
comparisons at 4.5 SE, a correct simulator fails with probability < 1e-3 per
seed, and the seeds are fixed). Grid minima use common random numbers (same
seed, so the same draws for every r or lambda).
"""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

from tff_hdp import theory
from tff_hdp.theory import simulation

_Z = 4.5


def _simulate(kind, **kwargs):
  if kind == 'point':
    return theory.simulate_point_estimation(num_samples=8, **kwargs)
  return theory.simulate_linear_regression(dim=4, num_samples=12, **kwargs)


class SimulationExactTest(absltest.TestCase):

  def test_designs_have_orthogonal_columns(self):
    designs = simulation._orthogonal_designs(np.random.default_rng(0), 7, 12, 5)
    np.testing.assert_allclose(
        np.einsum('nsd,nse->nde', designs, designs),
        np.broadcast_to(12 * np.eye(5), (7, 5, 5)), atol=1e-10)

  def test_common_random_numbers(self):
    kwargs = dict(data=theory.DataModel(0.4, 0.2), lambdas=[0.0, 1.0],
                  num_trials=50, seed=7)
    a = theory.simulate_point_estimation(
        groups=theory.Groups((3, 9), (0.0, 0.1), (1, 1)), num_samples=5,
        **kwargs)
    b = theory.simulate_point_estimation(
        groups=theory.Groups((3, 9), (0.0, 0.5), (1, 0.2)), num_samples=5,
        **kwargs)
    # lambda = 0 is the local estimate: it ignores ratios and privacy noise.
    np.testing.assert_array_equal(a.client_mse[:, 0], b.client_mse[:, 0])
    self.assertNotEqual(a.server_mse, b.server_mse)
    c = theory.simulate_point_estimation(
        groups=theory.Groups((3, 9), (0.0, 0.1), (1, 1)), num_samples=5,
        **kwargs)
    self.assertEqual(a.server_mse, c.server_mse)

  def test_no_noise_at_all_gives_fedavg(self):
    # One group, no privacy noise: the global model is the plain average,
    # identical for every ratio.
    kwargs = dict(data=theory.DataModel(0.3, 0.0), num_samples=4,
                  num_trials=20, seed=1)
    a = theory.simulate_point_estimation(
        groups=theory.Groups((10,), (0.0,), (1.0,)), **kwargs)
    b = theory.simulate_point_estimation(
        groups=theory.Groups((10,), (0.0,), (7.0,)), **kwargs)
    self.assertAlmostEqual(a.server_mse, b.server_mse, delta=1e-15)

  def test_empty_group_reports_nan(self):
    result = theory.simulate_point_estimation(
        groups=theory.Groups((0, 5), (0.0, 0.1), (1.0, 0.5)),
        data=theory.DataModel(1.0, 0.1), num_samples=3, lambdas=[1.0],
        num_trials=10, seed=0)
    self.assertTrue(np.isnan(result.client_mse[0, 0]))
    self.assertFalse(np.isnan(result.client_mse[1, 0]))

  def test_bad_arguments(self):
    groups = theory.Groups((2, 3), (0.0, 0.1), (1.0, 0.5))
    kwargs = dict(groups=groups, data=theory.DataModel(1.0, 0.1),
                  num_trials=10)
    with self.assertRaisesRegex(ValueError, '^dim must be'):
      theory.simulate_linear_regression(dim=5, num_samples=4, **kwargs)
    with self.assertRaisesRegex(ValueError, '^num_trials must be'):
      theory.simulate_point_estimation(
          num_samples=4, **dict(kwargs, num_trials=1))
    with self.assertRaisesRegex(ValueError, '^groups.sizes must be whole'):
      theory.simulate_point_estimation(
          num_samples=4, **dict(kwargs, groups=groups._replace(
              sizes=(2.5, 3))))
    with self.assertRaisesRegex(ValueError, 'one entry per privacy group'):
      theory.simulate_point_estimation(
          num_samples=4, **dict(kwargs, groups=groups._replace(
              ratios=(1.0,))))
    with self.assertRaisesRegex(TypeError, '^groups must be a '):
      theory.simulate_point_estimation(
          num_samples=4, **dict(kwargs, groups=((2, 3), (0.0, 0.1))))
    with self.assertRaisesRegex(TypeError, '^data must be a '):
      theory.simulate_point_estimation(
          num_samples=4, **dict(kwargs, data=dict(alpha2=1.0, tau2=0.1)))
    with self.assertRaisesRegex(ValueError, '^alpha2 must be > 0'):
      theory.simulate_point_estimation(
          num_samples=4, **dict(kwargs, data=theory.DataModel(0.0, 0.1)))


class SimulationStatisticalTest(parameterized.TestCase):

  def assertWithinSE(self, simulated, se, expected, msg=''):
    self.assertLessEqual(
        abs(simulated - expected), _Z * se,
        f'{msg}: simulated {simulated:.6g} +- {se:.2g}, closed form '
        f'{expected:.6g}')

  @parameterized.parameters('point', 'regression')
  def test_two_level_server_and_clients(self, kind):
    alpha2, tau2, gamma2, n_np, n_p = 0.5, 0.3, 0.02, 6, 34
    n = n_np + n_p
    lambdas = np.array([0.0, 0.5, 2.0, 8.0, np.inf])
    r_star = theory.optimal_ratio(alpha2 + tau2, gamma2, n_p)
    for seed, r in enumerate([r_star, 1.0, 0.05]):
      for own in (True, False):
        result = _simulate(kind,
                           groups=theory.Groups((n_np, n_p), (0.0, gamma2),
                                                (1.0, r)),
                           data=theory.DataModel(alpha2, tau2),
                           lambdas=lambdas, num_trials=3000, seed=seed,
                           own_noise_in_global=own)
        self.assertWithinSE(
            result.server_mse, result.server_mse_se,
            theory.server_variance(alpha2 + tau2, gamma2, n, n_np / n, r),
            f'server, r={r}')
        for group, private in enumerate((False, True)):
          expected = theory.local_risk(lambdas,
                                       theory.DataModel(alpha2, tau2), gamma2,
                                       n, n_p, r, private,
                                       own_noise_in_global=own)
          for k in range(lambdas.size):
            self.assertWithinSE(result.client_mse[group, k],
                                result.client_mse_se[group, k], expected[k],
                                f'client {group}, r={r}, lambda={lambdas[k]}')

  @parameterized.parameters('point', 'regression')
  def test_dp_fedavg(self, kind):
    sigma_c2, gamma2, n, rho_np = 0.6, 0.05, 40, 0.25
    result = _simulate(kind,
                       groups=theory.Groups((n,), ((1 - rho_np) * gamma2,),
                                            (1.0,)),
                       data=theory.DataModel(0.4, sigma_c2 - 0.4),
                       num_trials=3000, seed=11)
    self.assertWithinSE(
        result.server_mse, result.server_mse_se,
        theory.dp_fedavg_server_variance(sigma_c2, gamma2, n, rho_np),
        'DP-FedAvg')

  @parameterized.parameters('point', 'regression')
  def test_three_levels(self, kind):
    alpha2, tau2 = 0.4, 0.2
    gamma2s, sizes = (0.0, 0.01, 0.1), (4, 10, 20)
    r_star = theory.optimal_ratios(alpha2 + tau2, gamma2s, sizes)
    lambdas = []
    for group in range(3):
      lambdas.append(theory.multi_level_optimal_lambda(
          alpha2, tau2, gamma2s, sizes, r_star, group))
    lambdas = np.array(lambdas)
    for seed, ratios in enumerate([r_star, (1.0, 1.0, 1.0)]):
      result = _simulate(kind, groups=theory.Groups(sizes, gamma2s, ratios),
                         data=theory.DataModel(alpha2, tau2),
                         lambdas=lambdas, num_trials=3000, seed=20 + seed)
      self.assertWithinSE(
          result.server_mse, result.server_mse_se,
          theory.multi_level_server_variance(alpha2 + tau2, gamma2s, sizes,
                                             ratios), 'server')
      for group in range(3):
        expected = theory.multi_level_local_risk(lambdas, alpha2, tau2,
                                                 gamma2s, sizes, ratios, group)
        for k in range(3):
          self.assertWithinSE(result.client_mse[group, k],
                              result.client_mse_se[group, k], expected[k],
                              f'group {group}, lambda {lambdas[k]}')

  def test_privacy_noise_calibration(self):
    # Five private clients, each adding N(0, 5 gamma^2): their average
    # carries gamma^2, on top of sigma_c^2 / 5. The noise dominates, so a
    # mis-scaled noise shows (5% more noise is about 6 SE here).
    alpha2, tau2, gamma2 = 0.2, 0.1, 1.0
    result = theory.simulate_linear_regression(
        groups=theory.Groups((5,), (gamma2,), (1.0,)),
        data=theory.DataModel(alpha2, tau2), dim=8, num_samples=10,
        num_trials=4000, seed=12)
    self.assertWithinSE(result.server_mse, result.server_mse_se,
                        (alpha2 + tau2) / 5 + gamma2, 'server')

  def test_own_noise_in_global(self):
    # A small federation where the private client's own noise is a large part
    # of its global model: both variants must match their closed forms, which
    # differ by many standard errors.
    alpha2, tau2, gamma2, n_np, n_p = 0.2, 0.1, 1.0, 2, 4
    data = theory.DataModel(alpha2, tau2)
    lambdas = np.array([1.0, 5.0, np.inf])
    for own in (True, False):
      result = theory.simulate_linear_regression(
          groups=theory.Groups((n_np, n_p), (0.0, gamma2), (1.0, 1.0)),
          data=data, dim=8, num_samples=10, lambdas=lambdas,
          num_trials=3000, seed=13, own_noise_in_global=own)
      expected = theory.local_risk(lambdas, data, gamma2, n_np + n_p, n_p,
                                   1.0, True, own_noise_in_global=own)
      other = theory.local_risk(lambdas, data, gamma2, n_np + n_p, n_p, 1.0,
                                True, own_noise_in_global=not own)
      for k in range(lambdas.size):
        self.assertWithinSE(result.client_mse[1, k], result.client_mse_se[1, k],
                            expected[k], f'own={own}, lambda={lambdas[k]}')
        self.assertGreater(abs(other[k] - expected[k]),
                           4 * _Z * result.client_mse_se[1, k])

  def test_empirical_best_ratio_is_r_star(self):
    sigma_c2, gamma2, n_np, n_p = 1.0, 0.1, 10, 90
    r_star = theory.optimal_ratio(sigma_c2, gamma2, n_p)
    grid = r_star * 3.0**np.arange(-3, 4)
    mses = [theory.simulate_point_estimation(
        groups=theory.Groups((n_np, n_p), (0.0, gamma2), (1.0, r)),
        data=theory.DataModel(0.5, 0.5), num_samples=5, num_trials=4000,
        seed=3).server_mse for r in grid]
    self.assertEqual(int(np.argmin(mses)), 3)

  def test_empirical_best_lambda_is_lambda_star(self):
    # Theorem 8's lambda* (own noise removed, as in eq. (44)) at r*, for a
    # private and a non-private client, on a grid of factors of 3.
    alpha2, tau2, gamma2, n_np, n_p = 0.5, 0.1, 0.05, 4, 16
    n = n_np + n_p
    r_star = theory.optimal_ratio(alpha2 + tau2, gamma2, n_p)
    factors = 3.0**np.arange(-3, 4)
    for group, lam in enumerate(
        (theory.optimal_lambda_np(alpha2, tau2),
         theory.optimal_lambda_p(alpha2, tau2, gamma2, n, n_p))):
      result = theory.simulate_linear_regression(
          groups=theory.Groups((n_np, n_p), (0.0, gamma2), (1.0, r_star)),
          data=theory.DataModel(alpha2, tau2), dim=8, num_samples=10,
          lambdas=lam * factors, num_trials=3000, seed=5,
          own_noise_in_global=False)
      self.assertEqual(int(np.argmin(result.client_mse[group])), 3)

  def test_empirical_best_lambda_with_three_levels(self):
    # The numerical lambda_j* (beyond the paper), Algorithm 1 as written.
    alpha2, tau2 = 0.4, 0.05
    gamma2s, sizes = (0.0, 0.02, 0.2), (3, 8, 12)
    ratios = theory.optimal_ratios(alpha2 + tau2, gamma2s, sizes)
    factors = 3.0**np.arange(-3, 4)
    for group in range(3):
      lam = theory.multi_level_optimal_lambda(alpha2, tau2, gamma2s, sizes,
                                              ratios, group)
      result = theory.simulate_linear_regression(
          groups=theory.Groups(sizes, gamma2s, ratios),
          data=theory.DataModel(alpha2, tau2), dim=8, num_samples=10,
          lambdas=lam * factors,
          num_trials=3000, seed=6)
      self.assertEqual(int(np.argmin(result.client_mse[group])), 3,
                       f'group {group}: {result.client_mse[group]}')


if __name__ == '__main__':
  absltest.main()
