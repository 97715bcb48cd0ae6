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
"""One client's local training with DP-SGD (paper 003, eqs. (1) and (6)).

Client i runs E_i = K_i ceil(N_i / b_i) steps from the global model theta^e:

  g~_i = (1/b_i) [ sum_{j in B} clip_c(grad f(theta; x_j)) + N(0, c^2 z_i^2 I) ],
  theta <- theta - eta_l g~_i,                                          (1), (6)

and returns Delta theta_i = theta_{E_i} - theta^e. The mechanism is TF
Privacy's `GaussianSumQuery(l2_norm_clip=c, stddev=c z_i)`: the records are
clipped to its bound by its `preprocess_record` formula, applied to the whole
batch at once (`clip_factors`), the noise stddev is read from its global
state, and the sum is normalised by b_i as `NormalizedQuery` does. As in
`tff_hdp.fedhdp.group_aggregation`, the Gaussian is drawn with
`tf.random.stateless_normal` from a key (the query's own draw uses TF's
stateful generator, which cannot be seeded reproducibly inside TFF), so a
seed reproduces a run bit for bit on every execution path. Per-example norms
and the clipped sum come from one batched pass (`tff_hdp.per_example`).

Batches: `poisson=True` (default, as the authors' Opacus code): every example
joins a step's batch independently with probability q_i = b_i / N_i, and the
sum is still divided by b_i (the expected size), which is what the
subsampled-Gaussian accounting covers. `poisson=False`: each epoch is a
fresh shuffle cut into ceil(N_i / b_i) batches of b_i (the last one
shorter), whose privacy the Poisson accounting only approximates
(docs/privacy.md).

With `noise_multiplier=None` the client is non-private: plain minibatch SGD
on shuffled batches of b_i (mean gradient, no clipping, no noise), the
utility ceiling of paper 003's comparisons. `tff_hdp.robust_hdp.cohort` runs
this round for a whole cohort in one computation, from the same keys.
"""

import math
from typing import NamedTuple, Optional, Sequence

import tensorflow as tf
import tensorflow_privacy as tfp

from tff_hdp import models
from tff_hdp import per_example
from tff_hdp.privacy import mechanism_key


class DpSgdSettings(NamedTuple):
  """Hyperparameters shared by all clients (paper 003's code defaults).

  Attributes:
    clip: c > 0, the per-example L2 clip norm (3.0).
    learning_rate: eta_l > 0 (0.1).
    local_epochs: K >= 1 (1).
    poisson: Poisson-sampled batches (True) or fixed-size shuffled ones.
  """
  clip: float = 3.0
  learning_rate: float = 0.1
  local_epochs: int = 1
  poisson: bool = True


def check_settings(settings: DpSgdSettings) -> None:
  if not settings.clip > 0:
    raise ValueError(f'clip must be > 0, got {settings.clip}')
  if not settings.learning_rate > 0:
    raise ValueError(
        f'learning_rate must be > 0, got {settings.learning_rate}')
  if settings.local_epochs < 1:
    raise ValueError(
        f'local_epochs must be >= 1, got {settings.local_epochs}')


def steps_per_round(num_examples: int, batch_size: int,
                    local_epochs: int) -> int:
  """E_i = K_i ceil(N_i / b_i), the DP-SGD steps of one round."""
  if num_examples < 1 or batch_size < 1:
    raise ValueError('num_examples and batch_size must be >= 1, got '
                     f'{num_examples} and {batch_size}')
  return local_epochs * math.ceil(num_examples / batch_size)


def gaussian_query(clip: float, noise_multiplier: float) -> tfp.DPQuery:
  """The per-step mechanism: sum of records clipped to c, noise c z."""
  return tfp.GaussianSumQuery(l2_norm_clip=clip, stddev=clip * noise_multiplier)


def per_example_gradients(spec: models.ModelSpec,
                          weights: Sequence[tf.Tensor], x: tf.Tensor,
                          y: tf.Tensor) -> list[tf.Tensor]:
  """d loss(x_j, y_j) / d weights for every j, stacked on a leading axis
  (`tff_hdp.per_example`)."""
  return per_example.per_example_gradients(spec, weights, x, y)


def clip_factors(query: tfp.GaussianSumQuery, global_state,
                 norms: tf.Tensor) -> tf.Tensor:
  """[B] c min(1/||g_j||, 1/c): what clips record j to the query's c.

  `GaussianSumQuery.preprocess_record` clips one record with
  `tf.clip_by_global_norm`, which is g * c min(1/||g||, 1/c), c the query's
  sample params (read here); applied through the norms to the whole batch
  at once. tests/robust_hdp/test_dp_sgd.py checks it against
  `preprocess_record`, record by record.
  """
  clip = tf.cast(query.derive_sample_params(global_state), tf.float32)
  return clip * tf.minimum(1.0 / norms, 1.0 / clip)  # 1 where ||g_j|| <= c.


