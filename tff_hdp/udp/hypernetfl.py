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
"""One round of UDP-Alg (paper 004, Algorithm 1) in plain TensorFlow.

For the users U_t sampled this round (Poisson, rate q):

  theta_u = h(phi, v_u); K local SGD steps on D_u give theta_u^K;
  Delta_u = theta_u - theta_u^K                        (pFedHN's sign);
  g_u = Clip((d theta_u / d phi)^T Delta_u, S),  w_u = min(|D_u| / w_hat, 1);
  grad_phi = (sum_u w_u g_u + N(0, (z max_u w_u S)^2 I)) / (q W),
  W = sum over all users of w_u;
  phi <- phi - lambda grad_phi;
  v_u <- v_u - zeta (d theta_u / d v_u)^T Delta_u.

Sign: the paper writes Delta = theta^K - theta and phi <- phi - lambda grad,
which would move phi against the users' progress; we follow pFedHN's code
(Delta = theta - theta^K), so phi and v descend on the users' losses.

The estimator is TF Privacy's `NormalizedQuery(GaussianSumQuery(max_w S,
z max_w S), denominator=q W)`: its records w_u Clip(g_u, S) have norm at most
max_w S (Lemma 3.1), so its noise after normalisation has stddev
z max_w S / (q W), eq. (4). As in FedHDP (`group_aggregation`), the Gaussian
is drawn with `tf.random.stateless_normal` from a key in the server state
with the query's calibrated stddev, so a seed reproduces a run.

`max_w` is the largest w_u over *all* users (the sensitivity must hold for
any user that could be added), a public constant of the run.

Noiseless (the paper's baseline): the same estimator without clipping or
noise. pFedHN: one user per step, g = (d theta_u / d phi)^T Delta_u, no
weighting (`denominator` 1, `max_weight` 1), as its code does.
"""

from typing import Sequence

import tensorflow as tf
import tensorflow_privacy as tfp

from tff_hdp import models
from tff_hdp.udp import hypernetwork


def local_deltas(target: models.ModelSpec, thetas: Sequence[tf.Tensor],
                 x: tf.Tensor, y: tf.Tensor, indices: tf.Tensor,
                 mask: tf.Tensor, learning_rate: tf.Tensor) -> list[tf.Tensor]:
  """Every sampled user's K local SGD steps at once.

  Returns Delta_u = theta_u - theta_u^K per target tensor, [B, *shape].

  Args:
    target: The target network.
    thetas: Per target tensor, [B, *shape] the users' generated weights.
    x: [B, n_max, ...] each user's training examples, zero-padded.
    y: [B, n_max] their labels.
    indices: [K, B, b] the examples of each step's batch, per user.
    mask: [K, B, b] 1 for a real example of the batch, 0 for padding (a user
      with fewer than b examples uses all of them every step).
    learning_rate: eta.
  """

  def batch_loss_gradient(args):
    weights, xb, yb, mb = args
    with tf.GradientTape() as tape:
      tape.watch(weights)
      logits = target.apply(weights, xb)
      losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=yb, logits=logits)
      loss = tf.reduce_sum(losses * mb) / tf.maximum(tf.reduce_sum(mb), 1.0)
    return tape.gradient(loss, weights)

  def step(k, weights):
    xb = tf.gather(x, indices[k], batch_dims=1)
    yb = tf.gather(y, indices[k], batch_dims=1)
    # One vectorized_map over the users. An im2col form (patches times each
    # user's kernel, batched) ran 2x slower at CIFAR-10 scale on the 2-core
    # CPU (22.7 against 11.3 s per round, benchmark_udp.py), and a batched
    # einsum FC NN no faster on the digits.
    grads = tf.vectorized_map(batch_loss_gradient,
                              (weights, xb, yb, mask[k]))
    return k + 1, [w - learning_rate * g for w, g in zip(weights, grads)]

  thetas = [tf.convert_to_tensor(t) for t in thetas]
  _, final = tf.while_loop(lambda k, _: k < tf.shape(indices)[0], step,
                           (tf.constant(0), thetas))
  return [t - f for t, f in zip(thetas, final)]


def estimator_query(clip: float, noise_multiplier: float, max_weight: float,
                    denominator: float) -> tfp.NormalizedQuery:
  """The weighted fixed-denominator estimator with its Gaussian noise."""
  bound = max_weight * clip
  return tfp.NormalizedQuery(
      tfp.GaussianSumQuery(l2_norm_clip=bound,
                           stddev=noise_multiplier * bound),
      denominator=denominator)


