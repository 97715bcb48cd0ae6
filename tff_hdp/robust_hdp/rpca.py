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
"""Robust PCA by principal component pursuit, and Robust-HDP's noise estimate.

Principal component pursuit (Candes, Li, Ma and Wright, "Robust Principal
Component Analysis?", J. ACM 2011) splits M = L + S, L low-rank and S sparse,
by minimising ||L||_* + lambda ||S||_1 subject to L + S = M. Their Algorithm 1
(alternating directions on the augmented Lagrangian) iterates

  L <- SVT_{1/mu}(M - S + Y/mu)          singular-value thresholding
  S <- shrink_{lambda/mu}(M - L + Y/mu)  element-wise soft thresholding
  Y <- Y + mu (M - L - S)

with lambda = 1 / sqrt(max(p, n)) and mu = p n / (4 ||M||_1), ||M||_1 the sum
of |M_ij|, until ||M - L - S||_F <= tol ||M||_F. (Paper 003's authors' copy
computes mu with the matrix 1-norm, the largest column sum, a known slip of
the library they copied; we follow Candes et al.) This is `method='admm'`,
the default, as in the authors' code.

With a fixed mu it converges slowly: on Robust-HDP's update matrices
(p ~ 29,000, n = 20) it reaches its iteration bound before its tolerance.
`method='ialm'` is the inexact augmented Lagrange multiplier method of Lin,
Chen and Ma ("The Augmented Lagrange Multiplier Method for Exact Recovery of
Corrupted Low-Rank Matrices", 2010, Algorithm 5), which solves the same
problem with a growing mu:

  Y = M / max(||M||_2, ||M||_max / lambda),  mu = 1.25 / ||M||_2
  S <- shrink_{lambda/mu}(M - L + Y/mu)
  L <- SVT_{1/mu}(M - S + Y/mu)
  Y <- Y + mu (M - L - S),  mu <- min(rho mu, 1e7 mu_0)

and stops at the same tolerance. We take rho = 1.05, not the paper's 1.5:
the residual test only checks L + S = M, and with mu growing fast the
iterates freeze before they are optimal. On planted and on noisy update
matrices, rho = 1.5 stopped after ~25 iterations with the low-rank part off
by up to 0.9 and sigma^_i^2 off by up to 5%; rho = 1.05 reaches ADMM's
objective to 1e-7 relative and its sigma^_i^2 to 0.1%, in ~100 iterations
where ADMM takes 720 (tests/robust_hdp/test_rpca.py checks both).

Robust-HDP (paper 003, Algorithm 1, lines 7-10) runs it on the p x n matrix
M = [Delta_1 | ... | Delta_n] of the clients' updates and estimates client
i's noise variance by sigma^_i^2 = ||S_{:,i}||^2 / p. For large models
(Section 3.5) it runs on blocks of p' rows and averages the blocks' estimates.

The iteration is TensorFlow, one graph loop per precision, so it runs inside
the server's TFF computation; `robust_pca` is the same function for numpy
callers. Its cost is two p x n x n matmuls per iteration (`_svt_operator`);
the first iterations run in float32 and the rest in float64
(`FLOAT32_TOL`). benchmark_robust_hdp.py times it on the 28,938 x 20
updates of paper 003's MNIST model against the solver of an earlier commit.
"""

import dataclasses
from typing import Callable, Optional

import numpy as np
import tensorflow as tf

from tff_hdp.robust_hdp import config

DEFAULT_TOL = 1e-7
DEFAULT_MAX_ITERATIONS = 1000
METHODS = config.RPCA_METHODS  # 'admm', 'ialm'
IALM_RHO = 1.05  # mu's growth per inexact-ALM iteration (see module doc).


