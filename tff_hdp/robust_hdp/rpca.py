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
by minimising ||L||_* + lambda ||S||_1 subject to L + S = M, with lambda =
1 / sqrt(max(p, n)). `method='admm'` (as in the authors' code) is their
Algorithm 1, alternating directions on the augmented Lagrangian
with mu = p n / (4 ||M||_1), ||M||_1 the sum of |M_ij|:

  L <- SVT_{1/mu}(M - S + Y/mu)          singular-value thresholding
  S <- shrink_{lambda/mu}(M - L + Y/mu)  element-wise soft thresholding
  Y <- Y + mu (M - L - S)

until ||M - L - S||_F <= tol ||M||_F. `method='ialm'` is the inexact
augmented Lagrange multiplier method of Lin, Chen and Ma (2010, Algorithm
5): the same problem and tolerance with a growing mu (Y = M / max(||M||_2,
||M||_max / lambda), mu_0 = 1.25 / ||M||_2, the S step first, then
mu <- min(rho mu, 1e7 mu_0)), with rho = 1.05, not the paper's 1.5. It is
the default (`DEFAULT_METHOD`): on Robust-HDP's updates ADMM's fixed mu
reaches its iteration bound before the tolerance.

Robust-HDP (paper 003, Algorithm 1, lines 7-10) runs it on the p x n matrix
M = [Delta_1 | ... | Delta_n] of the clients' updates and estimates client
i's noise variance by sigma^_i^2 = ||S_{:,i}||^2 / p; for large models
(Section 3.5) it runs on blocks of p' rows and averages their estimates.
The iteration is TensorFlow, one graph loop per precision (float32 while
its round-off cannot move the answer, `FLOAT32_TOL`, then float64), so it
runs inside the server's TFF computation; `robust_pca` is the same function
for numpy callers. Why rho = 1.05, how the iterates are computed and why
every round starts cold: docs/robust_hdp.md, "Robust PCA".
"""

import dataclasses
from typing import Callable, NamedTuple, Optional

import numpy as np
import tensorflow as tf

from tff_hdp.robust_hdp import presets

DEFAULT_TOL = 1e-7
DEFAULT_MAX_ITERATIONS = 1000
METHODS = presets.RPCA_METHODS  # 'ialm', 'admm'
DEFAULT_METHOD = presets.PAPER.rpca_method  # 'ialm'
IALM_RHO = 1.05  # mu's growth per inexact-ALM iteration (see module doc).

# The iterations run in float32 while float32's round-off cannot move the
# answer, then in float64 to the tolerance (`_Scheme.float32_floor2`).
# ADMM: while ||M - L - S||_F > FLOAT32_TOL ||M||_F. Its slow iterations
# carry round-off for hundreds of iterations: run in float32 to its
# iteration bound on Robust-HDP's updates, they moved sigma^_i^2 by up to
# 1.4e-6. The inexact ALM: while ||M - L - S||_F / ||M||_F >
# IALM_FLOAT32_MARGIN eps_32 ||X||_F^2 / ||M||_F^2, i.e. far above the
# float32 round-off of SVT's Gram matrix X^T X (X the matrix SVT thresholds,
# eps_32 float32's epsilon) against the problem's scale. Where L is small
# against M, as on Robust-HDP's updates (sigma^_i^2 mostly noise), all but
# the last ~20 iterations are float32; where it is not, float32 stops near
# FLOAT32_TOL, as for ADMM (with a ten times smaller margin, L was 8e-7 off
# instead of 1e-8 on such a matrix). Checked by tests/robust_hdp/test_rpca.py:
# sigma^_i^2 equal to all-float64 numpy solvers to 1e-6, L and S to 1e-6
# (inexact ALM) and 1e-8 (ADMM).
FLOAT32_TOL = 1e-3
IALM_FLOAT32_MARGIN = 3e4
_EPS32 = float(np.finfo(np.float32).eps)


def _gram(x: tf.Tensor) -> tf.Tensor:
  """x^T x of a tall x [p, n], float64 [n, n]."""
  return tf.cast(tf.matmul(x, x, transpose_a=True), tf.float64)


def _svt_weights(gram: tf.Tensor, tau) -> tf.Tensor:
  """The float64 n x n W with SVT_tau(x) = x W, from gram = x^T x.

  Singular-value thresholding U diag(max(s - tau, 0)) V^T goes through the
  Gram matrix: x^T x = V diag(s^2) V^T, so U diag(s) = x V and
  SVT_tau(x) = x V diag(max(s - tau, 0) / s) V^T = x W. Forming W (n x n)
  first leaves two p x n x n matmuls per iteration (x^T x and x W), against
  three for x V, its scaling and the product with V^T, and a thin SVD's
  LAPACK call; exact to float64 round-off for the singular values that
  survive the threshold (s > tau > 0).
  """
  eigenvalues, v = tf.linalg.eigh(gram)
  s = tf.sqrt(tf.maximum(eigenvalues, 0.0))
  tau = tf.cast(tau, tf.float64)
  scale = tf.where(s > tau, (s - tau) / tf.where(s > 0, s, 1.0), 0.0)
  return tf.matmul(v * scale, v, transpose_b=True)


def _clip(x: tf.Tensor, tau) -> tf.Tensor:
  """clip(x, -tau, tau) in one pass (`tf.clip_by_value` makes two)."""
  tau = tf.cast(tau, x.dtype)
  return tf.raw_ops.ClipByValue(t=x, clip_value_min=-tau, clip_value_max=tau)


def _shrink(x: tf.Tensor, tau) -> tf.Tensor:
  """sign(x) max(|x| - tau, 0), as x - clip(x, -tau, tau) (the same value,
  to the last bit): the S step, which the iterations take as T - clip(T)."""
  return x - _clip(x, tau)


def _squared_norm(x: tf.Tensor) -> tf.Tensor:
  """||x||_F^2 in one pass (`tf.nn.l2_loss` is half of it), float64."""
  return 2.0 * tf.cast(tf.nn.l2_loss(x), tf.float64)


def _spectral_norm(x: tf.Tensor) -> tf.Tensor:
  """||x||_2, the largest singular value, from the smaller Gram matrix."""
  gram = (tf.matmul(x, x, transpose_a=True) if x.shape[0] is None or
          x.shape[1] is None or x.shape[0] >= x.shape[1] else
          tf.matmul(x, x, transpose_b=True))
  return tf.sqrt(tf.maximum(tf.reduce_max(tf.linalg.eigvalsh(gram)), 0.0))


@dataclasses.dataclass(frozen=True)
class _Scheme:
  """What a solver's iterations need besides M.

  Attributes:
    lam: lambda (float64).
    next_mu: mu -> the next iteration's mu (float64).
    float32_floor2: (X^T X, ||M||_F^2) -> the squared residual down to which
      the iterations run in float32 (FLOAT32_TOL's comment).
  """

  lam: tf.Tensor
  next_mu: Callable[[tf.Tensor], tf.Tensor]
  float32_floor2: Callable[[tf.Tensor, tf.Tensor], tf.Tensor]


def _admm_phase(m64, state, scheme: _Scheme, *, frobenius2, tol,
                max_iterations, dtype):
  """Candes et al.'s iterations from `state`, in `dtype`, one graph loop.

  With D = Y/mu, the S step is S = T - clip(T, +-lambda/mu) for
  T = M - L + D_k, so D_{k+1} = D_k + M - L - S = clip(T, +-lambda/mu),
  M - L - S = D_{k+1} - D_k, and the next SVT's argument is
  M - S + D_{k+1} = (L - D_k) + 2 D_{k+1}. An iteration is SVT's two matmuls
  and six element-wise passes; Y and S are not formed (S = T - D at the end).

  Args:
    m64: M, float64 [p, n], p >= n.
    state: (iterations, X = M - S_k + D_k, D_k, L_k, T of iteration k,
      ||M - L_k - S_k||_F^2, mu).
    scheme: The method's `_Scheme`.
    frobenius2: ||M||_F^2.
    tol: Stop when ||M - L - S||_F <= tol ||M||_F.
    max_iterations: The bound on the iterations.
    dtype: The iterates' dtype; mu, lambda, W and the norms are float64.

  Returns:
    The state after the loop, its matrices in `dtype`.
  """
  m = tf.cast(m64, dtype)
  threshold2 = tol**2 * frobenius2
  float32 = dtype == tf.float32
  *_, mu = state
  tau = scheme.lam / mu

  def body(i, x, dual, low, shifted, error2, floor2, mu):
    del low, shifted, error2, floor2
    gram = _gram(x)
    low = tf.matmul(x, tf.cast(_svt_weights(gram, 1.0 / mu), dtype))
    u = low - dual  # L - Y_k / mu
    shifted = m - u  # T = M - L + Y_k / mu; S = T - clip(T)
    new_dual = _clip(shifted, tau)  # Y_{k+1} / mu
    error2 = _squared_norm(new_dual - dual)  # ||M - L - S||_F^2
    x = tf.add_n([u, new_dual, new_dual])  # M - S + Y_{k+1} / mu
    floor2 = (scheme.float32_floor2(gram, frobenius2) if float32 else
              tf.constant(0.0, tf.float64))
    return i + 1, x, new_dual, low, shifted, error2, floor2, mu

  def cond(i, x, dual, low, shifted, error2, floor2, mu):
    del x, dual, low, shifted, mu
    return tf.logical_and(i < max_iterations,
                          error2 > tf.maximum(threshold2, floor2))

  i, x, dual, low, shifted, error2, mu = state
  return tf.while_loop(
      cond, body,
      (i, *[tf.cast(v, dtype) for v in (x, dual, low, shifted)], error2,
       tf.constant(0.0, tf.float64), mu))[:6] + (mu,)


class _IalmPass(NamedTuple):
  """`_ialm_phase`'s loop state after k passes (iterate k - 1 made)."""
  i: tf.Tensor  # k.
  x: tf.Tensor  # X_k.
  e: tf.Tensor  # E_{k-1}.
  minus_low: tf.Tensor  # -L_{k-1}.
  shifted: tf.Tensor  # T of pass k.
  clipped: tf.Tensor  # clip(T) of pass k.
  shifted_last: tf.Tensor  # T of pass k - 1.
  clipped_last: tf.Tensor  # clip(T) of pass k - 1.
  weights: tf.Tensor  # W_k.
  error2: tf.Tensor  # ||M - L_{k-1} - S_{k-1}||_F^2.
  floor2: tf.Tensor  # float32's floor under error2 (0 in float64).
  a: tf.Tensor  # a_k.
  mu: tf.Tensor  # mu_k.


def _ialm_phase(m64, state, scheme: _Scheme, *, frobenius2, tol,
                max_iterations, dtype):
  """Lin et al.'s iterations from `state`, in `dtype`, one graph loop.

  With X_{k+1} = M - S_{k+1} + Y_k/mu_k (SVT's argument) and L = X W, the
  multiplier is Y_{k+1} = Y_k + mu_k (M - L - S) = mu_k (X_{k+1} - L_{k+1});
  so with E_k = Y_k / mu_k = a_k (X_k - L_k), a_k = mu_{k-1} / mu_k,

    T = M - L_k + E_k,  S_{k+1} = T - clip(T, +-lambda/mu_k),
    X_{k+1} = L_k + clip(T, +-lambda/mu_k),
    M - L_{k+1} - S_{k+1} = (X_{k+1} - L_{k+1}) - E_k.

  The residual of iterate k needs L_k, so it is taken in the next pass of
  the loop, which also makes half of iterate k + 1 (dropped if k is the
  last). A pass is SVT's two matmuls and seven element-wise passes over
  p x n; Y and S are not formed (S = T - clip(T) of the pass before, at the
  end).

  Args:
    m64: M, float64 [p, n], p >= n.
    state: After k passes of the loop (iterate k - 1 made): (k, X_k, E_{k-1},
      -L_{k-1}, T and clip(T) of pass k and of pass k - 1, W_k,
      ||M - L_{k-1} - S_{k-1}||_F^2, a_k, mu_k).
    scheme: The method's `_Scheme`.
    frobenius2: ||M||_F^2.
    tol: Stop when ||M - L - S||_F <= tol ||M||_F.
    max_iterations: The bound on the iterations.
    dtype: The iterates' dtype; mu, lambda, W and the norms are float64.

  Returns:
    The state after the loop, its matrices in `dtype`.
  """
  m = tf.cast(m64, dtype)
  threshold2 = tol**2 * frobenius2
  float32 = dtype == tf.float32

  def body(s: _IalmPass):
    minus_low = tf.matmul(s.x, tf.cast(-s.weights, dtype))  # -L_k
    d = s.x + minus_low  # Y_k / mu_{k-1}
    new_e = tf.cast(s.a, dtype) * d  # E_k = Y_k / mu_k
    # ||M - L_k - S_k||_F^2; iterate 0 (L = S = 0) is not tested.
    error2 = tf.where(s.i > 0, _squared_norm(d - s.e),
                      tf.constant(np.inf, tf.float64))
    new_shifted = tf.add_n([m, minus_low, new_e])  # T = M - L_k + E_k
    new_clipped = _clip(new_shifted, scheme.lam / s.mu)  # S_{k+1} = T - this
    new_x = new_clipped - minus_low  # X_{k+1}
    gram = _gram(new_x)
    floor2 = (scheme.float32_floor2(gram, frobenius2) if float32 else
              tf.constant(0.0, tf.float64))
    next_mu = scheme.next_mu(s.mu)
    return (_IalmPass(s.i + 1, new_x, new_e, minus_low, new_shifted,
                      new_clipped, s.shifted, s.clipped,
                      _svt_weights(gram, 1.0 / s.mu), error2, floor2,
                      s.mu / next_mu, next_mu),)

  def cond(s: _IalmPass):
    return tf.logical_and(s.i - 1 < max_iterations,
                          s.error2 > tf.maximum(threshold2, s.floor2))

  i, *matrices, weights, error2, a, mu = state
  (state,) = tf.while_loop(
      cond, body,
      (_IalmPass(i, *[tf.cast(v, dtype) for v in matrices], weights, error2,
                 tf.constant(0.0, tf.float64), a, mu),))
  state = tuple(state)
  return state[:10] + state[11:]


def _solve(phase, m, state, scheme: _Scheme, *, tol, max_iterations):
  """`phase` in float32 down to `scheme.float32_floor2`, then in float64 to
  `tol`; returns the final state."""
  frobenius2 = tf.reduce_sum(tf.square(m))
  for dtype in (tf.float32, tf.float64):
    state = phase(m, state, scheme, frobenius2=frobenius2, tol=tol,
                  max_iterations=max_iterations, dtype=dtype)
  return state


def principal_component_pursuit(matrix: tf.Tensor,
                                *,
                                lam: Optional[float] = None,
                                mu: Optional[float] = None,
                                tol: float = DEFAULT_TOL,
                                max_iterations: int = DEFAULT_MAX_ITERATIONS,
                                method: str = DEFAULT_METHOD):
  """(L, S, iterations) of PCP on `matrix` (TensorFlow; see module doc).

  Args:
    matrix: M, a [p, n] tensor (computed in float64).
    lam: lambda; 1/sqrt(max(p, n)) when None.
    mu: 'admm': mu, p n / (4 ||M||_1) when None; 'ialm': the initial mu,
      1.25 / ||M||_2 when None.
    tol: Stop when ||M - L - S||_F <= tol ||M||_F.
    max_iterations: Upper bound on the iterations.
    method: 'ialm' (Lin et al., growing mu; the default) or 'admm' (Candes
      et al., fixed mu); see the module doc.

  Returns:
    (L, S, iterations), L and S float64 [p, n].
  """
  if method not in METHODS:
    raise ValueError(f'method must be one of {METHODS}, got {method!r}')
  m = tf.cast(matrix, tf.float64)
  if (m.shape[0] is not None and m.shape[1] is not None and
      m.shape[0] < m.shape[1]):
    # PCP is the same problem on M^T; the iterations take a tall matrix.
    low, sparse, iterations = principal_component_pursuit(
        tf.transpose(m), lam=lam, mu=mu, tol=tol,
        max_iterations=max_iterations, method=method)
    return tf.transpose(low), tf.transpose(sparse), iterations
  p = tf.cast(tf.shape(m)[0], tf.float64)
  n = tf.cast(tf.shape(m)[1], tf.float64)
  lam = (1.0 / tf.sqrt(tf.maximum(p, n)) if lam is None
         else tf.constant(lam, tf.float64))
  zeros = tf.zeros_like(m)
  inf = tf.constant(np.inf, tf.float64)
  if method == 'ialm':
    norm2 = _spectral_norm(m)
    # An all-zero M is its own decomposition: scales of 1 keep the first
    # iteration finite, and it stops there.
    safe_norm2 = tf.where(norm2 > 0, norm2, tf.constant(1.0, tf.float64))
    # Y_0 = M / J is E_0 = a_0 (X_0 - L_0) with X_0 = M, L_0 = 0.
    dual_scale = tf.maximum(safe_norm2, tf.reduce_max(tf.abs(m)) / lam)
    mu = (1.25 / safe_norm2 if mu is None else tf.constant(mu, tf.float64))
    mu_bar = mu * 1e7
    scheme = _Scheme(
        lam=lam, next_mu=lambda mu: tf.minimum(IALM_RHO * mu, mu_bar),
        float32_floor2=lambda gram, frobenius2: tf.math.divide_no_nan(
            tf.square(IALM_FLOAT32_MARGIN * _EPS32 * tf.linalg.trace(gram)),
            frobenius2))
    columns = m.shape[1] if m.shape[1] is not None else tf.shape(m)[1]
    weights = tf.zeros([columns, columns], tf.float64)
    state = (tf.constant(0), m, zeros, zeros, zeros, zeros, zeros, zeros,
             weights, inf, 1.0 / (dual_scale * mu), mu)
    i, _, _, minus_low, _, _, shifted, clipped, *_ = _solve(
        _ialm_phase, m, state, scheme, tol=tol, max_iterations=max_iterations)
    # Iterate i - 1: L = -minus_low of the last pass, S = T - clip(T) of the
    # pass before.
    return (-tf.cast(minus_low, tf.float64),
            tf.cast(shifted, tf.float64) - tf.cast(clipped, tf.float64), i - 1)
  l1 = tf.reduce_sum(tf.abs(m))
  if mu is None:
    # An all-zero M is its own decomposition; any mu > 0 then stops at once.
    mu = tf.where(l1 > 0, p * n / (4.0 * l1), tf.constant(1.0, tf.float64))
  else:
    mu = tf.constant(mu, tf.float64)
  scheme = _Scheme(
      lam=lam, next_mu=lambda mu: mu,
      float32_floor2=lambda gram, frobenius2: FLOAT32_TOL**2 * frobenius2)
  state = (tf.constant(0), m, zeros, zeros, zeros, inf, mu)
  i, _, dual, low, shifted, *_ = _solve(
      _admm_phase, m, state, scheme, tol=tol, max_iterations=max_iterations)
  return (tf.cast(low, tf.float64),
          tf.cast(shifted, tf.float64) - tf.cast(dual, tf.float64), i)


def robust_pca(matrix,
               *,
               lam: Optional[float] = None,
               mu: Optional[float] = None,
               tol: float = DEFAULT_TOL,
               max_iterations: int = DEFAULT_MAX_ITERATIONS,
               method: str = DEFAULT_METHOD) -> tuple[np.ndarray, np.ndarray]:
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
                    method: str = DEFAULT_METHOD) -> tf.Tensor:
  """sigma^_i^2 = ||S_{:,i}||^2 / p for each column of the [p, n] `updates`.

  With `block_rows` = p', PCP runs on consecutive blocks of p' rows (the last
  one may be shorter) and the blocks' estimates ||S_b{:,i}||^2 / p_b are
  averaged (paper 003, Section 3.5). `method` is PCP's solver (module doc).
  TensorFlow; returns float64 [n].
  """
  return split_norms(updates, block_rows=block_rows, tol=tol,
                     max_iterations=max_iterations, method=method)[1]


def split_norms(updates: tf.Tensor,
                *,
                block_rows: Optional[int] = None,
                tol: float = DEFAULT_TOL,
                max_iterations: int = DEFAULT_MAX_ITERATIONS,
                method: str = DEFAULT_METHOD) -> tuple[tf.Tensor, tf.Tensor]:
  """(||L_{:,i}||, sigma^_i^2) for each column of the [p, n] `updates`.

  M = L + S by PCP; sigma^_i^2 as `noise_variances`. With `block_rows`, a
  column of L is its blocks' columns: their squared norms add up.
  TensorFlow; returns two float64 [n].
  """
  updates = tf.cast(updates, tf.float64)

  def estimate(block):
    low, sparse, _ = principal_component_pursuit(
        block, tol=tol, max_iterations=max_iterations, method=method)
    rows = tf.cast(tf.shape(block)[0], tf.float64)
    return (tf.reduce_sum(tf.square(low), axis=0),
            tf.reduce_sum(tf.square(sparse), axis=0) / rows)

  p = updates.shape[0]
  if block_rows is None or p is None or block_rows >= p:
    low2, variances = estimate(updates)
    return tf.sqrt(low2), variances
  if block_rows < 1:
    raise ValueError(f'block_rows must be >= 1, got {block_rows}')
  starts = range(0, p, block_rows)
  blocks = [estimate(updates[s:s + block_rows]) for s in starts]
  return (tf.sqrt(tf.add_n([low2 for low2, _ in blocks])),
          tf.add_n([v for _, v in blocks]) / len(starts))
