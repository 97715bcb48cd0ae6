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
"""Server-side closed forms of FedHDP with private and non-private clients.

Paper 001 (Aldaghri, Mahdavifar, Beirami, "Federated Learning with
Heterogeneous Differential Privacy"), Section 3.1.2, Appendix A.2 (Lemma 2) and
Appendix B (Lemmas 6 and 7).

Setting (Appendix A.1, "opt-out of privacy"): N clients, N_np = rho_np N of
them opted out of privacy and N_p = (1 - rho_np) N private. Client j holds
the least-squares estimate phi_hat_j = phi_j + e_j of phi_j = phi + p_j,
p_j ~ N(0, tau^2 I_d), e_j ~ N(0, alpha^2 I_d), alpha^2 = beta^2 / n_s, and
sends

  psi_j = phi_hat_j + l_j,   l_j ~ N(0, N_p gamma^2 I_d) if j is private,
                             l_j = 0                     otherwise,      (11)

of covariance sigma_c^2 I_d (non-private) or (sigma_c^2 + N_p gamma^2) I_d
(private) around phi, sigma_c^2 = alpha^2 + tau^2. FedHDP (Algorithm 1)
weighs a private update r times a non-private one,

  theta = (sum_{np} psi_i + r sum_{p} psi_i) / (N_np + r N_p),

and r = r* is Bayes optimal (Lemma 6); HDP-FedAvg is r = 1; DP-FedAvg has
every client add the private clients' noise, so sigma_s^2 = (sigma_c^2 +
N_p gamma^2) / N (eqs. (80), (81)). Every function returns the
*per-coordinate* variance of theta - phi (the error covariance is this
number times I_d) and broadcasts over numpy arrays; N_p may be fractional
in the closed forms. The setting in words: docs/fedhdp.md, "Theory: the
models".
"""

import numpy as np

from tff_hdp.theory import _checks


def num_private(n, rho_np):
  """N_p = (1 - rho_np) N, the number of private clients (Appendix B)."""
  n = _checks.check_positive('n', n)
  rho_np = _checks.check_fraction('rho_np', rho_np)
  return (1.0 - rho_np) * n


def optimal_ratio(sigma_c2, gamma2, n_private):
  """Bayes-optimal ratio of a private client's weight to a non-private one's.

  Lemma 6 of paper 001 (Lemma 2, eq. (28), with gamma_1 = 0):

    r* = sigma_c^2 / (sigma_c^2 + N_p gamma^2),

  the inverse ratio of the two groups' update variances (inverse-variance
  weighting, Lemma 1).

  Args:
    sigma_c2: sigma_c^2 = alpha^2 + tau^2 > 0.
    gamma2: Privacy noise variance gamma^2 >= 0 of the private group's average.
    n_private: Number of private clients N_p >= 0.

  Returns:
    r* in (0, 1].
  """
  sigma_c2 = _checks.check_positive('sigma_c2', sigma_c2)
  gamma2 = _checks.check_nonnegative('gamma2', gamma2)
  n_private = _checks.check_nonnegative('n_private', n_private)
  return sigma_c2 / (sigma_c2 + n_private * gamma2)


def server_variance(sigma_c2, gamma2, n, rho_np, r):
  """Per-coordinate variance of FedHDP's global estimate at any ratio r.

  With weights 1/(N_np + r N_p) (non-private) and r/(N_np + r N_p) (private),
  Algorithm 1's estimate has error variance

    sigma_s^2(r) = [N_np sigma_c^2 + r^2 N_p (sigma_c^2 + N_p gamma^2)]
                   / (N_np + r N_p)^2,

  where N_np = rho_np N and N_p = (1 - rho_np) N. It is minimised at
  r = `optimal_ratio` (Lemma 6), where it equals `optimal_server_variance`;
  r = 1 is HDP-FedAvg. Not stated in this form in the paper; it follows from
  eq. (11) and the weights of eq. (27).

  Args:
    sigma_c2: sigma_c^2 = alpha^2 + tau^2 > 0.
    gamma2: Privacy noise variance gamma^2 >= 0.
    n: Number of clients N > 0.
    rho_np: Fraction of non-private clients, in [0, 1].
    r: Ratio of weights r >= 0 (r = 0 discards the private clients and needs
      rho_np > 0).

  Returns:
    sigma_s^2(r).
  """
  sigma_c2 = _checks.check_positive('sigma_c2', sigma_c2)
  gamma2 = _checks.check_nonnegative('gamma2', gamma2)
  n = _checks.check_positive('n', n)
  rho_np = _checks.check_fraction('rho_np', rho_np)
  r = _checks.check_nonnegative('r', r)
  n_np = rho_np * n
  n_p = (1.0 - rho_np) * n
  total_weight = n_np + r * n_p
  if np.any(total_weight <= 0):
    raise ValueError('r must be > 0 when there are no non-private clients '
                     f'(rho_np = 0), got r={r!r}')
  return (n_np * sigma_c2 + r**2 * n_p *
          (sigma_c2 + n_p * gamma2)) / total_weight**2


