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
"""Monte-Carlo simulators of FedHDP on linear regression and point estimation.

Paper 001, Algorithm 1 (federated linear regression, dimension d) and
Algorithm 3 (federated point estimation, d = 1), generalised to l privacy
levels (Appendix A.6). One trial draws, for N clients in l groups:

  phi ~ N(0, I_d)                 (any law would do: docs/fedhdp.md)
  phi_j = phi + p_j,              p_j ~ N(0, tau^2 I_d)               (7)
  x_j = F_j phi_j + v_j,          v_j ~ N(0, beta^2 I_{n_s}),
                                  beta^2 = alpha^2 n_s                (6)

and runs one round of FedHDP with eta = 1 and eta_p = 1 / (1 + lambda)
(Lemma 4: one round reaches the fixed point):

  client:  phi_hat_j = (F_j^T F_j)^-1 F_j^T x_j                      (9)
           theta <- theta0 - eta (theta0 - phi_hat_j)  (= phi_hat_j)
           psi_j = theta + l_j,  l_j ~ N(0, N_i gamma_i^2 I_d)       (11)
  server:  theta = sum_j w_j psi_j,  w_j = r_i / sum_k N_k r_k       (63)
  client:  theta_j <- theta0 - eta_p ((theta0 - phi_hat_j)
                                      + lambda (theta0 - theta))     (54)

with theta0 = 0 the initial model, and a design with F_j^T F_j = n_s I_d
(Appendix A.1; F_j = [1, ..., 1]^T for point estimation, Appendix B).
Errors are per coordinate, ||.||^2 / d, averaged over each group's clients
within a trial; means and standard errors are over independent trials.
Calls that differ only in the ratios, the gamma_i^2 or lambda and share a
seed use common random numbers. DP-FedAvg is one group of N clients with
gamma^2 = (1 - rho_np) gamma^2: every client then adds N(0, N_p gamma^2), as
in `server_aggregation`. Why: docs/fedhdp.md, "Theory: the models".
"""

from typing import NamedTuple, Optional, Sequence

import numpy as np

from tff_hdp.theory import _checks
from tff_hdp.theory import data_model
from tff_hdp.theory import multi_level

# Elements of the largest per-batch array; bounds memory to tens of MB.
_BATCH_ELEMENTS = 1 << 21


class Groups(NamedTuple):
  """The privacy groups of a simulation, one entry per group.

  Attributes:
    sizes: N_i, whole numbers of clients.
    gamma2s: gamma_i^2 (0 for a non-private group); each client of group i
      adds N(0, N_i gamma_i^2 I_d).
    ratios: r_i; the server weighs a client of group i by
      r_i / sum_k N_k r_k. Two-level FedHDP: groups (non-private, private),
      ratios (1, r).
  """
  sizes: Sequence[int]
  gamma2s: Sequence[float]
  ratios: Sequence[float]


class SimulationResult(NamedTuple):
  """Empirical errors of one simulated configuration.

  Attributes:
    server_mse: Mean over trials of ||theta - phi||^2 / d.
    server_mse_se: Its standard error (std over trials / sqrt(trials)).
    client_mse: Array [num_groups, num_lambdas]: mean over trials of the
      average over the group's clients of ||theta_j(lambda) - phi_j||^2 / d
      (NaN for an empty group).
    client_mse_se: Standard errors of `client_mse`.
    lambdas: The lambdas, in the order of `client_mse`'s columns.
    num_trials: Number of independent trials.
  """
  server_mse: float
  server_mse_se: float
  client_mse: np.ndarray
  client_mse_se: np.ndarray
  lambdas: np.ndarray
  num_trials: int


def _orthogonal_designs(rng: np.random.Generator, num_clients: int,
                        num_samples: int, dim: int) -> np.ndarray:
  """F_j = sqrt(n_s) Q_j with Q_j^T Q_j = I_d, for each client: [N, n_s, d]."""
  gaussian = rng.standard_normal((num_clients, num_samples, dim))
  q, _ = np.linalg.qr(gaussian)
  return np.sqrt(num_samples) * q


