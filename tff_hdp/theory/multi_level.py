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
"""FedHDP with l privacy levels: closed forms and the optimal lambda_j.

Paper 001, Section 3.2 and Appendix A.6 (eqs. (59)-(77)). Clients fall into
l groups C_1, ..., C_l of sizes N_1, ..., N_l; a client of group i adds
l_j ~ N(0, N_i gamma_i^2 I_d) to its update, so that group i's average carries
privacy noise of variance gamma_i^2 (gamma_i^2 = 0 is a non-private group).
Around phi, an update of group i has covariance (eq. (59))

  sigma_pi^2 I_d,   sigma_pi^2 = alpha^2 + tau^2 + N_i gamma_i^2.

The server weighs every client of group i by (eq. (63))

  w_i = r_i / sum_k N_k r_k,

and client j of group g forms its personal model with Ditto (eq. (76)),

  theta_j(lambda) = (phi_hat_j + lambda theta) / (1 + lambda).

Two-level FedHDP is l = 2 with groups (non-private, private) and ratios
(1, r); see `server_aggregation` and `personalization`. Own privacy noise:
theta contains the client's own psi_j = phi_hat_j + l_j. Eq. (44)/(77)
assumes the client removes w_g l_j from theta before the Ditto step (then
the lambda_j* of Lemma 3 / Theorem 8 is exactly Bayes optimal); Algorithm 1
as written leaves it in, which adds (u w_g)^2 N_g gamma_g^2 to the client's
risk (u = lambda / (1 + lambda)). Functions here take `own_noise_in_global`
(default True, Algorithm 1 as written; False for the paper's assumption).
All risks are per coordinate, E||theta_j - phi_j||^2 / d, and do not depend
on phi (docs/fedhdp.md, "Theory: the models").
"""

from typing import NamedTuple, Sequence

import numpy as np
from scipy import optimize

from tff_hdp.theory import _checks


def _groups(sigma_c2, gamma2s, group_sizes):
  sigma_c2 = float(_checks.check_positive('sigma_c2', sigma_c2))
  gamma2s = _checks.check_nonnegative('gamma2s', gamma2s)
  group_sizes = _checks.check_group_sizes('group_sizes', group_sizes)
  _checks.check_same_length(('gamma2s', 'group_sizes'), gamma2s, group_sizes)
  return sigma_c2, gamma2s, group_sizes


def group_variances(sigma_c2: float, gamma2s: Sequence[float],
                    group_sizes: Sequence[float]) -> np.ndarray:
  """sigma_pi^2 = sigma_c^2 + N_i gamma_i^2 for each group i, eq. (59)."""
  sigma_c2, gamma2s, group_sizes = _groups(sigma_c2, gamma2s, group_sizes)
  return sigma_c2 + group_sizes * gamma2s


def optimal_ratios(sigma_c2: float, gamma2s: Sequence[float],
                   group_sizes: Sequence[float]) -> np.ndarray:
  """Bayes-optimal server ratios r_i* = sigma_p1^2 / sigma_pi^2, eq. (64).

  Relative to group 1 (the first entry), so r_1* = 1. Any positive multiple
  of these ratios gives the same weights (63). For two groups (non-private,
  private) this is (1, r*) with r* of Lemma 6.

  Args:
    sigma_c2: sigma_c^2 = alpha^2 + tau^2 > 0.
    gamma2s: gamma_i^2 >= 0 per group.
    group_sizes: N_i >= 0 per group.

  Returns:
    Array of l ratios.
  """
  variances = group_variances(sigma_c2, gamma2s, group_sizes)
  return variances[0] / variances


def group_weights(ratios: Sequence[float],
                  group_sizes: Sequence[float]) -> np.ndarray:
  """Per-client server weights w_i = r_i / sum_k N_k r_k, eq. (63).

  Args:
    ratios: r_i >= 0 per group.
    group_sizes: N_i >= 0 per group.

  Returns:
    Array of l weights, one per client of each group (sum_i N_i w_i = 1).
  """
  ratios = _checks.check_nonnegative('ratios', ratios)
  group_sizes = _checks.check_group_sizes('group_sizes', group_sizes)
  _checks.check_same_length(('ratios', 'group_sizes'), ratios, group_sizes)
  total = np.sum(group_sizes * ratios)
  if total <= 0:
    raise ValueError('ratios must be positive for at least one non-empty '
                     f'group, got ratios={ratios!r}')
  return ratios / total


def multi_level_server_variance(sigma_c2: float, gamma2s: Sequence[float],
                                group_sizes: Sequence[float],
                                ratios: Sequence[float]) -> float:
  """Per-coordinate variance of the server estimate for any ratios.

    sigma_s^2 = sum_i N_i w_i^2 sigma_pi^2,   w_i of eq. (63).

  Minimised by `optimal_ratios`, where it equals
  `multi_level_optimal_server_variance`.
  """
  variances = group_variances(sigma_c2, gamma2s, group_sizes)
  group_sizes = np.asarray(group_sizes, dtype=np.float64)
  weights = group_weights(ratios, group_sizes)
  return float(np.sum(group_sizes * weights**2 * variances))


