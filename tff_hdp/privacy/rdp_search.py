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
"""RDP of the Poisson-subsampled Gaussian in numpy: a search evaluator only.

`accounting.noise_multipliers_for_epsilons` looks for each epsilon's root z
with `epsilon` below, then gives `dp_accounting` the last word: the z it
returns is one whose epsilon by `dp_accounting`'s own `RdpAccountant` is
within the target. Nothing here is a privacy guarantee.

Why by hand: `dp_accounting` sums A_alpha of a fractional order alpha
(`rdp_privacy_accountant._compute_log_a_frac`) one term at a time in a Python
loop, until a term falls below exp(-30). Past the first few, the terms
decay only like i^-(alpha + 2) times exp(-(z^2 log(1/q - 1) + 1/2)^2 /
(2 z^2)), a factor of about 1 at q = 0.5: there alpha = 1.1 takes some 10^4
terms, one (q, z) costs up to about a second on the default orders, and
Brent's method needs ~14 of them per epsilon. Here all the terms of one
order are computed at once (numpy), by the same formulas and the same
stopping rule, so the two sums hold the same terms and agree to rounding
(tests/privacy/test_rdp_search.py checks 1e-9 relative, 1e-11 absolute, on
a grid of q, z and orders). Integer orders sum the exact binomial series, as
`_compute_log_a_int` does; the (epsilon, delta) conversion is
`rdp_privacy_accountant.compute_epsilon`'s, on every order at once.
TensorFlow-free: numpy and scipy.

References: Mironov, Talwar, Zhang 2019 (arXiv:1908.10530), Sec. 3.3 (the
series of a fractional order); Balle et al. 2020 (arXiv:1905.09982),
Prop. 12 (the conversion).
"""

import math
from typing import Sequence

import numpy as np
from scipy import special

# dp_accounting stops a fractional order's series after the first term whose
# two parts are both below exp(_LOG_STOP).
_LOG_STOP = -30.0
_FIRST_CHUNK = 64  # Terms of a fractional order computed at first; doubles.


def _log_erfc(x: np.ndarray) -> np.ndarray:
  """log(erfc(x)), as dp_accounting's `_log_erfc` (scipy's log_ndtr)."""
  return math.log(2) + special.log_ndtr(-x * 2**.5)


def _log_a_int(q: float, sigma: float, alpha: int) -> float:
  """log A_alpha, integer alpha, 0 < q < 1: the binomial sum
  sum_i C(alpha, i) q^i (1 - q)^(alpha - i) exp((i^2 - i) / (2 sigma^2))."""
  i = np.arange(alpha + 1, dtype=np.float64)
  log_terms = (special.gammaln(alpha + 1) - special.gammaln(i + 1) -
               special.gammaln(alpha - i + 1) + i * math.log(q) +
               (alpha - i) * math.log(1 - q) + (i * i - i) / (2 * sigma**2))
  return float(special.logsumexp(log_terms))


# alpha -> (log|C(alpha, i)|, sign of C(alpha, i)) for i = 0, 1, ...: they
# depend on the order only, and scipy's binom costs about a microsecond a
# term, more than the rest of a term together.
_COEFFICIENTS = {}


def _binomials(alpha: float, stop: int):
  """(log|C(alpha, i)|, sign) for i < stop (at least), remembered."""
  known = _COEFFICIENTS.get(alpha)
  if known is None or known[0].size < stop:
    size = max(stop, 2 * (0 if known is None else known[0].size))
    coef = special.binom(alpha, np.arange(size, dtype=np.float64))
    with np.errstate(divide='ignore'):
      known = (np.log(np.abs(coef)), np.where(coef > 0, 1.0, -1.0))
    _COEFFICIENTS[alpha] = known
  return known


