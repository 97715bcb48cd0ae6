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
"""Tests of tff_hdp/robust_hdp/rpca.py against planted matrices and numpy ADMM."""

import functools

import numpy as np
import pytest
import tensorflow as tf

from tff_hdp.robust_hdp import rpca


def numpy_pcp(m, tol=1e-7, max_iterations=1000):
  """An independent PCP (Candes et al. 2011, Algorithm 1) with numpy's SVD."""
  p, n = m.shape
  lam = 1.0 / np.sqrt(max(p, n))
  mu = p * n / (4.0 * np.abs(m).sum())
  s = np.zeros_like(m)
  y = np.zeros_like(m)
  low = np.zeros_like(m)
  for _ in range(max_iterations):
    u, sig, vt = np.linalg.svd(m - s + y / mu, full_matrices=False)
    low = (u * np.maximum(sig - 1 / mu, 0)) @ vt
    x = m - low + y / mu
    s = np.sign(x) * np.maximum(np.abs(x) - lam / mu, 0)
    y = y + mu * (m - low - s)
    if np.linalg.norm(m - low - s) <= tol * np.linalg.norm(m):
      break
  return low, s


def _planted(p=400, n=40, rank=2, density=0.05, seed=0):
  rng = np.random.default_rng(seed)
  low = rng.normal(size=(p, rank)) @ rng.normal(size=(rank, n))
  sparse = np.where(rng.random((p, n)) < density,
                    rng.choice([-1.0, 1.0], (p, n)) * 5.0, 0.0)
  return low, sparse


def test_recovers_planted_low_rank_plus_sparse():
  low, sparse = _planted()
  est_low, est_sparse = rpca.robust_pca(low + sparse)
  assert np.linalg.norm(est_low - low) / np.linalg.norm(low) < 1e-3
  assert np.linalg.norm(est_sparse - sparse) / np.linalg.norm(sparse) < 1e-3
  assert np.linalg.matrix_rank(est_low, tol=1e-6 * np.abs(est_low).max()) == 2


@pytest.mark.parametrize('shape', [(300, 12), (12, 300)])
def test_matches_independent_numpy_pcp(shape):
  rng = np.random.default_rng(4)
  m = rng.normal(size=shape) + rng.normal(size=(shape[0], 1))
  ours_low, ours_sparse = rpca.robust_pca(m, max_iterations=300,
                                         method='admm')
  ref_low, ref_sparse = numpy_pcp(m, max_iterations=300)
  np.testing.assert_allclose(ours_low, ref_low, atol=1e-8)
  np.testing.assert_allclose(ours_sparse, ref_sparse, atol=1e-8)


def test_noise_variances_rank_clients_by_noise():
  # Client columns: a shared update plus Gaussian noise of known scale.
  rng = np.random.default_rng(1)
  p, n = 5000, 10
  sigmas = np.linspace(0.05, 0.5, n)
  m = rng.normal(size=(p, 1)) * 0.02 + rng.normal(size=(p, n)) * sigmas
  est = rpca.noise_variances(tf.constant(m)).numpy()
  assert np.corrcoef(est, sigmas**2)[0, 1] > 0.99
  assert list(np.argsort(est)) == list(range(n))


def test_blocks_average_the_estimates():
  rng = np.random.default_rng(2)
  m = tf.constant(rng.normal(size=(600, 6)) * np.arange(1, 7))
  whole = rpca.noise_variances(m).numpy()
  blocks = rpca.noise_variances(m, block_rows=200).numpy()
  parts = [rpca.noise_variances(m[i:i + 200]).numpy() for i in (0, 200, 400)]
  np.testing.assert_allclose(blocks, np.mean(parts, axis=0), rtol=1e-10)
  np.testing.assert_allclose(blocks, whole, rtol=0.2)


def test_zero_matrix_and_bad_input():
  low, sparse = rpca.robust_pca(np.zeros((5, 3)))
  assert not low.any() and not sparse.any()
  with pytest.raises(ValueError, match='2-D'):
    rpca.robust_pca(np.zeros(5))
  with pytest.raises(ValueError, match='non-finite'):
    rpca.robust_pca(np.array([[np.nan, 1.0]]))