def multi_level_optimal_server_variance(sigma_c2: float,
                                        gamma2s: Sequence[float],
                                        group_sizes: Sequence[float]) -> float:
  """Bayes risk of the server with l privacy levels, eq. (61).

    Sigma_theta = prod_i sigma_pi^2 / sum_i N_i prod_{k != i} sigma_pk^2
                = 1 / sum_i (N_i / sigma_pi^2)

  (computed in the second form, which cannot overflow).
  """
  variances = group_variances(sigma_c2, gamma2s, group_sizes)
  group_sizes = np.asarray(group_sizes, dtype=np.float64)
  return float(1.0 / np.sum(group_sizes / variances))


class _ClientSetup(NamedTuple):
  """A client's federation, checked, as the closed forms read it."""
  alpha2: float  # alpha^2.
  tau2: float  # tau^2.
  noise: np.ndarray  # N_i gamma_i^2 per group: per-client noise variance.
  variances: np.ndarray  # sigma_pi^2 per group, eq. (59).
  others: np.ndarray  # M_i per group, eq. (71): the clients but this one.
  group: int  # The client's group.


def _client_setup(alpha2, tau2, gamma2s, group_sizes, group) -> _ClientSetup:
  alpha2 = float(_checks.check_positive('alpha2', alpha2))
  tau2 = float(_checks.check_nonnegative('tau2', tau2))
  _, gamma2s, group_sizes = _groups(alpha2 + tau2, gamma2s, group_sizes)
  group = _checks.check_group_index('group', group, group_sizes.size)
  if group_sizes[group] < 1:
    raise ValueError(f'group {group} has {group_sizes[group]} clients; the '
                     'client needs a group with at least one client')
  noise = group_sizes * gamma2s  # Per-client privacy noise variance.
  variances = alpha2 + tau2 + noise  # sigma_pi^2, eq. (59).
  others = group_sizes.copy()  # M_i of eq. (71).
  others[group] -= 1
  return _ClientSetup(alpha2, tau2, noise, variances, others, group)


def _lambda_to_u(lam):
  lam = _checks.check_nonnegative('lam', lam)
  with np.errstate(invalid='ignore'):
    return np.where(np.isinf(lam), 1.0, lam / (1.0 + lam))


def multi_level_bayes_local_risk(alpha2: float, tau2: float,
                                 gamma2s: Sequence[float],
                                 group_sizes: Sequence[float],
                                 group: int) -> float:
  """Bayes risk of (Local Bayes obj.) for a client of `group`, eq. (74).

  Given the other clients' updates, phi is known up to variance
  Sigma_phi\\j = 1 / sum_i (M_i / sigma_pi^2) (eq. (68)), hence phi_j up to
  Sigma_phi\\j + tau^2; the client's own estimate phi_hat_j adds precision
  1 / alpha^2 (sigma_c^2 - tau^2 = alpha^2), so

    Sigma_theta_j* = ((Sigma_phi\\j + tau^2)^-1 + alpha^-2)^-1.

  No personal model, FedHDP's or any other, has lower per-coordinate risk.

  Args:
    alpha2: alpha^2 = beta^2 / n_s > 0.
    tau2: tau^2 >= 0.
    gamma2s: gamma_i^2 >= 0 per group.
    group_sizes: N_i per group.
    group: Index of the client's group (which must have a client).

  Returns:
    The per-coordinate Bayes risk.
  """
  alpha2, tau2, _, variances, others, _ = _client_setup(
      alpha2, tau2, gamma2s, group_sizes, group)
  sigma_phi = 1.0 / np.sum(others / variances)  # eq. (68)
  return float(1.0 / (1.0 / (sigma_phi + tau2) + 1.0 / alpha2))