def _svt_operator(x: tf.Tensor, tau) -> tf.Tensor:
  """The n x n W with SVT_tau(x) = x W, for a tall x [p, n] (p >= n).

  Singular-value thresholding U diag(max(s - tau, 0)) V^T goes through the
  Gram matrix: x^T x = V diag(s^2) V^T, so U diag(s) = x V and
  SVT_tau(x) = x V diag(max(s - tau, 0) / s) V^T = x W. Forming W (n x n)
  first leaves two p x n x n matmuls per iteration (x^T x and x W), against
  three for x V, its scaling and the product with V^T, and a thin SVD's
  LAPACK call; exact to float64 round-off for the singular values that
  survive the threshold (s > tau > 0). The eigendecomposition is float64
  whatever x's dtype.
  """
  eigenvalues, v = tf.linalg.eigh(
      tf.cast(tf.matmul(x, x, transpose_a=True), tf.float64))
  s = tf.sqrt(tf.maximum(eigenvalues, 0.0))
  tau = tf.cast(tau, tf.float64)
  scale = tf.where(s > tau, (s - tau) / tf.where(s > 0, s, 1.0), 0.0)
  return tf.cast(tf.matmul(v * scale, v, transpose_b=True), x.dtype)


def _svt(x: tf.Tensor, tau) -> tf.Tensor:
  """Singular-value thresholding U diag(max(s - tau, 0)) V^T of x [p, n]."""
  if x.shape[0] is not None and x.shape[1] is not None and x.shape[0] < x.shape[1]:
    return tf.transpose(_svt(tf.transpose(x), tau))
  return tf.matmul(x, _svt_operator(x, tau))


def _shrink(x: tf.Tensor, tau) -> tf.Tensor:
  """sign(x) max(|x| - tau, 0), as x - clip(x, -tau, tau): two passes over
  x instead of four (the same value, to the last bit)."""
  tau = tf.cast(tau, x.dtype)
  return x - tf.clip_by_value(x, -tau, tau)


def _spectral_norm(x: tf.Tensor) -> tf.Tensor:
  """||x||_2, the largest singular value, from the smaller Gram matrix."""
  gram = (tf.matmul(x, x, transpose_a=True) if x.shape[0] is None or
          x.shape[1] is None or x.shape[0] >= x.shape[1] else
          tf.matmul(x, x, transpose_b=True))
  return tf.sqrt(tf.maximum(tf.reduce_max(tf.linalg.eigvalsh(gram)), 0.0))


# The iterations run in float32 until ||M - L - S||_F <= FLOAT32_TOL ||M||_F,
# then in float64 to the tolerance. float32 halves the cost of the two
# matmuls that dominate an iteration, but its round-off (~1e-7 relative)
# cannot meet DEFAULT_TOL; from 1e-3 on, the float64 iterations wash out what
# the float32 ones left (tests/robust_hdp/test_rpca.py: sigma^_i^2 equal to
# all-float64 numpy solvers to 1e-6). In development trials (not kept in the
# repository) it saved 15-20% of the time, and switching later, at 1e-4 or
# 1e-5, left sigma^_i^2 off by 1e-5 or more.
FLOAT32_TOL = 1e-3


@dataclasses.dataclass(frozen=True)
class _Scheme:
  """What distinguishes PCP's two solvers (module doc) in an iteration.

  Attributes:
    lam: lambda (float64).
    next_mu: mu -> the next iteration's mu (float64).
    sparse_first: Whether S is updated before L (Lin et al.) or after it
      (Candes et al.).
  """

  lam: tf.Tensor
  next_mu: Callable[[tf.Tensor], tf.Tensor]
  sparse_first: bool


