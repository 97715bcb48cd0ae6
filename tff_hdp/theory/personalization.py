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
"""Client-side closed forms of FedHDP: Ditto's lambda* and the personal risk.

Paper 001, Section 3.1.3, Appendix A.3 (Lemma 3), Appendix B (Theorem 8,
Table 4). Setting and notation as in `server_aggregation`: client j of the
non-private group (N_np clients) or of the private group (N_p clients, each
adding N(0, N_p gamma^2 I_d)), alpha^2 = beta^2 / n_s, tau^2 the data
heterogeneity, and

  Upsilon^2 = tau^2 / alpha^2,   Gamma^2 = N_p gamma^2 / alpha^2.

Client j's personal model solves (Local FedHDP obj.):

  theta_j(lambda) = argmin 1/2 ||t - phi_hat_j||^2 + lambda/2 ||t - theta||^2
                  = (phi_hat_j + lambda theta) / (1 + lambda),        (43)

which one Ditto step with eta_p = 1/(1 + lambda) reaches (Lemma 4).

The lambda* of Lemma 3 / Theorem 8 assume the client removes its own privacy
noise from the global model (eq. (44)); see `multi_level` for the difference
this makes under Algorithm 1 as written. Risks are per coordinate,
E||theta_j - phi_j||^2 / d.
"""

import numpy as np

from tff_hdp.theory import _checks
from tff_hdp.theory import data_model
from tff_hdp.theory import multi_level


def optimal_lambda_np(alpha2, tau2):
  """lambda*_np = 1 / Upsilon^2 = alpha^2 / tau^2, eq. (82) (Theorem 8).

  The optimal Ditto regulariser of a non-private client when the server uses
  r* (it does not depend on gamma^2 or N). Infinite when tau^2 = 0: with
  homogeneous data the global model is optimal.
  """
  alpha2 = _checks.check_positive('alpha2', alpha2)
  tau2 = _checks.check_nonnegative('tau2', tau2)
  with np.errstate(divide='ignore'):
    return alpha2 / tau2


def optimal_lambda_p(alpha2, tau2, gamma2, n, n_private):
  """lambda*_p of a private client when the server uses r*, eq. (83).

    lambda*_p = (N + N Upsilon^2 + (N - N_p) Gamma^2)
                / (N Upsilon^2 (Upsilon^2 + 1) + (N - N_p + 1) Upsilon^2
                   Gamma^2 + Gamma^2),

  Upsilon^2 = tau^2 / alpha^2, Gamma^2 = N_p gamma^2 / alpha^2 (Theorem 8).
  As gamma^2 -> inf it tends to 0 when every client is private (N_p = N,
  Table 4), but to N_np / ((N_np + 1) Upsilon^2 + 1), N_np = N - N_p, when
  some opted out: the global model then tends to their average, which stays
  informative (not stated in the paper).

  Args:
    alpha2: alpha^2 > 0.
    tau2: tau^2 >= 0.
    gamma2: gamma^2 >= 0.
    n: Number of clients N > 0.
    n_private: Number of private clients 0 < N_p <= N.

  Returns:
    lambda*_p (inf when tau^2 = gamma^2 = 0).
  """
  alpha2 = _checks.check_positive('alpha2', alpha2)
  tau2 = _checks.check_nonnegative('tau2', tau2)
  gamma2 = _checks.check_nonnegative('gamma2', gamma2)
  n = _checks.check_positive('n', n)
  n_private = _checks.check_positive('n_private', n_private)
  if np.any(n_private > n):
    raise ValueError(f'n_private must be <= n, got n_private={n_private!r}, '
                     f'n={n!r}')
  upsilon2 = tau2 / alpha2
  big_gamma2 = n_private * gamma2 / alpha2
  numerator = n + n * upsilon2 + (n - n_private) * big_gamma2
  denominator = (n * upsilon2 * (upsilon2 + 1.0) +
                 (n - n_private + 1.0) * upsilon2 * big_gamma2 + big_gamma2)
  with np.errstate(divide='ignore'):
    return numerator / denominator


def optimal_lambdas_two_level(alpha2, tau2, gamma2_1, gamma2_2, n1, n2):
  """(lambda_1*, lambda_2*) for two private groups, eq. (47) (Lemma 3).

  Group i has N_i clients, each adding N(0, N_i gamma_i^2 I_d); the server
  uses r* of eq. (28). With Gamma_i^2 = N_i gamma_i^2 / alpha^2, N = N1 + N2:

    lambda_1* = (N (1 + U) + N1 G2 + N2 G1)
                / (N U (1 + U) + U ((N2 + 1) G1 + N1 G2) + G1 (1 + G2)),
    lambda_2* = (N (1 + U) + N1 G2 + N2 G1)
                / (N U (1 + U) + U (N2 G1 + (N1 + 1) G2) + G2 (1 + G1)),

  U = Upsilon^2, Gi = Gamma_i^2. Theorem 8 is gamma_1 = 0.

  Returns:
    A pair of arrays (lambda_1*, lambda_2*).
  """
  alpha2 = _checks.check_positive('alpha2', alpha2)
  tau2 = _checks.check_nonnegative('tau2', tau2)
  gamma2_1 = _checks.check_nonnegative('gamma2_1', gamma2_1)
  gamma2_2 = _checks.check_nonnegative('gamma2_2', gamma2_2)
  n1 = _checks.check_positive('n1', n1)
  n2 = _checks.check_positive('n2', n2)
  n = n1 + n2
  u = tau2 / alpha2
  g1 = n1 * gamma2_1 / alpha2
  g2 = n2 * gamma2_2 / alpha2
  numerator = n * (1.0 + u) + n1 * g2 + n2 * g1
  with np.errstate(divide='ignore'):
    lambda_1 = numerator / (n * u * (1.0 + u) + u * ((n2 + 1.0) * g1 + n1 * g2)
                            + g1 * (1.0 + g2))
    lambda_2 = numerator / (n * u * (1.0 + u) + u * (n2 * g1 + (n1 + 1.0) * g2)
                            + g2 * (1.0 + g1))
  return lambda_1, lambda_2