def _frac_terms(q: float, sigma: float, alpha: float, start: int, stop: int):
  """Terms start .. stop - 1 of `_compute_log_a_frac`: (log|s0|, log|s1|,
  sign), each an array."""
  i = np.arange(start, stop, dtype=np.float64)
  log_coef, sign = (c[start:stop] for c in _binomials(alpha, stop))
  j = alpha - i
  z0 = sigma**2 * math.log(1 / q - 1) + .5
  log_t0 = log_coef + i * math.log(q) + j * math.log(1 - q)
  log_t1 = log_coef + j * math.log(q) + i * math.log(1 - q)
  log_e0 = math.log(.5) + _log_erfc((i - z0) / (math.sqrt(2) * sigma))
  log_e1 = math.log(.5) + _log_erfc((z0 - j) / (math.sqrt(2) * sigma))
  log_s0 = log_t0 + (i * i - i) / (2 * (sigma**2)) + log_e0
  log_s1 = log_t1 + (j * j - j) / (2 * (sigma**2)) + log_e1
  return log_s0, log_s1, sign


def _log_signed_sum(log_abs: np.ndarray, signs: np.ndarray) -> float:
  """log(sum_k signs[k] exp(log_abs[k])); the sum must be > 0."""
  peak = float(np.max(log_abs))
  if peak == -math.inf:
    return -math.inf
  total = float(np.sum(signs * np.exp(log_abs - peak)))
  if not total > 0:
    raise ValueError('The result of subtraction must be non-negative.')
  return peak + math.log(total)


def _log_a_frac(q: float, sigma: float, alpha: float) -> float:
  """log A_alpha, fractional alpha, 0 < q < 1: the terms i = 0 .. n of
  `_compute_log_a_frac`, n the first whose two parts are both below
  exp(-30) (dp_accounting's stopping rule), summed at once."""
  parts, start, size = [], 0, _FIRST_CHUNK
  while True:
    log_s0, log_s1, sign = _frac_terms(q, sigma, alpha, start, start + size)
    small = np.flatnonzero(np.maximum(log_s0, log_s1) < _LOG_STOP)
    if small.size:
      n = int(small[0]) + 1
      parts.append((log_s0[:n], log_s1[:n], sign[:n]))
      break
    parts.append((log_s0, log_s1, sign))
    start, size = start + size, 2 * size
  log_s0, log_s1, sign = (np.concatenate(p) for p in zip(*parts))
  return float(np.logaddexp(_log_signed_sum(log_s0, sign),
                            _log_signed_sum(log_s1, sign)))


def rdp(q: float, sigma: float, orders: Sequence[float]) -> np.ndarray:
  """RDP of one Poisson-subsampled Gaussian round at each order, as
  `rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian`."""

  def one(alpha):
    if q == 0:
      return 0.0
    if math.isinf(alpha) or sigma == 0:
      return math.inf
    if q == 1.0:
      return alpha / (2 * sigma**2)
    if float(alpha).is_integer():
      return _log_a_int(q, sigma, int(alpha)) / (alpha - 1)
    return _log_a_frac(q, sigma, alpha) / (alpha - 1)

  return np.array([one(float(a)) for a in orders])


def epsilon_from_rdp(orders: Sequence[float], rdp_values: np.ndarray,
                     delta: float) -> float:
  """epsilon at `delta` of RDP curve `rdp_values` (0 < delta < 1), as
  `rdp_privacy_accountant.compute_epsilon`: Balle et al.'s conversion at
  orders > 1.01, 0 where the KL bound already gives delta."""
  a = np.asarray(orders, np.float64)
  r = np.asarray(rdp_values, np.float64)
  with np.errstate(divide='ignore', invalid='ignore'):
    converted = r + np.log1p(-1 / a) - np.log(delta * a) / (a - 1)
  eps = np.where(a > 1.01, converted, math.inf)
  eps = np.where(delta**2 + np.expm1(-r) > 0, 0.0, eps)
  return max(0.0, float(np.min(eps)))


def epsilon(q: float, sigma: float, rounds: int, delta: float,
            orders: Sequence[float]) -> float:
  """epsilon of `rounds` Poisson-subsampled Gaussian rounds (rate q,
  multiplier sigma) at `delta`, on `orders`: what an `RdpAccountant` that
  composed them gives, to rounding. For the search only (module doc)."""
  return epsilon_from_rdp(orders, rounds * rdp(q, sigma, orders), delta)


__all__ = ['epsilon', 'epsilon_from_rdp', 'rdp']
