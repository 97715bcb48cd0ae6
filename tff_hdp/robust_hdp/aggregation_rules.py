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
"""The server's aggregation rules of paper 003 (Table 1), as plain maths.

Every rule returns the aggregate sum_i w_i Delta_i of the n clients' updates
(rows of an [n, p] matrix), theta <- theta + aggregate. They differ in what
the server must know (paper 003, Table 1):

| rule        | w_i                                  | the server knows  |
|-------------|--------------------------------------|-------------------|
| robust_hdp  | (1/sigma^_i^2) / sum_j (1/sigma^_j^2)| nothing           |
| weiavg      | epsilon_i / sum_j epsilon_j          | epsilon_i         |
| pfa         | weiavg after a projection (below)    | epsilon_i         |
| dpfedavg    | N_i / sum_j N_j                      | N_i               |
| min_epsilon | N_i / sum_j N_j, all at z(eps_min)   | eps_min           |
| oracle      | (1/sigma_i^2) / sum_j (1/sigma_j^2)  | everything        |
| non_private | N_i / sum_j N_j, clients run SGD     | N_i               |

A round over a subset of the clients (a partial cohort) aggregates only its
rows: the weights are renormalised among them (`renormalized`), Robust-HDP's
RPCA runs on the present rows, and a round with no client leaves the model
unchanged; `min_cohort` is the fewest clients each rule takes.

Robust-HDP's weights are a function of the updates alone
(`robust_hdp_weights(updates)`): sigma^_i^2 = ||S_{:,i}||^2 / p from robust
PCA of M = [Delta_1 | ... | Delta_n] (`rpca`). The rules that use side
information get it as fixed weights (`fixed_weights`), computed before
training from what that rule's server is told.

The noise variance of a DP-SGD update (eqs. (3) and (7)), with the clipping
term (c^2 - ||G||^2)/b_i of eq. (3) dropped as the paper does ("approx"):

  sigma_i^2 = K_i ceil(N_i / b_i) eta_l^2 p c^2 z_i^2 / b_i^2,

and the noise power of an aggregate (Table 2) is sum_i w_i^2 sigma_i^2 /
(p eta_l^2).

PFA (Liu et al., VLDB 2021; paper 003's authors' code): the clients
with the largest epsilon are public (the top 10%, at least one, as the PFA
code; the HDPFL code fits a two-component Gaussian mixture instead). With
x_pub, x_priv the epsilon-weighted means of the public and private updates and
V_k the top-k principal directions of the mean-centred public updates,

  x^ = V_k V_k^T (x_priv - x_pub) + x_pub,
  aggregate = (sum_pub eps / sum eps) x_pub + (sum_priv eps / sum eps) x^.
"""

import math
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf

from tff_hdp.robust_hdp import config
from tff_hdp.robust_hdp import rpca

RULES = config.RULES
FIXED_WEIGHT_RULES = config.FIXED_WEIGHT_RULES
PFA_PUBLIC_FRACTION = 0.1


def normalized(values: Sequence[float]) -> np.ndarray:
  """values / sum(values), float64."""
  values = np.asarray(values, np.float64)
  if values.ndim != 1 or len(values) == 0 or np.any(values < 0) or not (
      values.sum() > 0):
    raise ValueError(f'weights need non-negative values with a positive sum, '
                     f'got {values}')
  return values / values.sum()


def renormalized(weights: tf.Tensor, present: tf.Tensor) -> tf.Tensor:
  """w restricted to the `present` rows and renormalised among them
  (float64; all zeros if no row is present)."""
  kept = tf.where(present, tf.cast(weights, tf.float64),
                  tf.zeros_like(weights, tf.float64))
  return tf.math.divide_no_nan(kept, tf.reduce_sum(kept))


def min_cohort(rule: str, num_clients: int) -> int:
  """The fewest clients a round of `rule` can aggregate (besides none).

  Robust-HDP's RPCA separates the updates' common low-rank part from each
  client's noise, which needs at least two clients (one, if there is only
  one); PFA's public and private clients are fixed for all n, so it takes
  every client; the fixed-weight rules renormalise over any cohort.
  """
  if rule == 'robust_hdp':
    return min(2, num_clients)
  if rule == 'pfa':
    return num_clients
  return 1


def inverse_variance_weights(variances: tf.Tensor) -> tf.Tensor:
  """w_i = (1/v_i) / sum_j (1/v_j), the minimiser of eq. (8)."""
  inverse = 1.0 / tf.cast(variances, tf.float64)
  return inverse / tf.reduce_sum(inverse)