def optimal_lambda_no_privacy(alpha2, tau2):
  """Table 4, rho_np = 1 (no privacy): lambda*_np = alpha^2 / tau^2.

  Homogeneous data (tau^2 = 0): lambda* = inf, FedAvg without
  personalisation. Heterogeneous data: alpha^2 / tau^2, Ditto's value.
  Same as `optimal_lambda_np`, which holds for every rho_np.
  """
  return optimal_lambda_np(alpha2, tau2)


def optimal_lambda_homogeneous_privacy(alpha2, tau2, gamma2):
  """Table 4, rho_np = 0 (all clients private): DP-FedAvg + Ditto.

    lambda*_p = N alpha^2 / (N tau^2 + (1 - rho_np) N gamma^2)
              = alpha^2 / (tau^2 + gamma^2)          (rho_np = 0),

  eq. (83) with N_p = N. For homogeneous data (tau^2 = 0) this is
  alpha^2 / gamma^2; Table 4 prints 1/gamma^2, which is the case alpha^2 = 1
  (the table's entry drops alpha^2; eq. (83) and the table's own tau^2 > 0
  entry at tau^2 = 0 both give alpha^2 / gamma^2). Tends to 0 as
  gamma^2 -> inf.
  """
  alpha2 = _checks.check_positive('alpha2', alpha2)
  tau2 = _checks.check_nonnegative('tau2', tau2)
  gamma2 = _checks.check_nonnegative('gamma2', gamma2)
  with np.errstate(divide='ignore'):
    return alpha2 / (tau2 + gamma2)


def _two_level(n, n_private, gamma2, r, private):
  n = float(_checks.check_positive('n', n))
  n_private = float(_checks.check_nonnegative('n_private', n_private))
  if n_private > n:
    raise ValueError(f'n_private must be <= n, got n_private={n_private!r}, '
                     f'n={n!r}')
  if not isinstance(private, (bool, np.bool_)):
    raise ValueError(f'private must be a bool, got {private!r}')
  group_sizes = (n - n_private, n_private)
  gamma2s = (0.0, float(_checks.check_nonnegative('gamma2', gamma2)))
  ratios = (1.0, float(_checks.check_nonnegative('r', r)))
  return gamma2s, group_sizes, ratios, int(bool(private))


def local_risk(lam, data: data_model.DataModel, gamma2, n, n_private, r,
               private, own_noise_in_global=True):
  """Per-coordinate risk of a client's personal model theta_j(lambda).

  FedHDP with ratio r (r = 1: HDP-FedAvg + Ditto); the closed form is in
  `multi_level.multi_level_local_risk` with groups (non-private, private).
  At r = r*, lambda = `optimal_lambda_np` / `optimal_lambda_p` and
  `own_noise_in_global=False` it equals `bayes_local_risk` (Theorem 8).

  Args:
    lam: lambda >= 0 (scalar or array).
    data: alpha^2 > 0 and tau^2 >= 0 (`DataModel`).
    gamma2: gamma^2 >= 0.
    n: Number of clients N.
    n_private: Number of private clients N_p.
    r: Server ratio r.
    private: Whether the client is private.
    own_noise_in_global: See `multi_level`.

  Returns:
    The risk, with the shape of `lam`.
  """
  alpha2, tau2 = data_model.check_data_model(data)
  gamma2s, group_sizes, ratios, group = _two_level(n, n_private, gamma2, r,
                                                   private)
  return multi_level.multi_level_local_risk(
      lam, alpha2, tau2, gamma2s, group_sizes, ratios, group,
      own_noise_in_global=own_noise_in_global)


def bayes_local_risk(data: data_model.DataModel, gamma2, n, n_private,
                     private):
  """Bayes risk of (Local Bayes obj.) for a private or non-private client.

  Eq. (41) with gamma_1 = 0; see `multi_level.multi_level_bayes_local_risk`.
  Arguments as in `local_risk`.
  """
  alpha2, tau2 = data_model.check_data_model(data)
  gamma2s, group_sizes, _, group = _two_level(n, n_private, gamma2, 1.0,
                                              private)
  return multi_level.multi_level_bayes_local_risk(alpha2, tau2, gamma2s,
                                                  group_sizes, group)


def optimal_lambda(data: data_model.DataModel, gamma2, n, n_private, r,
                   private, own_noise_in_global=True):
  """lambda* minimising `local_risk` at any server ratio r (numerically).

  At r = r* with `own_noise_in_global=False` this is eq. (82) or (83); at
  r = 1 it is the best lambda for HDP-FedAvg + Ditto, which the paper does
  not give. See `multi_level.multi_level_optimal_lambda`. Arguments as in
  `local_risk`.
  """
  alpha2, tau2 = data_model.check_data_model(data)
  gamma2s, group_sizes, ratios, group = _two_level(n, n_private, gamma2, r,
                                                   private)
  return multi_level.multi_level_optimal_lambda(
      alpha2, tau2, gamma2s, group_sizes, ratios, group,
      own_noise_in_global=own_noise_in_global)