def record_norms(records: Sequence[tf.Tensor]) -> tf.Tensor:
  """[B] the global L2 norm of each record (leading axis) of `records`."""
  return tf.sqrt(tf.add_n([
      tf.reduce_sum(tf.reshape(tf.square(g), [tf.shape(g)[0], -1]), 1)
      for g in records]))


def clipped_sum(query: tfp.GaussianSumQuery, global_state,
                grads: Sequence[tf.Tensor]) -> list[tf.Tensor]:
  """sum_j clip_c(g_j) over the leading axis, with `query`'s record clip."""
  scale = clip_factors(query, global_state, record_norms(grads))
  return [tf.tensordot(scale, g, axes=1) for g in grads]


# Every key of a client's round derives from its key by
# `mechanism_key.fold_in`, which keeps the key's 128 bits (TensorFlow's
# `stateless_fold_in` keeps 32 of them for int32 data): knowing a step, an
# epoch or a tensor's index helps no one guess the draws.


def noise_key(client_key: tf.Tensor, step) -> tf.Tensor:
  """The key of step `step`'s noise draw."""
  return mechanism_key.fold_in(mechanism_key.fold_in(client_key, step), 1)


def poisson_key(client_key: tf.Tensor, step) -> tf.Tensor:
  """The key of step `step`'s Poisson batch (its uniform draws)."""
  return mechanism_key.fold_in(mechanism_key.fold_in(client_key, step), 0)


def shuffle_key(client_key: tf.Tensor, epoch) -> tf.Tensor:
  """The key of epoch `epoch`'s shuffle (fixed-size batches)."""
  return mechanism_key.fold_in(client_key, -1 - epoch)


def gaussian_noise(shapes: Sequence, stddev: tf.Tensor,
                   key: tf.Tensor) -> list[tf.Tensor]:
  """N(0, stddev^2 I) per shape, tensor i's draw from fold_in(key, i)."""
  return [tf.random.stateless_normal(
      shape, seed=mechanism_key.fold_in(key, i), stddev=stddev)
          for i, shape in enumerate(shapes)]


def noised_sum(summed: Sequence[tf.Tensor], stddev: tf.Tensor,
               key: tf.Tensor) -> list[tf.Tensor]:
  """sum + N(0, stddev^2 I), the step's release before eq. (1)'s division;
  tensor i's draw from fold_in(key, i) (`gaussian_noise`)."""
  noise = gaussian_noise([tf.shape(s) for s in summed], stddev, key)
  return [s + e for s, e in zip(summed, noise)]


def noised_average(summed: Sequence[tf.Tensor], stddev: tf.Tensor,
                   denominator: tf.Tensor, key: tf.Tensor) -> list[tf.Tensor]:
  """(sum + N(0, stddev^2 I)) / denominator, eq. (1)."""
  return [s / denominator for s in noised_sum(summed, stddev, key)]


def batch_clipped_sum(spec: models.ModelSpec, weights: Sequence[tf.Tensor],
                      xb: tf.Tensor, yb: tf.Tensor, query,
                      global_state) -> list[tf.Tensor]:
  """sum_j clip_c(g_j) over one batch's per-example gradients, per weight
  tensor (zeros for an empty batch)."""
  def batch_sum():
    grads = per_example.batch_gradients(spec, weights, xb, yb)
    scale = clip_factors(query, global_state,
                         tf.sqrt(grads.squared_norms()))
    return grads.weighted_sum(scale)

  # A Poisson batch is empty with probability ~e^-b_i per step, and TF's
  # oneDNN convolution (on by default, tff_hdp/__init__.py) fails on an
  # empty batch; its clipped sum is zero, and the step releases the noise.
  return tf.cond(tf.size(yb) > 0, batch_sum,
                 lambda: [tf.zeros_like(w) for w in weights])


def private_gradient(spec: models.ModelSpec, weights: Sequence[tf.Tensor],
                     xb: tf.Tensor, yb: tf.Tensor, query, global_state,
                     denominator: tf.Tensor,
                     key: tf.Tensor) -> list[tf.Tensor]:
  """g~ of eq. (1) on one batch: its per-example gradients clipped, summed,
  noised and divided by b_i.

  Args:
    spec, weights: The model.
    xb, yb: The batch.
    query, global_state: The step's `gaussian_query` and its state.
    denominator: b_i.
    key: The step's noise key.

  Returns:
    g~ per weight tensor. An audit composes the same parts with its canary
    records (`tff_hdp.robust_hdp.audit.audited_gradient`).
  """
  summed = batch_clipped_sum(spec, weights, xb, yb, query, global_state)
  stddev = tf.cast(global_state.stddev, tf.float32)
  return noised_average(summed, stddev, denominator, key)