def robust_hdp_weights(updates: tf.Tensor,
                       *,
                       block_rows: Optional[int] = None,
                       tol: float = rpca.DEFAULT_TOL,
                       max_iterations: int = rpca.DEFAULT_MAX_ITERATIONS,
                       method: str = 'admm'):
  """(w, sigma^2) of Robust-HDP from the [n, p] updates alone (Alg. 1, 7-10).

  Takes no epsilon, batch size or dataset size: the untrusted server knows
  none of them.
  """
  variances = rpca.noise_variances(
      tf.transpose(tf.cast(updates, tf.float64)), block_rows=block_rows,
      tol=tol, max_iterations=max_iterations, method=method)
  return inverse_variance_weights(variances), variances


def weighted_sum(updates: tf.Tensor, weights: tf.Tensor) -> tf.Tensor:
  """sum_i w_i Delta_i of the [n, p] updates, float32 [p]."""
  return tf.cast(
      tf.linalg.matvec(tf.cast(updates, tf.float64),
                       tf.cast(weights, tf.float64), transpose_a=True),
      tf.float32)


def pfa_public_mask(epsilons: Sequence[float],
                    fraction: float = PFA_PUBLIC_FRACTION) -> np.ndarray:
  """The public clients of PFA: the ceil(fraction n) largest epsilons."""
  epsilons = np.asarray(epsilons, np.float64)
  count = max(1, math.ceil(fraction * len(epsilons)))
  if count >= len(epsilons):
    raise ValueError(f'PFA needs at least one private client; {count} of '
                     f'{len(epsilons)} would be public')
  public = np.zeros(len(epsilons), bool)
  public[np.argsort(-epsilons, kind='stable')[:count]] = True
  return public


def pfa_aggregate(updates: tf.Tensor, epsilons: Sequence[float],
                  public: Sequence[bool], k: int = 1) -> tf.Tensor:
  """PFA's aggregate of the [n, p] updates (module doc), float32 [p]."""
  public = np.asarray(public, bool)
  eps = np.asarray(epsilons, np.float64)
  if k < 1 or k > public.sum():
    raise ValueError(f'PFA projection rank k must be in [1, number of public '
                     f'clients = {public.sum()}], got {k}')
  m = tf.cast(updates, tf.float64)
  pub = tf.gather(m, np.flatnonzero(public))
  priv = tf.gather(m, np.flatnonzero(~public))
  w_pub = tf.constant(normalized(eps[public]))
  w_priv = tf.constant(normalized(eps[~public]))
  x_pub = tf.linalg.matvec(pub, w_pub, transpose_a=True)
  x_priv = tf.linalg.matvec(priv, w_priv, transpose_a=True)
  centred = pub - tf.reduce_mean(pub, axis=0, keepdims=True)
  _, _, v = tf.linalg.svd(centred, full_matrices=False)  # v: [p, r]
  v_k = v[:, :k]
  projected = tf.linalg.matvec(
      v_k, tf.linalg.matvec(v_k, x_priv - x_pub, transpose_a=True)) + x_pub
  share_pub = eps[public].sum() / eps.sum()
  return tf.cast(share_pub * x_pub + (1.0 - share_pub) * projected, tf.float32)


def dp_sgd_noise_variance(noise_multiplier: float, batch_size: int,
                          num_examples: int, local_epochs: int, clip: float,
                          learning_rate: float, num_parameters: int) -> float:
  """sigma_i^2 of eq. (7) with eq. (3)'s noise term (0 if non-private)."""
  if noise_multiplier is None:
    return 0.0
  steps = local_epochs * math.ceil(num_examples / batch_size)
  return (steps * learning_rate**2 * num_parameters * clip**2 *
          noise_multiplier**2 / batch_size**2)


def noise_power(weights: Sequence[float], variances: Sequence[float],
                num_parameters: int, learning_rate: float) -> float:
  """sum_i w_i^2 sigma_i^2 / (p eta_l^2), paper 003's Table 2."""
  w = np.asarray(weights, np.float64)
  v = np.asarray(variances, np.float64)
  return float(np.sum(w**2 * v) / (num_parameters * learning_rate**2))


def fixed_weights(rule: str, *, epsilons: Sequence[Optional[float]],
                  num_examples: Sequence[int],
                  variances: Sequence[float]) -> np.ndarray:
  """w of a rule whose weights are fixed before training (see table).

  Args:
    rule: One of FIXED_WEIGHT_RULES.
    epsilons: epsilon_i (weiavg).
    num_examples: N_i (dpfedavg, min_epsilon, non_private).
    variances: sigma_i^2 of eq. (7) (oracle).
  """
  if rule == 'weiavg':
    return normalized(epsilons)
  if rule in ('dpfedavg', 'min_epsilon', 'non_private'):
    return normalized(num_examples)
  if rule == 'oracle':
    variances = np.asarray(variances, np.float64)
    if np.any(variances <= 0):
      raise ValueError('the oracle needs positive noise variances')
    return normalized(1.0 / variances)
  raise ValueError(f'rule {rule!r} has no fixed weights; allowed: '
                   f'{", ".join(FIXED_WEIGHT_RULES)}')