def clip_each(per_user: Sequence[tf.Tensor], clip) -> list[tf.Tensor]:
  """Clip(g_u, S) for every user (rows), by TF Privacy's record clipping."""
  query = tfp.GaussianSumQuery(l2_norm_clip=clip, stddev=0.0)
  params = query.derive_sample_params(query.initial_global_state())

  def one(record):
    return query.preprocess_record(params, list(record))

  specs = [tf.TensorSpec(g.shape[1:], g.dtype) for g in per_user]
  return list(tf.map_fn(one, list(per_user), fn_output_signature=specs))


def weighted_clipped_sum(per_user: Sequence[tf.Tensor], weights: tf.Tensor,
                         clip, clip_and_noise: bool = True) -> list[tf.Tensor]:
  """sum_u w_u Clip(g_u, S) (no clipping for Noiseless) from rows g_u."""
  if clip_and_noise:
    per_user = clip_each(per_user, clip)
  return [tf.tensordot(tf.cast(weights, g.dtype), g, axes=1)
          for g in per_user]


def cohort_gradient(net: hypernetwork.HyperNetwork, phi, embeddings, deltas,
                    weights, *, clip, clip_and_noise: bool = True):
  """sum_u w_u Clip((d theta_u/d phi)^T Delta_u, S) over the cohort.

  `HyperNetwork.scaled_phi_vjp_sum` with s_u = w_u S min(1/||g_u||, 1/S):
  TF Privacy's record clip (`GaussianSumQuery.preprocess_record`, whose
  `tf.clip_by_global_norm` is that formula, S read from the query's sample
  params), applied through each user's norm so that the heads' per-user
  gradients are never formed; s_u = w_u for Noiseless (no clipping).
  tests/udp/test_hypernetfl.py checks it against `clip_each` and
  `weighted_clipped_sum` of `phi_vjps`.

  Returns:
    (the sum per phi tensor, [B] the unclipped VJPs' norms).
  """
  weights = tf.convert_to_tensor(weights, tf.float32)
  if clip_and_noise:
    query = tfp.GaussianSumQuery(l2_norm_clip=clip, stddev=0.0)
    bound = tf.cast(query.derive_sample_params(query.initial_global_state()),
                    tf.float32)
    scale_fn = lambda norms: weights * bound * tf.minimum(1.0 / norms,
                                                          1.0 / bound)
  else:
    scale_fn = lambda norms: weights
  return net.scaled_phi_vjp_sum(phi, embeddings, deltas, scale_fn)


def private_estimate(total: Sequence[tf.Tensor], *, clip, noise_multiplier,
                     max_weight, denominator, key: tf.Tensor,
                     clip_and_noise: bool = True,
                     return_sums: bool = False):
  """grad_phi = (sum_u w_u Clip(g_u, S) + N(0, (z max_w S)^2 I)) / (q W).

  Returns:
    (grad_phi per phi tensor, the noise stddev after normalisation), and
    with `return_sums` the noised sums before the division last.
  """
  if not clip_and_noise:
    out = [t / denominator for t in total], tf.constant(0.0)
    return out + (list(total),) if return_sums else out
  query = estimator_query(clip, noise_multiplier, max_weight, denominator)
  state = query.initial_global_state()
  stddev = tf.cast(state.numerator_state.stddev, tf.float32)
  sums = []
  for i, t in enumerate(total):
    seed = tf.random.experimental.stateless_fold_in(key, i)
    noise = tf.random.stateless_normal(tf.shape(t), seed=seed, stddev=stddev)
    sums.append(t + noise)
  denominator = tf.cast(state.denominator, tf.float32)
  out = [s / denominator for s in sums], stddev / denominator
  return out + (sums,) if return_sums else out


def users_step(net: hypernetwork.HyperNetwork, phi: Sequence[tf.Tensor],
               embeddings: tf.Tensor, x, y, indices, mask,
               user_weights: tf.Tensor, *, clip, local_learning_rate,
               embedding_learning_rate, clip_and_noise: bool = True):
  """What a round's users compute before the noise (all or some of them).

  Each user u gets theta_u = h(phi, v_u), takes its K local steps, and
  contributes w_u Clip((d theta_u/d phi)^T Delta_u, S) to the sum and
  v_u - zeta (d theta_u/d v_u)^T Delta_u as its new embedding. The sum over
  a cohort is the sum of the sums over any split of it (up to float
  summation order), which is what lets TFF workers each run a slice
  (`tff_hdp.udp.distributed`).

  Args:
    As `round_step`.

  Returns:
    (the weighted clipped sum per phi tensor, [B] the unclipped VJPs'
    norms, the new [B, e] embeddings).
  """
  thetas = net.generate(phi, embeddings)
  deltas = local_deltas(net.target, thetas, x, y, indices, mask,
                        local_learning_rate)
  total, norms = cohort_gradient(net, phi, embeddings, deltas, user_weights,
                                 clip=clip, clip_and_noise=clip_and_noise)
  embedding_grads = net.embedding_vjps(phi, embeddings, deltas)
  return total, norms, embeddings - embedding_learning_rate * embedding_grads


