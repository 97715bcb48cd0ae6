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

The round is three parts with fixed outputs, composed by `round_step`:
the users' weighted clipped sum and new embeddings (`users_step`), the
Gaussian release of the sum (`gaussian_release`), and its post-processing,
the division by q W and phi's step (`normalize`, `phi_step`); the run's
constants travel together (`RoundConstants`). The paper's sign (Delta =
theta^K - theta, phi <- phi - lambda grad) would move phi against the users'
progress; with pFedHN's code's, phi and v descend on the users' losses.

The estimator is TF Privacy's `NormalizedQuery(GaussianSumQuery(max_w S,
z max_w S), denominator=q W)`: its records w_u Clip(g_u, S) have norm at most
max_w S (Lemma 3.1; max_w is the largest w_u over *all* users, a public
constant, since the bound must hold for any user that could be added), so
its noise after normalisation has stddev z max_w S / (q W), eq. (4). As in
FedHDP (`group_aggregation`), the Gaussian is drawn with the query's stddev
by `tf.random.stateless_normal` from a key in the server state: secret unless
the run was given a `mechanism_seed`, and exact on resume. Noiseless (the
paper's baseline): the same estimator without clipping or noise. pFedHN: one
user per step, g_u unclipped, unweighted (`denominator` 1, `max_weight` 1).
"""

import dataclasses
from typing import NamedTuple, Sequence

import tensorflow as tf
import tensorflow_privacy as tfp

from tff_hdp import models
from tff_hdp.privacy import mechanism_key
from tff_hdp.udp import hypernetwork


@dataclasses.dataclass(frozen=True)
class RoundConstants:
  """The public constants of a run's rounds.

  Attributes:
    clip: S, the clip norm of each user's hypernetwork gradient.
    noise_multiplier: z, the mechanism's.
    max_weight: max_u w_u over all users (1 for pFedHN).
    denominator: q W (1 for pFedHN).
    local_learning_rate: eta.
    hyper_learning_rate: lambda.
    embedding_learning_rate: zeta.
    clip_and_noise: False for Noiseless and pFedHN.
  """
  clip: float
  noise_multiplier: float
  max_weight: float
  denominator: float
  local_learning_rate: float
  hyper_learning_rate: float
  embedding_learning_rate: float
  clip_and_noise: bool = True


class UserBatches(NamedTuple):
  """The sampled users' data and the K batches each takes.

  Attributes:
    x: [B, n_max, ...] each user's training examples, zero-padded.
    y: [B, n_max] their labels.
    indices: [K, B, b] the examples of each step's batch, per user.
    mask: [K, B, b] 1 for a real example of the batch, 0 for padding (a user
      with fewer than b examples uses all of them every step).
  """
  x: tf.Tensor
  y: tf.Tensor
  indices: tf.Tensor
  mask: tf.Tensor


class UsersStep(NamedTuple):
  """What a round's users compute before the noise (`users_step`).

  Attributes:
    total: Per phi tensor, sum_u w_u Clip((d theta_u/d phi)^T Delta_u, S).
    norms: [B] the unclipped VJPs' norms.
    embeddings: [B, e] the users' new embeddings.
  """
  total: list
  norms: tf.Tensor
  embeddings: tf.Tensor


class PhiStep(NamedTuple):
  """The release of a round's sum and phi's step from it (`phi_step`).

  Attributes:
    phi: The new phi.
    noise_stddev: The noise stddev after normalisation.
    release: Per phi tensor, the noised sum before the division by q W.
  """
  phi: list
  noise_stddev: tf.Tensor
  release: list


class RoundResult(NamedTuple):
  """A round's outputs (`round_step`).

  Attributes:
    phi: The new phi.
    embeddings: [B, e] the sampled users' new embeddings.
    measurements: The round's noise stddev, users' weights (their maximum
      and sum), mean gradient norm and clipped fraction.
  """
  phi: list
  embeddings: tf.Tensor
  measurements: dict


def local_deltas(target: models.ModelSpec, thetas: Sequence[tf.Tensor],
                 x: tf.Tensor, y: tf.Tensor, indices: tf.Tensor,
                 mask: tf.Tensor, learning_rate: tf.Tensor) -> list[tf.Tensor]:
  """Every sampled user's K local SGD steps at once.

  Returns Delta_u = theta_u - theta_u^K per target tensor, [B, *shape].

  Args:
    target: The target network.
    thetas: Per target tensor, [B, *shape] the users' generated weights.
    x, y, indices, mask: As `UserBatches`.
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
    # user's kernel, batched) ran slower at CIFAR-10 scale (docs/udp.md,
    # "What is not here"), and a batched einsum FC NN no faster on the
    # digits.
    grads = tf.vectorized_map(batch_loss_gradient,
                              (weights, xb, yb, mask[k]))
    return k + 1, [w - learning_rate * g for w, g in zip(weights, grads)]

  thetas = [tf.convert_to_tensor(t) for t in thetas]
  _, final = tf.while_loop(lambda k, _: k < tf.shape(indices)[0], step,
                           (tf.constant(0), thetas))
  return [t - f for t, f in zip(thetas, final)]


def estimator_query(constants: RoundConstants) -> tfp.NormalizedQuery:
  """The weighted fixed-denominator estimator with its Gaussian noise."""
  bound = constants.max_weight * constants.clip
  return tfp.NormalizedQuery(
      tfp.GaussianSumQuery(l2_norm_clip=bound,
                           stddev=constants.noise_multiplier * bound),
      denominator=constants.denominator)


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


def gaussian_release(total: Sequence[tf.Tensor], key: tf.Tensor,
                     constants: RoundConstants) -> list[tf.Tensor]:
  """sum_u w_u Clip(g_u, S) + N(0, (z max_w S)^2 I): the released sum.

  The noise of phi tensor i is drawn from `key` folded with i. Noiseless:
  the sum itself.
  """
  if not constants.clip_and_noise:
    return list(total)
  state = estimator_query(constants).initial_global_state()
  stddev = tf.cast(state.numerator_state.stddev, tf.float32)
  sums = []
  for i, t in enumerate(total):
    seed = mechanism_key.fold_in(key, i)
    noise = tf.random.stateless_normal(tf.shape(t), seed=seed, stddev=stddev)
    sums.append(t + noise)
  return sums


def normalize(release: Sequence[tf.Tensor], constants: RoundConstants):
  """grad_phi = release / (q W), post-processing of the release.

  Returns:
    (grad_phi per phi tensor, the noise stddev after normalisation).
  """
  if not constants.clip_and_noise:
    return [s / constants.denominator for s in release], tf.constant(0.0)
  state = estimator_query(constants).initial_global_state()
  stddev = tf.cast(state.numerator_state.stddev, tf.float32)
  denominator = tf.cast(state.denominator, tf.float32)
  return [s / denominator for s in release], stddev / denominator


def users_step(net: hypernetwork.HyperNetwork, phi: Sequence[tf.Tensor],
               embeddings: tf.Tensor, batches: UserBatches,
               user_weights: tf.Tensor,
               constants: RoundConstants) -> UsersStep:
  """What a round's users compute before the noise (all or some of them).

  Each user u gets theta_u = h(phi, v_u), takes its K local steps, and
  contributes w_u Clip((d theta_u/d phi)^T Delta_u, S) to the sum and
  v_u - zeta (d theta_u/d v_u)^T Delta_u as its new embedding. The sum over
  a cohort is the sum of the sums over any split of it (up to float
  summation order), which is what lets TFF workers each run a slice
  (`tff_hdp.udp.distributed`).

  Args:
    As `round_step`.
  """
  thetas = net.generate(phi, embeddings)
  deltas = local_deltas(net.target, thetas, *batches,
                        constants.local_learning_rate)
  total, norms = cohort_gradient(net, phi, embeddings, deltas, user_weights,
                                 clip=constants.clip,
                                 clip_and_noise=constants.clip_and_noise)
  embedding_grads = net.embedding_vjps(phi, embeddings, deltas)
  return UsersStep(
      total, norms,
      embeddings - constants.embedding_learning_rate * embedding_grads)


def phi_step(phi: Sequence[tf.Tensor], total: Sequence[tf.Tensor],
             key: tf.Tensor, constants: RoundConstants) -> PhiStep:
  """phi <- phi - lambda grad_phi from a weighted clipped sum: its Gaussian
  release (`gaussian_release`), then the division by q W and the step."""
  release = gaussian_release(total, key, constants)
  gradient, stddev = normalize(release, constants)
  new_phi = [p - constants.hyper_learning_rate * g
             for p, g in zip(phi, gradient)]
  return PhiStep(new_phi, stddev, release)


def round_result(users: UsersStep, step: PhiStep) -> RoundResult:
  """The round's new phi and embeddings, and its measurements.

  The measurements are published, so they hold only what the mechanism
  released: the noise stddev (a constant of the run). Nothing computed
  from the sampled users before the noise (their number, weights, gradient
  norms or clipped fraction), which no accountant covers.
  """
  return RoundResult(step.phi, users.embeddings,
                     {'noise_stddev': step.noise_stddev})


def round_step(net: hypernetwork.HyperNetwork, phi: Sequence[tf.Tensor],
               embeddings: tf.Tensor, batches: UserBatches,
               user_weights: tf.Tensor, key: tf.Tensor,
               constants: RoundConstants) -> RoundResult:
  """One round for the sampled users: `users_step`, then `phi_step`.

  Args:
    net: The hypernetwork.
    phi: Its weights.
    embeddings: [B, e] the sampled users' v_u.
    batches: Their data and K batches.
    user_weights: [B] w_u.
    key: This round's stateless noise key.
    constants: The run's.
  """
  users = users_step(net, phi, embeddings, batches, user_weights, constants)
  step = phi_step(phi, users.total, key, constants)
  return round_result(users, step)


def empty_round_step(phi: Sequence[tf.Tensor], key: tf.Tensor,
                     constants: RoundConstants) -> PhiStep:
  """The step of phi in a round in which no user was sampled.

  The estimator is still released: its sum is empty, and the noise is added
  all the same. Skipping the round (or publishing other measurements) would
  tell whoever sees phi that nobody was sampled.
  """
  return phi_step(phi, [tf.zeros_like(p) for p in phi], key, constants)