def multi_level_local_risk(lam, alpha2: float, tau2: float,
                           gamma2s: Sequence[float],
                           group_sizes: Sequence[float],
                           ratios: Sequence[float], group: int,
                           own_noise_in_global: bool = True):
  """Per-coordinate risk of the Ditto personal model of a client of `group`.

  With u = lambda / (1 + lambda), theta_j(lambda) - phi_j = (1 - u) e_j +
  u (theta - phi_j), where e_j = phi_hat_j - phi_j and theta is the server
  estimate with weights w_i (eq. (63)). Writing
  theta - phi_j = sum_i w_i (psi_i - phi) - p_j,

    E(theta - phi_j)^2 = w_g^2 alpha^2 + (1 - w_g)^2 tau^2
                         + [own] w_g^2 N_g gamma_g^2
                         + sum_i M_i w_i^2 sigma_pi^2,
    Cov(e_j, theta - phi_j) = w_g alpha^2,

  so the risk is

    R(lambda) = (1 - u)^2 alpha^2 + 2 u (1 - u) w_g alpha^2
                + u^2 E(theta - phi_j)^2,

  a quadratic in u, minimised at u* = (A - B) / (A - 2B + C) with
  A = alpha^2, B = w_g alpha^2, C = E(theta - phi_j)^2, i.e. at
  lambda* = (A - B) / (C - B) (infinite when C <= B). [own] is 1 when
  `own_noise_in_global` (Algorithm 1 as written) and 0 under the paper's
  eq. (77). Beyond the paper: it does not give R(lambda) for l > 2.

  Args:
    lam: lambda >= 0 (scalar or array; numpy.inf gives the global model).
    alpha2: alpha^2 > 0.
    tau2: tau^2 >= 0.
    gamma2s: gamma_i^2 >= 0 per group.
    group_sizes: N_i per group.
    ratios: r_i per group (the server's weights, eq. (63)).
    group: Index of the client's group.
    own_noise_in_global: Whether the client's own privacy noise stays in the
      global model it personalises from (see the module docstring).

  Returns:
    R(lambda), with the shape of `lam`.
  """
  alpha2, tau2, noise, variances, others, group = _client_setup(
      alpha2, tau2, gamma2s, group_sizes, group)
  weights = group_weights(ratios, group_sizes)
  w_g = weights[group]
  global_error = (w_g**2 * alpha2 + (1.0 - w_g)**2 * tau2 +
                  float(own_noise_in_global) * w_g**2 * noise[group] +
                  np.sum(others * weights**2 * variances))
  u = _lambda_to_u(lam)
  return ((1.0 - u)**2 * alpha2 + 2.0 * u * (1.0 - u) * w_g * alpha2 +
          u**2 * global_error)


def _bayes_gap(u, setup: _ClientSetup, weights, own_noise_in_global):
  """E(theta_j* - theta_j(lambda))^2 from the coefficients of (75) and (77)."""
  alpha2, tau2, noise, variances, others, group = setup
  precision_others = np.sum(others / variances)  # 1 / Sigma_phi\j, (68)
  bayes_var = 1.0 / (1.0 / (1.0 / precision_others + tau2) + 1.0 / alpha2)
  # Eq. (75), each coefficient divided by prod_i sigma_pi^2: the weight of
  # phi_hat_j and of each psi_i of group k (i != j).
  bayes_own = bayes_var / alpha2
  bayes_other = bayes_var / (variances * (1.0 + tau2 * precision_others))
  # Eq. (77): the weight of phi_hat_j and of each psi_i of group k.
  w_g = weights[group]
  fedhdp_own = (1.0 - u) + u * w_g
  fedhdp_other = u * weights
  # Both weight vectors sum to 1, so phi cancels from the difference; around
  # phi, phi_hat_j has variance sigma_c^2 and psi_i has sigma_pk^2.
  sigma_c2 = alpha2 + tau2
  gap = (bayes_own - fedhdp_own)**2 * sigma_c2 + np.sum(
      others * (bayes_other - fedhdp_other)**2 * variances)
  if own_noise_in_global:
    gap += (u * w_g)**2 * noise[group]
  return gap


def multi_level_optimal_lambda(alpha2: float, tau2: float,
                               gamma2s: Sequence[float],
                               group_sizes: Sequence[float],
                               ratios: Sequence[float], group: int,
                               own_noise_in_global: bool = True) -> float:
  """The lambda_j* of a client of `group`, found numerically (Appendix A.6).

  The paper stops at a sketch for l > 2: lambda_j* minimises (eq. (48))

    E(theta_j* - theta_j(lambda))^2,

  with theta_j* the Bayes estimate of eq. (75) and theta_j(lambda) FedHDP's
  personal model of eq. (77). Both are linear in (phi_hat_j, psi_i), so this
  is a quadratic in u = lambda / (1 + lambda) in [0, 1]; it is minimised here
  with `scipy.optimize.minimize_scalar` (bounded) and the end points are
  compared, u = 1 meaning lambda* = inf (use the global model). By the
  orthogonality of the Bayes error, `multi_level_local_risk` equals
  `multi_level_bayes_local_risk` plus this gap, so the same lambda minimises
  the personal model's risk. With `own_noise_in_global=False`, l = 2 and the
  ratios of eq. (64), this reproduces eq. (47) (Lemma 3).

  Args:
    alpha2: alpha^2 > 0.
    tau2: tau^2 >= 0.
    gamma2s: gamma_i^2 >= 0 per group.
    group_sizes: N_i per group.
    ratios: r_i per group (any, not only eq. (64)).
    group: Index of the client's group.
    own_noise_in_global: See the module docstring.

  Returns:
    lambda_j* in [0, inf].
  """
  setup = _client_setup(alpha2, tau2, gamma2s, group_sizes, group)
  weights = group_weights(ratios, group_sizes)

  def gap(u):
    return _bayes_gap(u, setup, weights, own_noise_in_global)

  result = optimize.minimize_scalar(
      gap, bounds=(0.0, 1.0), method='bounded',
      options={'xatol': 1e-12, 'maxiter': 500})
  candidates = [(gap(0.0), 0.0), (gap(1.0), 1.0), (gap(result.x), result.x)]
  _, u_best = min(candidates)
  if u_best >= 1.0:
    return float('inf')
  return float(u_best / (1.0 - u_best))