def round_step(net: hypernetwork.HyperNetwork, phi: Sequence[tf.Tensor],
               embeddings: tf.Tensor, x, y, indices, mask,
               user_weights: tf.Tensor, key: tf.Tensor, *, clip,
               noise_multiplier, max_weight, denominator, local_learning_rate,
               hyper_learning_rate, embedding_learning_rate,
               clip_and_noise: bool = True, extra_total=None,
               return_release: bool = False):
  """One round for the sampled users: new phi, their new embeddings.

  Args:
    net: The hypernetwork.
    phi: Its weights.
    embeddings: [B, e] the sampled users' v_u.
    x, y, indices, mask: As `local_deltas`.
    user_weights: [B] w_u.
    key: This round's stateless noise key.
    clip, noise_multiplier, max_weight, denominator: S, z, max_u w_u, q W.
    local_learning_rate, hyper_learning_rate, embedding_learning_rate:
      eta, lambda, zeta.
    clip_and_noise: False for Noiseless and pFedHN.
    extra_total: Optional, per phi tensor, records added to the users'
      weighted clipped sum before the noise (an audit's canary users,
      `tff_hdp.udp.audit`).
    return_release: Also return the release minus the users' known records
      (`phi_step`).

  Returns:
    (new phi, new [B, e] embeddings, measurements), and the release minus
    the known records last with `return_release`.
  """
  total, norms, new_embeddings = users_step(
      net, phi, embeddings, x, y, indices, mask, user_weights, clip=clip,
      local_learning_rate=local_learning_rate,
      embedding_learning_rate=embedding_learning_rate,
      clip_and_noise=clip_and_noise)
  new_phi, stddev, *release = phi_step(
      phi, total, key, clip=clip, noise_multiplier=noise_multiplier,
      max_weight=max_weight, denominator=denominator,
      hyper_learning_rate=hyper_learning_rate,
      clip_and_noise=clip_and_noise, extra_total=extra_total,
      return_release=return_release)
  measurements = {
      'noise_stddev': stddev,
      'user_weight_max': tf.reduce_max(user_weights),
      'user_weight_sum': tf.reduce_sum(user_weights),
      'gradient_norm_mean': tf.reduce_mean(norms),
      'clipped_fraction': tf.reduce_mean(tf.cast(norms > clip, tf.float32)),
  }
  return (new_phi, new_embeddings, measurements, *release)


def phi_step(phi: Sequence[tf.Tensor], total: Sequence[tf.Tensor],
             key: tf.Tensor, *, clip, noise_multiplier, max_weight,
             denominator, hyper_learning_rate, clip_and_noise: bool = True,
             extra_total=None, return_release: bool = False):
  """phi <- phi - lambda grad_phi from the users' weighted clipped sum.

  `extra_total` (an audit's canary records) joins the sum before the noise.

  Returns:
    (new phi, the noise stddev after normalisation), and with
    `return_release` last: the release's noised sum minus the users' own
    `total`, i.e. what an auditor who knows the users' records learns from
    it (`tff_hdp.udp.audit`).
  """
  known = total
  if extra_total is not None:
    total = [t + e for t, e in zip(total, extra_total)]
  gradient, stddev, sums = private_estimate(
      total, clip=clip, noise_multiplier=noise_multiplier,
      max_weight=max_weight, denominator=denominator, key=key,
      clip_and_noise=clip_and_noise, return_sums=True)
  new_phi = [p - hyper_learning_rate * g for p, g in zip(phi, gradient)]
  if return_release:
    return new_phi, stddev, [s - k for s, k in zip(sums, known)]
  return new_phi, stddev


def empty_round_step(phi: Sequence[tf.Tensor], key: tf.Tensor, **kwargs):
  """phi after a round in which no user was sampled (`phi_step`'s keywords).

  The estimator is still released: its sum is empty (plus any canary
  records), and the noise is added all the same. Skipping the round instead
  would tell whoever sees phi that nobody was sampled.
  """
  out = phi_step(phi, [tf.zeros_like(p) for p in phi], key, **kwargs)
  return (out[0], out[2]) if kwargs.get('return_release') else out[0]