def _iterate(m64, state, scheme: _Scheme, *, threshold, max_iterations,
             start, dtype):
  """PCP's alternating iterations from state = (low, sparse, dual, mu).

  One graph loop (`tf.while_loop`) in `dtype`; mu, lambda and the residual's
  norm stay float64. Returns (iterations so far, low, sparse, dual, mu) in
  `dtype`.
  """
  low, sparse, dual, mu = state
  m = tf.cast(m64, dtype)
  lam = tf.cast(scheme.lam, dtype)

  def body(i, low, sparse, dual, mu, _):
    inverse = 1.0 / mu
    shifted = m + dual * tf.cast(inverse, dtype)  # M + Y / mu
    if scheme.sparse_first:  # Lin et al.: S, then L from the new S.
      sparse = _shrink(shifted - low, lam * tf.cast(inverse, dtype))
      low = _svt(shifted - sparse, inverse)
    else:  # Candes et al.: L, then S from the new L.
      low = _svt(shifted - sparse, inverse)
      sparse = _shrink(shifted - low, lam * tf.cast(inverse, dtype))
    residual = m - low - sparse
    dual = dual + tf.cast(mu, dtype) * residual
    return (i + 1, low, sparse, dual, scheme.next_mu(mu),
            tf.cast(tf.norm(residual), tf.float64))

  def cond(i, low, sparse, dual, mu, error):
    del low, sparse, dual, mu
    return tf.logical_and(i < max_iterations, error > threshold)

  iterations, low, sparse, dual, mu, _ = tf.while_loop(
      cond, body,
      (start, tf.cast(low, dtype), tf.cast(sparse, dtype),
       tf.cast(dual, dtype), mu, tf.constant(np.inf, tf.float64)))
  return iterations, low, sparse, dual, mu


def _solve(m, state, scheme: _Scheme, *, tol, max_iterations):
  """`_iterate` in float32 to FLOAT32_TOL, then in float64 to `tol`."""
  norm = tf.norm(m)
  iterations = tf.constant(0)
  for dtype, bound in ((tf.float32, max(tol, FLOAT32_TOL)),
                       (tf.float64, tol)):
    iterations, *state = _iterate(
        m, state, scheme, threshold=bound * norm,
        max_iterations=max_iterations, start=iterations, dtype=dtype)
  low, sparse = state[0], state[1]
  return low, sparse, iterations


def principal_component_pursuit(matrix: tf.Tensor,
                                *,
                                lam: Optional[float] = None,
                                mu: Optional[float] = None,
                                tol: float = DEFAULT_TOL,
                                max_iterations: int = DEFAULT_MAX_ITERATIONS,
                                method: str = 'admm'):
  """(L, S, iterations) of PCP on `matrix` (TensorFlow; see module doc).

  Args:
    matrix: M, a [p, n] tensor (computed in float64).
    lam: lambda; 1/sqrt(max(p, n)) when None.
    mu: 'admm': mu, p n / (4 ||M||_1) when None; 'ialm': the initial mu,
      1.25 / ||M||_2 when None.
    tol: Stop when ||M - L - S||_F <= tol ||M||_F.
    max_iterations: Upper bound on the iterations.
    method: 'admm' (Candes et al., fixed mu) or 'ialm' (Lin et al., growing
      mu); see the module doc.

  Returns:
    (L, S, iterations), L and S float64 [p, n].
  """
  if method not in METHODS:
    raise ValueError(f'method must be one of {METHODS}, got {method!r}')
  m = tf.cast(matrix, tf.float64)
  p = tf.cast(tf.shape(m)[0], tf.float64)
  n = tf.cast(tf.shape(m)[1], tf.float64)
  lam = (1.0 / tf.sqrt(tf.maximum(p, n)) if lam is None
         else tf.constant(lam, tf.float64))
  zeros = tf.zeros_like(m)
  if method == 'ialm':
    norm2 = _spectral_norm(m)
    # An all-zero M is its own decomposition: scales of 1 keep the first
    # iteration finite, and it stops there.
    safe_norm2 = tf.where(norm2 > 0, norm2, tf.constant(1.0, tf.float64))
    dual = m / tf.maximum(safe_norm2, tf.reduce_max(tf.abs(m)) / lam)
    mu = (1.25 / safe_norm2 if mu is None else tf.constant(mu, tf.float64))
    mu_bar = mu * 1e7
    scheme = _Scheme(lam=lam,
                     next_mu=lambda mu: tf.minimum(IALM_RHO * mu, mu_bar),
                     sparse_first=True)
    return _solve(m, (zeros, zeros, dual, mu), scheme, tol=tol,
                  max_iterations=max_iterations)
  l1 = tf.reduce_sum(tf.abs(m))
  if mu is None:
    # An all-zero M is its own decomposition; any mu > 0 then stops at once.
    mu = tf.where(l1 > 0, p * n / (4.0 * l1), tf.constant(1.0, tf.float64))
  else:
    mu = tf.constant(mu, tf.float64)
  scheme = _Scheme(lam=lam, next_mu=lambda mu: mu, sparse_first=False)
  return _solve(m, (zeros, zeros, zeros, mu), scheme, tol=tol,
                max_iterations=max_iterations)