def _simulate(designs: np.ndarray, groups: Groups, alpha2, tau2, lambdas,
              num_trials, rng, own_noise_in_global):
  """Runs the trials for client designs F_j, [N, n_s, d]."""
  group_sizes, gamma2s, ratios = groups
  num_clients, num_samples, dim = designs.shape
  group_sizes = np.asarray(group_sizes, dtype=np.int64)
  num_groups = group_sizes.size
  group_of_client = np.repeat(np.arange(num_groups), group_sizes)
  noise_std = np.sqrt(group_sizes * np.asarray(gamma2s))[group_of_client]
  weight = multi_level.group_weights(ratios, group_sizes)[group_of_client]
  beta = np.sqrt(alpha2 * num_samples)
  tau = np.sqrt(tau2)
  # (F^T F)^-1 F^T, [N, d, n_s].
  gram_inverse = np.linalg.inv(np.einsum('nsd,nse->nde', designs, designs))
  least_squares = np.einsum('nde,nse->nds', gram_inverse, designs)
  # u = eta_p lambda = lambda / (1 + lambda) and eta_p = 1 - u.
  with np.errstate(invalid='ignore'):
    u = np.where(np.isinf(lambdas), 1.0, lambdas / (1.0 + lambdas))
  eta_p = 1.0 - u
  theta0 = 0.0
  eta = 1.0

  batch = max(1, _BATCH_ELEMENTS // (num_clients * max(num_samples, dim)))
  server_errors = []
  client_errors = []  # Per trial: [num_groups, num_lambdas].
  done = 0
  while done < num_trials:
    b = min(batch, num_trials - done)
    done += b
    phi = rng.standard_normal((b, 1, dim))
    phi_clients = phi + tau * rng.standard_normal((b, num_clients, dim))
    x = (np.einsum('nsd,bnd->bns', designs, phi_clients) +
         beta * rng.standard_normal((b, num_clients, num_samples)))
    privacy_noise = noise_std[None, :, None] * rng.standard_normal(
        (b, num_clients, dim))

    phi_hat = np.einsum('nds,bns->bnd', least_squares, x)
    local = theta0 - eta * (theta0 - phi_hat)
    psi = local + privacy_noise
    theta = np.einsum('n,bnd->bd', weight, psi)[:, None, :]
    server_errors.append(np.mean((theta - phi)**2, axis=(1, 2)))

    if own_noise_in_global:
      global_seen = np.broadcast_to(theta, phi_hat.shape)
    else:
      global_seen = theta - weight[None, :, None] * privacy_noise
    errors = np.empty((b, num_groups, lambdas.size))
    for k in range(lambdas.size):
      theta_j = (theta0 - eta_p[k] * (theta0 - phi_hat) -
                 u[k] * (theta0 - global_seen))
      per_client = np.mean((theta_j - phi_clients)**2, axis=2)  # [b, N]
      for g in range(num_groups):
        members = group_of_client == g
        errors[:, g, k] = (per_client[:, members].mean(axis=1)
                           if members.any() else np.nan)
    client_errors.append(errors)

  server_errors = np.concatenate(server_errors)
  client_errors = np.concatenate(client_errors)
  sqrt_trials = np.sqrt(num_trials)
  return SimulationResult(
      server_mse=float(server_errors.mean()),
      server_mse_se=float(server_errors.std(ddof=1) / sqrt_trials),
      client_mse=client_errors.mean(axis=0),
      client_mse_se=client_errors.std(axis=0, ddof=1) / sqrt_trials,
      lambdas=lambdas,
      num_trials=num_trials)


def _check_common(groups, data, num_samples, lambdas, num_trials):
  """The checked arguments, `groups` as arrays, `data` as (alpha2, tau2),
  or a one-line ValueError."""
  if not isinstance(groups, Groups):
    raise TypeError('groups must be a tff_hdp.theory.Groups(sizes, gamma2s, '
                    f'ratios), got {type(groups).__name__}')
  group_sizes = _checks.check_integer_sizes('groups.sizes', groups.sizes)
  gamma2s = _checks.check_nonnegative('groups.gamma2s', groups.gamma2s)
  ratios = _checks.check_nonnegative('groups.ratios', groups.ratios)
  _checks.check_same_length(
      ('groups.sizes', 'groups.gamma2s', 'groups.ratios'), group_sizes,
      gamma2s, ratios)
  if np.any(np.isinf(gamma2s)):
    raise ValueError(f'groups.gamma2s must be finite, got {gamma2s!r}')
  alpha2, tau2 = data_model.check_data_model(data)
  alpha2 = float(_checks.check_positive('alpha2', alpha2))
  tau2 = float(_checks.check_nonnegative('tau2', tau2))
  if not isinstance(num_samples, (int, np.integer)) or num_samples < 1:
    raise ValueError(
        f'num_samples must be an integer >= 1, got {num_samples!r}')
  lambdas = np.atleast_1d(_checks.check_nonnegative('lambdas', lambdas))
  if lambdas.ndim != 1:
    raise ValueError(f'lambdas must be a scalar or 1-D, got {lambdas!r}')
  if not isinstance(num_trials, (int, np.integer)) or num_trials < 2:
    raise ValueError(f'num_trials must be an integer >= 2, got {num_trials!r}')
  return Groups(group_sizes, gamma2s, ratios), alpha2, tau2, lambdas


def simulate_linear_regression(*, groups: Groups,
                               data: data_model.DataModel, dim: int,
                               num_samples: int,
                               lambdas: Sequence[float] = (),
                               num_trials: int,
                               seed: Optional[int] = None,
                               own_noise_in_global: bool = True
                               ) -> SimulationResult:
  """Simulates Algorithm 1 of paper 001 (any number of privacy levels).

  Args:
    groups: N_i, gamma_i^2 and r_i of every privacy group (`Groups`).
    data: alpha^2 and tau^2 (`DataModel`): observations have noise variance
      beta^2 = alpha2 * num_samples, phi_j has variance tau^2 around phi.
    dim: d, the number of regression coefficients.
    num_samples: n_s >= d, samples per client.
    lambdas: Ditto's lambda values to evaluate (the same for all clients).
    num_trials: Number of independent trials (>= 2).
    seed: Seed of `np.random.default_rng`.
    own_noise_in_global: If False, each client subtracts its own weighted
      privacy noise w_j l_j from the global model before its Ditto step
      (the paper's eq. (44)); see `multi_level`.

  Returns:
    A `SimulationResult`.
  """
  groups, alpha2, tau2, lambdas = _check_common(
      groups, data, num_samples, lambdas, num_trials)
  if not isinstance(dim, (int, np.integer)) or not 1 <= dim <= num_samples:
    raise ValueError(f'dim must be an integer in [1, num_samples], got {dim!r}')
  rng = np.random.default_rng(seed)
  designs = _orthogonal_designs(rng, int(groups.sizes.sum()), num_samples, dim)
  return _simulate(designs, groups, alpha2, tau2, lambdas, num_trials, rng,
                   own_noise_in_global)


def simulate_point_estimation(*, groups: Groups,
                              data: data_model.DataModel, num_samples: int,
                              lambdas: Sequence[float] = (),
                              num_trials: int,
                              seed: Optional[int] = None,
                              own_noise_in_global: bool = True
                              ) -> SimulationResult:
  """Simulates Algorithm 3 of paper 001 (federated point estimation).

  Client j observes x_{j,i} = phi_j + v_{j,i}, i = 1..n_s, and phi_hat_j is
  their mean. Same arguments as `simulate_linear_regression`, with d = 1 and
  F_j = [1, ..., 1]^T.
  """
  groups, alpha2, tau2, lambdas = _check_common(
      groups, data, num_samples, lambdas, num_trials)
  rng = np.random.default_rng(seed)
  designs = np.ones((int(groups.sizes.sum()), num_samples, 1))
  return _simulate(designs, groups, alpha2, tau2, lambdas, num_trials, rng,
                   own_noise_in_global)
