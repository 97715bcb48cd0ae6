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
"""Tests of `tff_hdp.theory.server_aggregation` (paper 001, Lemmas 6-7).

Every closed form is recomputed a different way: r* by minimising the
variance numerically, the variances by summing per-client weights, and the
gaps (79)-(81) as differences of variances.
"""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
from scipy import optimize

from tff_hdp import theory
from tff_hdp.theory import server_aggregation


def _random_setups(seed, count=25):
  """Random (sigma_c2, gamma2, n, n_np) with whole numbers of clients."""
  rng = np.random.default_rng(seed)
  for _ in range(count):
    n = int(rng.integers(2, 300))
    n_np = int(rng.integers(1, n))
    yield (float(rng.uniform(0.05, 5.0)), float(10**rng.uniform(-3, 1)), n,
           n_np)


def _per_client_variance(sigma_c2, gamma2, n, n_np, r):
  """sum_j w_j^2 Var(psi_j) from an explicit list of clients."""
  n_p = n - n_np
  weights = np.array([1.0] * n_np + [r] * n_p)
  weights /= weights.sum()
  variances = np.array([sigma_c2] * n_np + [sigma_c2 + n_p * gamma2] * n_p)
  return float(np.sum(weights**2 * variances))


class ServerAggregationTest(parameterized.TestCase):

  def test_public_names(self):
    self.assertIs(theory.optimal_ratio, server_aggregation.optimal_ratio)
    self.assertIs(theory.server_variance, server_aggregation.server_variance)
    self.assertIs(theory.dp_fedavg_server_variance,
                  server_aggregation.dp_fedavg_server_variance)

  def test_server_variance_equals_sum_over_clients(self):
    rng = np.random.default_rng(0)
    for sigma_c2, gamma2, n, n_np in _random_setups(1):
      r = float(rng.uniform(0.0, 2.0))
      self.assertAlmostEqual(
          theory.server_variance(sigma_c2, gamma2, n, n_np / n, r),
          _per_client_variance(sigma_c2, gamma2, n, n_np, r), delta=1e-12)

  def test_optimal_ratio_minimises_server_variance(self):
    for sigma_c2, gamma2, n, n_np in _random_setups(2):
      rho_np = n_np / n
      args = (sigma_c2, gamma2, n, rho_np)
      result = optimize.minimize_scalar(
          lambda log_r, args=args: theory.server_variance(*args,
                                                          np.exp(log_r)),
          bounds=(-20.0, 5.0), method='bounded', options={'xatol': 1e-10})
      r_star = theory.optimal_ratio(sigma_c2, gamma2, n - n_np)
      self.assertAlmostEqual(np.log(r_star), result.x, delta=1e-4)
      optimum = theory.optimal_server_variance(sigma_c2, gamma2, n, rho_np)
      self.assertAlmostEqual(
          theory.server_variance(sigma_c2, gamma2, n, rho_np, r_star),
          optimum, delta=1e-12 * optimum)
      self.assertLessEqual(optimum, result.fun * (1 + 1e-12))

  def test_optimal_variance_is_inverse_variance_weighting(self):
    # Lemma 1: 1 / sum_j (1 / Var(psi_j)).
    for sigma_c2, gamma2, n, n_np in _random_setups(3):
      n_p = n - n_np
      bayes = 1.0 / (n_np / sigma_c2 + n_p / (sigma_c2 + n_p * gamma2))
      self.assertAlmostEqual(
          theory.optimal_server_variance(sigma_c2, gamma2, n, n_np / n), bayes,
          delta=1e-12 * bayes)

  def test_hdp_fedavg_is_ratio_one(self):
    for sigma_c2, gamma2, n, n_np in _random_setups(4):
      self.assertAlmostEqual(
          theory.hdp_fedavg_server_variance(sigma_c2, gamma2, n, n_np / n),
          _per_client_variance(sigma_c2, gamma2, n, n_np, 1.0), delta=1e-12)

  def test_dp_fedavg_adds_private_noise_to_everyone(self):
    for sigma_c2, gamma2, n, n_np in _random_setups(5):
      n_p = n - n_np
      # Plain average of N updates, each with variance sigma_c2 + N_p gamma2.
      expected = n * (sigma_c2 + n_p * gamma2) / n**2
      self.assertAlmostEqual(
          theory.dp_fedavg_server_variance(sigma_c2, gamma2, n, n_np / n),
          expected, delta=1e-12)

  def test_gaps_are_differences_of_variances(self):
    for sigma_c2, gamma2, n, n_np in _random_setups(6):
      rho_np = n_np / n
      args = (sigma_c2, gamma2, n, rho_np)
      opt = theory.optimal_server_variance(*args)
      hdp = theory.hdp_fedavg_server_variance(*args)
      dp = theory.dp_fedavg_server_variance(*args)
      scale = dp
      self.assertAlmostEqual(
          theory.gap_hdp_fedavg_optimal(*args), hdp - opt, delta=1e-12 * scale)
      self.assertAlmostEqual(
          theory.gap_dp_fedavg_optimal(*args), dp - opt, delta=1e-12 * scale)
      self.assertAlmostEqual(
          theory.gap_dp_fedavg_hdp_fedavg(*args), dp - hdp,
          delta=1e-12 * scale)
      # Eq. (81) simplifies to rho_np (1 - rho_np) gamma^2.
      self.assertAlmostEqual(
          theory.gap_dp_fedavg_hdp_fedavg(*args),
          rho_np * (1 - rho_np) * gamma2, delta=1e-12 * scale)
      self.assertGreaterEqual(theory.gap_hdp_fedavg_optimal(*args), 0.0)

  @parameterized.parameters(0.0, 1.0, 1e-9, 1.0 - 1e-9)
  def test_gaps_close_at_homogeneous_privacy(self, rho_np):
    # Lemma 7: the gaps vanish as rho_np -> 0 or 1.
    args = (1.3, 0.7, 500, rho_np)
    for gap in (theory.gap_hdp_fedavg_optimal, theory.gap_dp_fedavg_optimal,
                theory.gap_dp_fedavg_hdp_fedavg):
      self.assertLess(gap(*args), 1e-6)

  def test_gap_limits_for_many_clients(self):
    # Lemma 7: as N -> inf, (79) -> (1 - rho)^2 gamma^2, (80) -> (1 - rho) g^2.
    sigma_c2, gamma2, rho_np = 0.8, 0.3, 0.2
    n = 1e10
    self.assertAlmostEqual(
        theory.gap_hdp_fedavg_optimal(sigma_c2, gamma2, n, rho_np),
        (1 - rho_np)**2 * gamma2, delta=1e-8)
    self.assertAlmostEqual(
        theory.gap_dp_fedavg_optimal(sigma_c2, gamma2, n, rho_np),
        (1 - rho_np) * gamma2, delta=1e-8)

  def test_ratio_one_without_privacy_noise(self):
    self.assertEqual(theory.optimal_ratio(2.0, 0.0, 10), 1.0)
    # No private clients: everything is FedAvg.
    self.assertAlmostEqual(theory.optimal_server_variance(2.0, 0.5, 10, 1.0),
                           0.2)

  def test_broadcasts_over_arrays(self):
    gamma2 = np.array([0.01, 0.1, 1.0])
    variances = theory.server_variance(1.0, gamma2, 100, 0.1, 0.5)
    self.assertEqual(variances.shape, (3,))
    for g, v in zip(gamma2, variances):
      self.assertAlmostEqual(v, theory.server_variance(1.0, g, 100, 0.1, 0.5))

  def test_num_private(self):
    self.assertAlmostEqual(theory.num_private(200, 0.05), 190.0)

  @parameterized.named_parameters(
      ('negative_gamma2', dict(gamma2=-1.0), 'gamma2'),
      ('rho_above_one', dict(rho_np=1.5), 'rho_np'),
      ('zero_sigma', dict(sigma_c2=0.0), 'sigma_c2'),
      ('negative_r', dict(r=-0.1), 'r'),
      ('zero_r_no_nonprivate', dict(r=0.0, rho_np=0.0), 'r'),
  )
  def test_bad_arguments_name_the_argument(self, override, name):
    kwargs = dict(sigma_c2=1.0, gamma2=0.1, n=10, rho_np=0.2, r=0.5)
    kwargs.update(override)
    with self.assertRaisesRegex(ValueError, f'^{name} must'):
      theory.server_variance(**kwargs)


if __name__ == '__main__':
  absltest.main()