def robust_pca(matrix,
               *,
               lam: Optional[float] = None,
               mu: Optional[float] = None,
               tol: float = DEFAULT_TOL,
               max_iterations: int = DEFAULT_MAX_ITERATIONS,
               method: str = 'admm') -> tuple[np.ndarray, np.ndarray]:
  """(low_rank, sparse) of `matrix` by principal component pursuit, as numpy.

  `matrix` is any [p, n] array; the arguments are those of
  `principal_component_pursuit`.
  """
  matrix = np.asarray(matrix)
  if matrix.ndim != 2 or 0 in matrix.shape:
    raise ValueError(f'matrix must be 2-D and non-empty, got shape '
                     f'{matrix.shape}')
  if not np.all(np.isfinite(matrix)):
    raise ValueError('matrix has non-finite entries')
  if method not in METHODS:
    raise ValueError(f'method must be one of {METHODS}, got {method!r}')
  low, sparse, _ = _pcp_function(lam, mu, tol, max_iterations, method)(
      tf.constant(matrix, tf.float64))
  return low.numpy(), sparse.numpy()


_FUNCTIONS = {}


def _pcp_function(lam, mu, tol, max_iterations, method):
  key = (lam, mu, tol, max_iterations, method)
  if key not in _FUNCTIONS:
    _FUNCTIONS[key] = tf.function(
        lambda m: principal_component_pursuit(
            m, lam=lam, mu=mu, tol=tol, max_iterations=max_iterations,
            method=method),
        reduce_retracing=True, autograph=False)
  return _FUNCTIONS[key]


def noise_variances(updates: tf.Tensor,
                    *,
                    block_rows: Optional[int] = None,
                    tol: float = DEFAULT_TOL,
                    max_iterations: int = DEFAULT_MAX_ITERATIONS,
                    method: str = 'admm') -> tf.Tensor:
  """sigma^_i^2 = ||S_{:,i}||^2 / p for each column of the [p, n] `updates`.

  With `block_rows` = p', PCP runs on consecutive blocks of p' rows (the last
  one may be shorter) and the blocks' estimates ||S_b{:,i}||^2 / p_b are
  averaged (paper 003, Section 3.5). `method` is PCP's solver (module doc).
  TensorFlow; returns float64 [n].
  """
  updates = tf.cast(updates, tf.float64)

  def estimate(block):
    _, sparse, _ = principal_component_pursuit(
        block, tol=tol, max_iterations=max_iterations, method=method)
    rows = tf.cast(tf.shape(block)[0], tf.float64)
    return tf.reduce_sum(tf.square(sparse), axis=0) / rows

  p = updates.shape[0]
  if block_rows is None or p is None or block_rows >= p:
    return estimate(updates)
  if block_rows < 1:
    raise ValueError(f'block_rows must be >= 1, got {block_rows}')
  starts = range(0, p, block_rows)
  return tf.add_n([estimate(updates[s:s + block_rows]) for s in starts]) / len(
      starts)