def numpy_inexact_alm(m, tol=1e-7, max_iterations=1000, rho=1.05):
  """An independent inexact ALM (Lin, Chen and Ma 2010, Algorithm 5)."""
  p, n = m.shape
  lam = 1.0 / np.sqrt(max(p, n))
  norm2 = np.linalg.norm(m, 2)
  y = m / max(norm2, np.abs(m).max() / lam)
  mu = 1.25 / norm2
  mu_bar = mu * 1e7
  low = np.zeros_like(m)
  s = np.zeros_like(m)
  for i in range(max_iterations):
    t = m - low + y / mu
    s = np.maximum(t - lam / mu, 0) + np.minimum(t + lam / mu, 0)
    u, sig, vt = np.linalg.svd(m - s + y / mu, full_matrices=False)
    low = (u * np.maximum(sig - 1 / mu, 0)) @ vt
    z = m - low - s
    y = y + mu * z
    mu = min(mu * rho, mu_bar)
    if np.linalg.norm(z) <= tol * np.linalg.norm(m):
      return low, s, i + 1
  return low, s, max_iterations


def test_inexact_alm_matches_independent_numpy_version():
  rng = np.random.default_rng(4)
  m = rng.normal(size=(300, 12)) + rng.normal(size=(300, 1))
  ours_low, ours_sparse = rpca.robust_pca(m, method='ialm')
  ref_low, ref_sparse, _ = numpy_inexact_alm(m)
  # Both stop at ||M - L - S||_F <= 1e-7 ||M||_F (8.5e-6 here); ours starts
  # in float32 (rpca.IALM_FLOAT32_MARGIN), so the paths part at round-off and
  # the ends agree to well inside that tolerance.
  np.testing.assert_allclose(ours_low, ref_low, atol=1e-6)
  np.testing.assert_allclose(ours_sparse, ref_sparse, atol=1e-6)


def test_both_solvers_find_the_planted_decomposition():
  low, sparse = _planted()
  m = tf.constant(low + sparse)
  admm_low, admm_sparse, admm_iterations = rpca.principal_component_pursuit(
      m, tol=1e-9, max_iterations=5000, method='admm')
  ialm_low, ialm_sparse, _ = rpca.principal_component_pursuit(
      m, tol=1e-9, method='ialm')
  assert int(admm_iterations) < 5000  # Converged, not capped.
  np.testing.assert_allclose(admm_sparse, sparse, atol=1e-6)
  np.testing.assert_allclose(ialm_low, low, atol=1e-3)
  np.testing.assert_allclose(ialm_sparse, sparse, atol=1e-3)


def test_paper_growth_rate_stops_short_of_the_minimiser():
  # Why IALM_RHO is 1.05: with Lin et al.'s rho = 1.5 the residual test
  # passes while the low-rank part is still far from the planted one.
  low, sparse = _planted()
  fast_low, _, _ = numpy_inexact_alm(low + sparse, tol=1e-9, rho=1.5)
  slow_low, _, _ = numpy_inexact_alm(low + sparse, tol=1e-9)
  assert np.abs(fast_low - low).max() > 0.1
  assert np.abs(slow_low - low).max() < 1e-3


def test_solvers_agree_on_noise_variances_of_noisy_updates():
  # Updates as Robust-HDP sees them: a shared direction plus each client's
  # Gaussian noise. The inexact ALM needs far fewer iterations for the same
  # estimates.
  rng = np.random.default_rng(1)
  p, n = 3000, 10
  sigmas = np.linspace(0.05, 0.5, n)
  m = tf.constant(rng.normal(size=(p, 1)) * 0.02 +
                  rng.normal(size=(p, n)) * sigmas)
  _, _, admm_iterations = rpca.principal_component_pursuit(m, method='admm')
  _, _, ialm_iterations = rpca.principal_component_pursuit(m, method='ialm')
  assert int(ialm_iterations) < int(admm_iterations) / 4
  admm = rpca.noise_variances(m, method='admm').numpy()
  ialm = rpca.noise_variances(m, method='ialm').numpy()
  np.testing.assert_allclose(ialm, admm, rtol=0.005)
  assert list(np.argsort(ialm)) == list(range(n))


def test_inexact_alm_zero_matrix_and_unknown_method():
  low, sparse = rpca.robust_pca(np.zeros((5, 3)), method='ialm')
  assert not low.any() and not sparse.any()
  with pytest.raises(ValueError, match='method must be one of'):
    rpca.robust_pca(np.ones((5, 3)), method='svd')


