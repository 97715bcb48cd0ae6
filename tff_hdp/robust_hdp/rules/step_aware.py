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
"""The step-aware rule (ours): each update weighed by its inverse noise per
unit of progress, w_i proportional to ||L_{:,i}|| / sigma^_i^2.

Paper 003's clients take different numbers of DP-SGD steps a round, E_i =
K_i ceil(N_i / b_i) (Section 3.2), and its eq. (8) weighs them as if each
update made the same progress. The class derives the rule in paper 003's
notation. Its server is told nothing, as Robust-HDP's: the one robust PCA
of M = [Delta_1 | ... | Delta_n] = L + S that gives Robust-HDP its
sigma^_i^2 from S also gives, in L, each update's signal, whose norm stands
for E_i up to a factor common to all clients.
"""

from tff_hdp.robust_hdp import rule_registry
from tff_hdp.robust_hdp.rules import robust_hdp


class StepAware(robust_hdp.RobustHdp):
  """w_i = (||L_{:,i}|| / sigma^_i^2) / sum_j (||L_{:,j}|| / sigma^_j^2).

  Derivation. Client i's update is E_i steps of eq. (6), Delta_i =
  -eta_l sum_k g~_i(theta_{i,k-1}). To first order in eta_l (the small
  steps of Theorem 2, theta_{i,k} ~ theta^e) and with the clients'
  gradients alike (the premise of Section 3.3's low-rank M),

    Delta_i = E_i mu + e_i,  mu = -eta_l G(theta^e),  Var(e_i) = sigma_i^2

  (eq. (7)), e_i independent between clients. An aggregate sum_i w_i
  Delta_i moves (sum_i w_i E_i) steps of mu with noise sum_i w_i^2
  sigma_i^2. Eq. (8) minimises the noise at sum_i w_i = 1, which fixes the
  progress only when every E_i is the same; with unequal E_i its w_i ~
  1/sigma_i^2 ~ b_i^3 / (N_i z_i^2) (eqs. (3), (7)) favours the clients of
  large b_i, which take the fewest steps, and the aggregate moves few.
  Minimise the noise at a fixed progress instead, sum_i w_i E_i = 1 (the
  best linear unbiased estimate of mu): Lagrange's condition w_i sigma_i^2
  = lambda E_i gives w_i ~ E_i / sigma_i^2, which also maximises the
  aggregate's signal-to-noise ratio (sum_i w_i E_i)^2 / sum_i w_i^2
  sigma_i^2 (Cauchy-Schwarz). Normalised to sum_i w_i = 1, as paper 003's
  weights are, it is eq. (8)'s rule when every E_i is the same. By eq. (7)
  sigma_i^2 / E_i = eta_l^2 sigma_{i,g~}^2, the noise of one step: the
  rule weighs each update by its inverse noise per unit of progress,
  ~ b_i^2 / z_i^2, where eq. (8) weighs by ~ b_i^3 / (N_i z_i^2).

  The server knows neither E_i nor sigma_i^2. Robust PCA splits M = L + S;
  sigma^_i^2 = ||S_{:,i}||^2 / p estimates sigma_i^2 / p (Robust-HDP's),
  and L_{:,i}, the low-rank part of Delta_i, estimates its signal E_i mu,
  so ||L_{:,i}|| estimates E_i ||mu||, whose common factor ||mu|| the
  normalisation cancels. The estimate is rough: singular-value
  thresholding shrinks L, and a client with little noise leaves some of it
  in L, so ||L_{:,i}|| grows less than linearly in E_i
  (tests/robust_hdp/test_step_aware.py checks that the weights still come
  closer to E_i / sigma_i^2 than Robust-HDP's). When L is 0 (no common
  signal found) the rule falls back to 1/sigma^_i^2.
  """

  # Robust-HDP's server (told nothing), robust PCA settings and cohort.
  name = 'step_aware'
  label = 'Step-aware'
  role = 'ours'

  def weights(self, updates, told):
    del told  # Told nothing.
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from tff_hdp.robust_hdp import rpca  # pylint: disable=g-import-not-at-top
    signal, variances = rpca.split_norms(
        tf.transpose(tf.cast(updates, tf.float64)), **self.rpca_options)
    return step_aware_weights(signal, variances), variances


def step_aware_weights(signal_norms, variances):
  """w_i = (s_i / v_i) / sum_j (s_j / v_j) of the [n] float64 signal norms
  s_i and noise variances v_i; (1/v_i) / sum_j (1/v_j) if every s_i is 0."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  scores = signal_norms / variances
  inverse = 1.0 / variances
  total = tf.reduce_sum(scores)
  return tf.where(total > 0, scores / total, inverse / tf.reduce_sum(inverse))


rule_registry.register(StepAware())
