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
"""Empirical privacy estimates from audit statistics (shared; numpy/scipy).

The one-shot estimate of Andrew, Kairouz, Oh, Oprea, McMahan and Suriyakumar
("One-shot Empirical Privacy Estimation for Federated Learning", ICLR 2024,
arXiv:2302.03098): a statistic (e.g. the largest cosine over rounds between
the global update and a canary's direction) is collected for inserted canaries
and for never-inserted random directions; each sample is fitted by a Gaussian,
and the estimate is the epsilon at which N(mu_1, s_1^2) and N(mu_0, s_0^2)
are (epsilon, delta)-indistinguishable, in both directions.

For two Gaussians the hockey-stick divergence has a closed form:
log p(x) - log q(x) is a quadratic in x, so the set where it exceeds epsilon
is at most two intervals, and

  delta_{P||Q}(epsilon) = P(R_eps) - e^epsilon Q(R_eps),
  R_eps = {x : log p(x) - log q(x) > epsilon},

computed here with normal CDFs. With equal variances it is the Gaussian
mechanism of sensitivity/noise ratio |mu_1 - mu_0| / s (Balle and Wang 2018).

This module holds the statistics only; the canary clients that produce them
are issue 11's (not built yet).
"""

import math
from typing import Sequence

import numpy as np
from scipy import optimize
from scipy import stats


def _intervals(a: float, b: float, c: float) -> list[tuple[float, float]]:
  """{x : a x^2 + b x + c > 0} as disjoint open intervals."""
  inf = math.inf
  if abs(a) < 1e-14 * max(1.0, abs(b), abs(c)):
    if b > 0:
      return [(-c / b, inf)]
    if b < 0:
      return [(-inf, -c / b)]
    return [(-inf, inf)] if c > 0 else []
  disc = b * b - 4 * a * c
  if disc <= 0:
    return [(-inf, inf)] if a > 0 else []
  r = math.sqrt(disc)
  lo, hi = sorted(((-b - r) / (2 * a), (-b + r) / (2 * a)))
  return [(-inf, lo), (hi, inf)] if a > 0 else [(lo, hi)]


def _mass(mean: float, std: float, lo: float, hi: float) -> float:
  """N(mean, std^2) probability of (lo, hi), accurate in both tails."""
  if hi == math.inf:
    return float(stats.norm.sf(lo, mean, std))
  return float(stats.norm.cdf(hi, mean, std) - stats.norm.cdf(lo, mean, std))


def hockey_stick(epsilon: float, p: tuple[float, float],
                 q: tuple[float, float]) -> float:
  """delta_{P||Q}(epsilon) for P = N(p[0], p[1]^2), Q = N(q[0], q[1]^2)."""
  (m1, s1), (m0, s0) = p, q
  if s1 <= 0 or s0 <= 0:
    raise ValueError(f'standard deviations must be > 0, got {s1} and {s0}')
  a = 1.0 / (2 * s0 * s0) - 1.0 / (2 * s1 * s1)
  b = m1 / (s1 * s1) - m0 / (s0 * s0)
  c = (m0 * m0 / (2 * s0 * s0) - m1 * m1 / (2 * s1 * s1) + math.log(s0 / s1)
       - epsilon)
  delta = 0.0
  for lo, hi in _intervals(a, b, c):
    delta += _mass(m1, s1, lo, hi) - math.exp(epsilon) * _mass(m0, s0, lo, hi)
  return max(0.0, delta)


def gaussians_epsilon(p: tuple[float, float], q: tuple[float, float],
                      delta: float) -> float:
  """Smallest epsilon >= 0 with delta_{P||Q} and delta_{Q||P} <= delta."""
  if not 0 < delta < 1:
    raise ValueError(f'delta must be in (0, 1), got {delta}')
  best = 0.0
  for x, y in ((p, q), (q, p)):
    if hockey_stick(0.0, x, y) <= delta:
      continue
    hi = 1.0
    while hockey_stick(hi, x, y) > delta:
      hi *= 2.0
      if hi > 1e4:
        return math.inf
    best = max(best, optimize.brentq(
        lambda e, x=x, y=y: hockey_stick(e, x, y) - delta, 0.0, hi,
        xtol=1e-10))
  return best


def estimate_epsilon(null_statistics: Sequence[float],
                     canary_statistics: Sequence[float],
                     delta: float) -> float:
  """Andrew et al.'s one-shot estimate: epsilon between the Gaussians fitted
  (mean, sample std) to the two samples."""
  null = np.asarray(null_statistics, np.float64)
  canary = np.asarray(canary_statistics, np.float64)
  if null.size < 2 or canary.size < 2:
    raise ValueError('need at least 2 null and 2 canary statistics, got '
                     f'{null.size} and {canary.size}')
  return gaussians_epsilon((float(canary.mean()), float(canary.std(ddof=1))),
                           (float(null.mean()), float(null.std(ddof=1))),
                           delta)