@pytest.mark.parametrize('method', rpca.METHODS)
def test_noise_variances_match_all_float64_numpy_solvers(method):
  # The solver's float32 first phase (rpca.FLOAT32_TOL) and its Gram-matrix
  # SVT leave sigma^_i^2 where an all-float64 SVD-based solver puts them, to
  # 1e-6 relative, on updates shaped like Robust-HDP's (p >> n, a shared
  # signal under per-client noise of different sizes).
  m = _noisy_updates()
  _, ref_sparse, _ = _float64_reference(method)
  ours = rpca.noise_variances(tf.constant(m), method=method,
                              max_iterations=_ITERATIONS[method])
  np.testing.assert_allclose(ours.numpy(), (ref_sparse**2).sum(0) / len(m),
                             rtol=1e-6)


def _noisy_updates():
  rng = np.random.default_rng(7)
  p, n = 4000, 20
  sigmas = rng.uniform(0.05, 0.5, n)
  return rng.normal(size=(p, 1)) * 0.02 + rng.normal(size=(p, n)) * sigmas


_ITERATIONS = {'admm': 150, 'ialm': 1000}


@functools.lru_cache(maxsize=None)
def _float64_reference(method):
  """(L, S, iterations) of the numpy solver on `_noisy_updates()`."""
  if method == 'ialm':
    return numpy_inexact_alm(_noisy_updates())
  return (*numpy_pcp(_noisy_updates(), max_iterations=_ITERATIONS[method]),
          _ITERATIONS[method])


@pytest.mark.parametrize('method', rpca.METHODS)
def test_float32_iterations_leave_the_float64_iterates(method, monkeypatch):
  # What the float32 phase is for and what it must not change: the same
  # iterations as the all-float64 numpy solver (the same count, as the
  # stopping test is reached at the same iterate, and sigma^_i^2 and the
  # weights 1/sigma^_i^2 to 1e-6), the inexact ALM's first iterations in
  # float32 (on these updates, whose low-rank part is small against M) and
  # its last ones in float64, ADMM's in float64 from FLOAT32_TOL on. Loop
  # passes counted per precision: the inexact ALM's loop makes one pass more
  # than its iterations (`rpca._ialm_phase`).
  phase_name = f'_{method}_phase'
  phase = getattr(rpca, phase_name)
  passes = []

  def counted_phase(*args, dtype, **kwargs):
    state = phase(*args, dtype=dtype, **kwargs)
    passes.append(state[0])
    return state

  monkeypatch.setattr(rpca, phase_name, counted_phase)
  solve = tf.function(
      lambda m: (rpca.principal_component_pursuit(
          m, method=method, max_iterations=_ITERATIONS[method]), passes),
      autograph=False)
  (_, sparse, iterations), (float32_passes, all_passes) = solve(
      tf.constant(_noisy_updates()))
  _, ref_sparse, ref_iterations = _float64_reference(method)
  assert int(iterations) == ref_iterations
  variances = (sparse.numpy()**2).sum(0)
  ref_variances = (ref_sparse**2).sum(0)
  np.testing.assert_allclose(variances, ref_variances, rtol=1e-6)
  weights = (1 / variances) / (1 / variances).sum()
  ref_weights = (1 / ref_variances) / (1 / ref_variances).sum()
  np.testing.assert_allclose(weights, ref_weights, rtol=1e-6)
  assert int(all_passes) > int(float32_passes)  # float64 to the end.
  if method == 'ialm':
    assert int(float32_passes) > 0.5 * int(iterations)
  else:  # FLOAT32_TOL is met within 2 iterations on these updates.
    assert int(float32_passes) <= 2


def test_default_solver_converges_on_noisy_updates():
  # The default solves the problem to its tolerance on updates like
  # Robust-HDP's (noise with a small shared signal), far inside its bound.
  # (The authors' ADMM takes 725 iterations here; on the full-MNIST updates,
  # 28,938 x 20, it runs into its bound of 1,000: benchmark_robust_hdp.py.)
  assert rpca.DEFAULT_METHOD == 'ialm'
  _, _, iterations = rpca.principal_component_pursuit(
      tf.constant(_noisy_updates()))
  assert int(iterations) < rpca.DEFAULT_MAX_ITERATIONS / 4