def optimal_server_variance(sigma_c2, gamma2, n, rho_np):
  """Variance of FedHDP's global estimate at r = r*, eq. (78) (Lemma 6).

    sigma_s,opt^2 = (1/N) sigma_c^2 (sigma_c^2 + N_p gamma^2)
                    / (sigma_c^2 + rho_np N_p gamma^2).

  This is the Bayes risk of the server (eq. (12)): no estimator built from
  the updates psi_1, ..., psi_N does better (Lemma 1).
  """
  sigma_c2 = _checks.check_positive('sigma_c2', sigma_c2)
  gamma2 = _checks.check_nonnegative('gamma2', gamma2)
  n = _checks.check_positive('n', n)
  rho_np = _checks.check_fraction('rho_np', rho_np)
  n_p = (1.0 - rho_np) * n
  return (sigma_c2 * (sigma_c2 + n_p * gamma2) /
          (sigma_c2 + rho_np * n_p * gamma2) / n)


def hdp_fedavg_server_variance(sigma_c2, gamma2, n, rho_np):
  """Variance of HDP-FedAvg's global estimate (FedHDP at r = 1).

    sigma_s,hdp-fedavg^2 = (sigma_c^2 + (1 - rho_np) N_p gamma^2) / N.

  Spec section 8; the difference to eq. (78) is eq. (79).
  """
  sigma_c2 = _checks.check_positive('sigma_c2', sigma_c2)
  gamma2 = _checks.check_nonnegative('gamma2', gamma2)
  n = _checks.check_positive('n', n)
  rho_np = _checks.check_fraction('rho_np', rho_np)
  n_p = (1.0 - rho_np) * n
  return (sigma_c2 + (1.0 - rho_np) * n_p * gamma2) / n


def dp_fedavg_server_variance(sigma_c2, gamma2, n, rho_np):
  """Variance of DP-FedAvg's global estimate.

    sigma_s,dp-fedavg^2 = (sigma_c^2 + N_p gamma^2) / N.

  All N clients add N(0, N_p gamma^2) (the private clients' noise) and the
  server averages; this is the reading under which eqs. (80)-(81) of paper
  001 hold (docs/fedhdp.md, the theory section). `rho_np` enters only through N_p.
  """
  sigma_c2 = _checks.check_positive('sigma_c2', sigma_c2)
  gamma2 = _checks.check_nonnegative('gamma2', gamma2)
  n = _checks.check_positive('n', n)
  rho_np = _checks.check_fraction('rho_np', rho_np)
  n_p = (1.0 - rho_np) * n
  return (sigma_c2 + n_p * gamma2) / n


def _gap_parts(sigma_c2, gamma2, n, rho_np):
  sigma_c2 = _checks.check_positive('sigma_c2', sigma_c2)
  gamma2 = _checks.check_nonnegative('gamma2', gamma2)
  n = _checks.check_positive('n', n)
  rho_np = _checks.check_fraction('rho_np', rho_np)
  denominator = sigma_c2 + rho_np * (1.0 - rho_np) * gamma2 * n
  return sigma_c2, gamma2, n, rho_np, denominator


def gap_hdp_fedavg_optimal(sigma_c2, gamma2, n, rho_np):
  """sigma_s,hdp-fedavg^2 - sigma_s,opt^2, eq. (79) of paper 001 (Lemma 7).

    rho_np (1 - rho_np)^3 gamma^4 N
    / (alpha^2 + tau^2 + rho_np (1 - rho_np) gamma^2 N)  >= 0,

  with alpha^2 + tau^2 = sigma_c^2. It vanishes at rho_np = 0 and 1 and tends
  to (1 - rho_np)^2 gamma^2 as N -> infinity.
  """
  sigma_c2, gamma2, n, rho_np, denominator = _gap_parts(
      sigma_c2, gamma2, n, rho_np)
  return rho_np * (1.0 - rho_np)**3 * gamma2**2 * n / denominator


def gap_dp_fedavg_optimal(sigma_c2, gamma2, n, rho_np):
  """sigma_s,dp-fedavg^2 - sigma_s,opt^2, eq. (80) of paper 001 (Lemma 7).

    [rho_np (1 - rho_np) (alpha^2 + tau^2) gamma^2
     + rho_np (1 - rho_np)^2 gamma^4 N]
    / (alpha^2 + tau^2 + rho_np (1 - rho_np) gamma^2 N)  >= 0.

  It vanishes at rho_np = 0 and 1 and tends to (1 - rho_np) gamma^2 as
  N -> infinity.
  """
  sigma_c2, gamma2, n, rho_np, denominator = _gap_parts(
      sigma_c2, gamma2, n, rho_np)
  rho_bar = 1.0 - rho_np
  return (rho_np * rho_bar * sigma_c2 * gamma2 +
          rho_np * rho_bar**2 * gamma2**2 * n) / denominator


def gap_dp_fedavg_hdp_fedavg(sigma_c2, gamma2, n, rho_np):
  """sigma_s,dp-fedavg^2 - sigma_s,hdp-fedavg^2, eq. (81) of paper 001.

    [rho_np (1 - rho_np) (alpha^2 + tau^2) gamma^2
     + rho_np^2 (1 - rho_np)^2 gamma^4 N]
    / (alpha^2 + tau^2 + rho_np (1 - rho_np) gamma^2 N)  >= 0.

  The fraction cancels to rho_np (1 - rho_np) gamma^2: the numerator is the
  denominator times rho_np (1 - rho_np) gamma^2. It is computed here as the
  paper writes it.
  """
  sigma_c2, gamma2, n, rho_np, denominator = _gap_parts(
      sigma_c2, gamma2, n, rho_np)
  rho_bar = 1.0 - rho_np
  return (rho_np * rho_bar * sigma_c2 * gamma2 +
          rho_np**2 * rho_bar**2 * gamma2**2 * n) / denominator