def batch_indices(step, num_examples, batch_size, steps_per_epoch, key,
                  poisson: bool):
  """Indices of the examples in step `step`'s batch (`key`: the client's)."""
  if poisson:
    rate = tf.cast(batch_size, tf.float32) / tf.cast(num_examples, tf.float32)
    draw = tf.random.stateless_uniform([num_examples],
                                       seed=poisson_key(key, step))
    return tf.reshape(tf.where(draw < rate), [-1])
  epoch = step // steps_per_epoch
  k = step % steps_per_epoch
  order = tf.random.experimental.stateless_shuffle(
      tf.range(num_examples), seed=shuffle_key(key, epoch))
  start = k * batch_size
  return order[start:tf.minimum(start + batch_size, num_examples)]


def own_graph(fn):
  """`fn` as a function that TensorFlow optimises as a graph of its own and
  calls, not inlined into its caller's graph: for a loop's step.

  In a loop's body, the oneDNN rewrite of TensorFlow's graph
  (`MklLayoutRewritePass`) gives a MaxPoolGrad its oneDNN kernel only if it
  has already rewritten the forward MaxPool, and the loop's back edge
  leaves the order of its visits open: in most traces of a DP-SGD round,
  one of cnn5's two pooling gradients ran TensorFlow's generic kernel, some
  ten times slower (docs/performance.md). A step traced as a function of
  its own has no back edge; the call costs some tens of microseconds.
  Both kernels pass the gradient to the first maximum of a window, so the
  results do not change. Run eagerly (no graph, no loop), `fn` itself.
  """
  if tf.executing_eagerly():
    return fn
  return tf.function(fn, autograph=False,
                     experimental_attributes={'_noinline': True})


def client_update(spec: models.ModelSpec,
                  initial_weights: Sequence[tf.Tensor],
                  x: tf.Tensor,
                  y: tf.Tensor,
                  *,
                  batch_size: tf.Tensor,
                  noise_multiplier: Optional[tf.Tensor],
                  key: tf.Tensor,
                  settings: DpSgdSettings) -> list[tf.Tensor]:
  """Delta theta_i of one round of DP-SGD on (x, y) (eqs. (1), (6)).

  Args:
    spec: The model.
    initial_weights: theta^e.
    x, y: The client's N_i training examples.
    batch_size: b_i (a scalar int32 tensor; capped by the caller to N_i).
    noise_multiplier: z_i (scalar), or None for non-private SGD.
    key: int64 [2] mechanism key of this client and round
      (`mechanism_key`); step k's batch and noise come from keys folded
      from it (`poisson_key`, `shuffle_key`, `noise_key`).
    settings: c, eta_l, K and the batch sampling.

  Returns:
    theta_{E_i} - theta^e, a list like `initial_weights`.
  """
  weights0 = [tf.convert_to_tensor(w, tf.float32) for w in initial_weights]
  num_examples = tf.shape(y)[0]
  batch_size = tf.cast(batch_size, tf.int32)
  steps_per_epoch = (num_examples + batch_size - 1) // batch_size
  num_steps = settings.local_epochs * steps_per_epoch
  lr = tf.constant(settings.learning_rate, tf.float32)
  private = noise_multiplier is not None
  if private:
    query = gaussian_query(settings.clip,
                           tf.cast(noise_multiplier, tf.float32))
    global_state = query.initial_global_state()
  denominator = tf.cast(batch_size, tf.float32)

  @own_graph
  def step_fn(step, weights):
    idx = batch_indices(step, num_examples, batch_size, steps_per_epoch,
                        key, settings.poisson and private)
    xb, yb = tf.gather(x, idx), tf.gather(y, idx)
    if private:
      gradient = private_gradient(spec, weights, xb, yb, query, global_state,
                                  denominator, noise_key(key, step))
    else:
      with tf.GradientTape() as tape:
        tape.watch(weights)
        loss = models.loss_fn(spec.apply(weights, xb), yb)
      gradient = tape.gradient(loss, weights)
    return [w - lr * g for w, g in zip(weights, gradient)]

  _, weights = tf.while_loop(
      lambda step, _: step < num_steps,
      lambda step, weights: (step + 1, step_fn(step, weights)),
      (tf.constant(0, tf.int32), weights0))
  return [w - w0 for w, w0 in zip(weights, weights0)]
