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
"""The maths the Robust-HDP rules share (paper 003), in plain TensorFlow.

Every rule (`rule.Rule`, one file each in `rules/`) aggregates the n
clients' updates (rows of an [n, p] matrix) as sum_i w_i Delta_i
(`weighted_sum`), theta <- theta + aggregate. Robust-HDP's weights are a
function of the updates alone (`robust_hdp_weights(updates)`): sigma^_i^2 =
||S_{:,i}||^2 / p from robust PCA of M = [Delta_1 | ... | Delta_n]
(`rpca`), w_i ~ 1/sigma^_i^2, the minimiser of eq. (8) with the true
sigma_i^2 (`inverse_variance_weights`).

The noise variance of a DP-SGD update (eqs. (3) and (7)), with the clipping
term (c^2 - ||G||^2)/b_i of eq. (3) dropped as the paper does ("approx"):

  sigma_i^2 = K_i ceil(N_i / b_i) eta_l^2 p c^2 z_i^2 / b_i^2,

and the noise power of an aggregate (Table 2) is sum_i w_i^2 sigma_i^2 /
(p eta_l^2).
"""

import math
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf

from tff_hdp.robust_hdp import rpca


def inverse_variance_weights(variances: tf.Tensor) -> tf.Tensor:
  """w_i = (1/v_i) / sum_j (1/v_j), the minimiser of eq. (8)."""
  inverse = 1.0 / tf.cast(variances, tf.float64)
  return inverse / tf.reduce_sum(inverse)


def robust_hdp_weights(updates: tf.Tensor,
                       *,
                       block_rows: Optional[int] = None,
                       tol: float = rpca.DEFAULT_TOL,
                       max_iterations: int = rpca.DEFAULT_MAX_ITERATIONS,
                       method: str = rpca.DEFAULT_METHOD):
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
