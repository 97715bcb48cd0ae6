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
"""The models of `models` run for a whole cohort at once (paper 001, Table 6).

A batched model takes K clients' weights stacked on a leading axis and one
batch per client,

    forward(weights [K, ...], x [K, B, ...], seeds [K, 2] or None)
        -> logits [K, B, C],

and computes, client by client, exactly what `ModelSpec.forward(weights[k],
x[k], training, seeds[k])` computes, with the same operations batched over
the client axis:

- FC NN: each dense layer is one batched matmul [K, B, d] @ [K, d, h]
  (`_fc_forward` of `models`, with a client axis); its input layer's weight
  gradient reads a transposed copy of the inputs that `prepare` makes.
- CNN: each convolution is ONE grouped convolution whose groups are the
  clients ([B, H, W, K*C] conv [k, k, C, K*O]); max-pooling acts per
  channel and is unchanged. Its gradient needs oneDNN (CPU; `tff_hdp/
  __init__.py` asks for it) or cuDNN (GPU); where it is missing all the
  same (`grouped_conv_has_gradient`), each convolution is one batched
  matmul over the clients' image patches (`im2col_conv2d`): the same
  numbers up to float32 round-off, slower.
- Dropout multiplies by per-client masks drawn by `models`' own dropout with
  the client's seed, so client k's masks are bit-identical to those of
  `ModelSpec.forward` with seeds[k], a smaller last batch's included.

`masked_loss` is `models.loss_fn` per client over the real examples of a
padded batch. Any other `ModelSpec` falls back to mapping its own `forward`
over the clients (correct, not fast). Why these forms, and what they cost:
docs/performance.md, "How the direct backend runs a cohort".
"""

import functools
import math
from typing import Callable, NamedTuple, Optional, Sequence

import tensorflow as tf

from tff_hdp import models

# (rate, salt) of the CNN's two dropout layers, as in `models._cnn_forward`.
_CNN_DROPOUT = ((0.25, 1), (0.5, 2))


class BatchedModel(NamedTuple):
  """A model evaluated for K clients at once.

  Attributes:
    spec: The per-client model.
    forward: `forward(weights, x, seeds) -> logits [K, B, C]`; `seeds` is an
      int32 [K, 2] tensor of per-client dropout seeds while training, None
      otherwise.
    uses_seeds: Whether training draws randomness (dropout); if not, callers
      may pass `seeds=None` while training too.
    prepare: Optional; maps inputs [R, B, ...] to what `forward` takes (a
      tensor or a tuple of tensors with leading axis R), once per round, so
      that a step slices its batches' rows out of each. None: identity.
    first_examples: Optional; `first_examples(inputs, b)` keeps the first b
      examples of each client's batch in what `prepare` made. None: every
      tensor's axis 1.
  """

  spec: models.ModelSpec
  forward: Callable[..., tf.Tensor]
  uses_seeds: bool
  prepare: Optional[Callable[[tf.Tensor], object]] = None
  first_examples: Optional[Callable[[object, tf.Tensor], object]] = None

  def take_examples(self, inputs, count: tf.Tensor):
    """The first `count` examples of each client's batch in `inputs`."""
    if self.first_examples is not None:
      return self.first_examples(inputs, count)
    return tf.nest.map_structure(lambda v: v[:, :count], inputs)


def masked_loss(logits: tf.Tensor, labels: tf.Tensor,
                mask: tf.Tensor) -> tf.Tensor:
  """Per client, mean cross-entropy over the real examples of its batch.

  Args:
    logits: [K, B, C].
    labels: [K, B].
    mask: [K, B], 1 for a real example, 0 for padding.

  Returns:
    [K]: `models.loss_fn` of each client's real examples (0 if none).
  """
  cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.cast(labels, tf.int32), logits=logits)
  return tf.math.divide_no_nan(
      tf.reduce_sum(cross_entropy * mask, axis=1), tf.reduce_sum(mask, axis=1))


def _flatten_examples(x: tf.Tensor) -> tf.Tensor:
  """[K, B, ...] -> [K, B, d] float32."""
  x = tf.cast(x, tf.float32)
  return tf.reshape(x, [tf.shape(x)[0], tf.shape(x)[1], -1])


def _fc_prepare(x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
  """Flattened inputs [R, B, d] and their transposes [R, d, B]."""
  x = _flatten_examples(x)
  return x, tf.transpose(x, [0, 2, 1])


def _fc_first_examples(inputs, count):
  """`_fc_prepare`'s (x [K, B, d], x^T [K, d, B]) for the first examples."""
  x, x_transposed = inputs
  return x[:, :count], x_transposed[:, :, :count]


def _input_layer(x: tf.Tensor, x_transposed: tf.Tensor,
                 kernel: tf.Tensor) -> tf.Tensor:
  """x @ kernel; its gradient x^T dz reads `x_transposed` (= x^T).

  The inputs are data: no gradient flows to them.
  """

  @tf.custom_gradient
  def matmul(w):

    def grad(dz):
      return tf.matmul(x_transposed, dz)

    return tf.matmul(x, w), grad

  return matmul(kernel)


def _fc_forward(weights, x, seeds):
  del seeds  # No dropout in the FC NN.
  w1, b1, w2, b2 = weights
  if isinstance(x, tuple):  # From `_fc_prepare`.
    pre_activation = _input_layer(x[0], x[1], w1)
  else:
    pre_activation = tf.matmul(_flatten_examples(x), w1)
  hidden = tf.nn.relu(pre_activation + b1[:, tf.newaxis, :])
  return tf.matmul(hidden, w2) + b2[:, tf.newaxis, :]


def grouped_conv2d(x: tf.Tensor, kernels: tf.Tensor) -> tf.Tensor:
  """Per client k, conv2d(x[..., k, :], kernels[k]) with 'SAME' padding.

  Args:
    x: [B, H, W, K * C], client k's channels at k*C..(k+1)*C-1.
    kernels: [K, kh, kw, C, O].

  Returns:
    [B, H, W, K * O], client k's channels at k*O..(k+1)*O-1.
  """
  shape = tf.shape(kernels)
  filters = tf.transpose(kernels, [1, 2, 3, 0, 4])  # [kh, kw, C, K, O]
  filters = tf.reshape(
      filters, [shape[1], shape[2], kernels.shape[3], shape[0] * shape[4]])
  # conv2d infers groups = (K*C) / C = K from the channel counts.
  return tf.nn.conv2d(x, filters, strides=1, padding='SAME')


def _clients_to_channels(x: tf.Tensor) -> tf.Tensor:
  """[K, B, H, W, C] -> [B, H, W, K*C]."""
  s = tf.shape(x)
  x = tf.transpose(x, [1, 2, 3, 0, 4])
  return tf.reshape(x, [s[1], s[2], s[3], s[0] * x.shape[-1]])


def _channels_to_clients(x: tf.Tensor, num_clients: tf.Tensor,
                         channels: int) -> tf.Tensor:
  """[B, H, W, K*C] -> [K, B, H, W, C]."""
  s = tf.shape(x)
  x = tf.reshape(x, [s[0], s[1], s[2], num_clients, channels])
  return tf.transpose(x, [3, 0, 1, 2, 4])


def _grouped_conv_layers(x, c1, cb1, c2, cb2):
  """The CNN's two conv+pool layers as grouped convolutions.

  [K, B, H, W, 1] -> [K, B, H/4, W/4, 32]
  """
  num_clients = tf.shape(c1)[0]
  x = _clients_to_channels(x)
  x = tf.nn.relu(grouped_conv2d(x, c1) + tf.reshape(cb1, [-1]))
  x = tf.nn.max_pool2d(x, ksize=2, strides=2, padding='VALID')
  x = tf.nn.relu(grouped_conv2d(x, c2) + tf.reshape(cb2, [-1]))
  x = tf.nn.max_pool2d(x, ksize=2, strides=2, padding='VALID')
  return _channels_to_clients(x, num_clients, c2.shape[-1])


def im2col_conv2d(x: tf.Tensor, kernels: tf.Tensor) -> tf.Tensor:
  """Per client k, conv2d(x[k], kernels[k]) with 'SAME' padding.

  One batched matmul [K, B*H*W, kh*kw*C] @ [K, kh*kw*C, O] over each
  client's image patches (`tf.image.extract_patches` orders a patch's
  values row, column, channel: the order of a [kh, kw, C, O] kernel's
  reshape to [kh*kw*C, O]).

  Args:
    x: [K, B, H, W, C].
    kernels: [K, kh, kw, C, O].

  Returns:
    [K, B, H, W, O].
  """
  _, kh, kw, c, o = kernels.shape
  s = tf.shape(x)
  patches = tf.image.extract_patches(
      tf.reshape(x, [-1, x.shape[2], x.shape[3], c]), sizes=[1, kh, kw, 1],
      strides=[1, 1, 1, 1], rates=[1, 1, 1, 1], padding='SAME')
  out = tf.matmul(tf.reshape(patches, [s[0], -1, kh * kw * c]),
                  tf.reshape(kernels, [s[0], kh * kw * c, o]))
  return tf.reshape(out, [s[0], s[1], x.shape[2], x.shape[3], o])


def _pool_each(x: tf.Tensor) -> tf.Tensor:
  """2x2 max-pooling of [K, B, H, W, C]."""
  s = tf.shape(x)
  pooled = tf.nn.max_pool2d(tf.reshape(x, [-1, x.shape[2], x.shape[3],
                                           x.shape[4]]),
                            ksize=2, strides=2, padding='VALID')
  return tf.reshape(pooled, [s[0], s[1], x.shape[2] // 2, x.shape[3] // 2,
                             x.shape[4]])


def _im2col_conv_layers(x, c1, cb1, c2, cb2):
  """`_grouped_conv_layers` with each convolution an `im2col_conv2d`."""
  x = tf.nn.relu(im2col_conv2d(x, c1) + cb1[:, None, None, None, :])
  x = _pool_each(x)
  x = tf.nn.relu(im2col_conv2d(x, c2) + cb2[:, None, None, None, :])
  return _pool_each(x)


def cnn_dropout_masks(seed: tf.Tensor, batch_size: tf.Tensor,
                      pooled_shape: Sequence[int],
                      hidden: int) -> tuple[tf.Tensor, tf.Tensor]:
  """One client's CNN dropout masks (scale or 0 per unit) for seed `seed`.

  `models`' dropout applied to ones: x * mask then equals `models`' dropout
  of x with the same seed, bit for bit (both are x * 1/(1 - rate) where the
  uniform draw is >= rate, else 0).
  """
  (rate1, salt1), (rate2, salt2) = _CNN_DROPOUT
  ones1 = tf.ones(tf.concat([[batch_size], pooled_shape], 0))
  ones2 = tf.ones([batch_size, hidden])
  dropout = models._dropout  # pylint: disable=protected-access
  return (dropout(ones1, rate1, True, seed, salt1),
          dropout(ones2, rate2, True, seed, salt2))


def _cnn_forward(conv_layers, weights, x, seeds):
  c1, cb1, c2, cb2, w1, b1, w2, b2 = weights
  num_clients = tf.shape(c1)[0]
  x = tf.cast(x, tf.float32)
  if x.shape.rank == 4:  # [K, B, H, W] -> one input channel.
    x = x[..., tf.newaxis]
  batch_size = x.shape[1] or tf.shape(x)[1]
  pooled_shape = (x.shape[2] // 4, x.shape[3] // 4, c2.shape[-1])
  x = conv_layers(x, c1, cb1, c2, cb2)  # [K, B, h, w, 32]
  if seeds is not None:
    hidden = w1.shape[-1]
    mask1, mask2 = tf.map_fn(
        lambda s: cnn_dropout_masks(s, batch_size, pooled_shape, hidden),
        seeds,
        fn_output_signature=(tf.float32, tf.float32))
    x = x * mask1
  x = tf.reshape(x, [num_clients, batch_size, w1.shape[1]])
  x = tf.nn.relu(tf.matmul(x, w1) + b1[:, tf.newaxis, :])
  if seeds is not None:
    x = x * mask2
  return tf.matmul(x, w2) + b2[:, tf.newaxis, :]


# The batched CNN with each form of its convolutions (module-level functions,
# so that backends built alike share one traced client-work function).
_CNN_FORWARDS = {
    'grouped': functools.partial(_cnn_forward, _grouped_conv_layers),
    'im2col': functools.partial(_cnn_forward, _im2col_conv_layers),
}


@functools.lru_cache(maxsize=None)
def grouped_conv_has_gradient() -> bool:
  """Whether the grouped-convolution CNN has a gradient on this device.

  Probed once on a tiny cohort (2 clients, 8x8 inputs), through the same
  layers and with the shapes left unknown as the backends trace them:
  oneDNN and cuDNN compute it; TensorFlow's own CPU kernels fail when the
  graph runs ("Gradients for grouped convolutions are not supported on
  CPU", or a misread filter size). A lone grouped convolution can pass
  where the layers fail, so the probe runs the layers.
  """
  spec = models.cnn_model((8, 8), num_classes=2)

  @tf.function(input_signature=[weights_spec(spec, (None,)),
                                tf.TensorSpec([None, None, 8, 8, 1])])
  def gradients(weights, x):
    with tf.GradientTape() as tape:
      tape.watch(weights)
      loss = tf.reduce_sum(tf.square(_grouped_conv_layers(x, *weights[:4])))
    return tape.gradient(loss, weights[:4])

  weights = [tf.ones((2,) + tuple(shape)) for shape in spec.shapes]
  try:
    gradients(weights, tf.ones([2, 2, 8, 8, 1]))
  except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError):
    return False
  return True


def default_cnn_conv() -> str:
  """The batched CNN's convolutions here: 'grouped' if they have a gradient
  on this device, else 'im2col'."""
  return 'grouped' if grouped_conv_has_gradient() else 'im2col'


# One per model, like `_CNN_FORWARDS`: backends of equal models (e.g.
# HDP-Bench's runs of cnn5, one after another in a process) share one
# traced client-work function.
@functools.lru_cache(maxsize=None)
def _mapped_forward(spec: models.ModelSpec):
  """Any model: its own forward, mapped over the clients (slow, exact)."""

  def forward(weights, x, seeds):
    if seeds is None:
      return tf.map_fn(lambda a: spec.apply(a[0], a[1]), (list(weights), x),
                       fn_output_signature=tf.float32)
    return tf.map_fn(lambda a: spec.apply(a[0], a[1], True, a[2]),
                     (list(weights), x, seeds),
                     fn_output_signature=tf.float32)

  return forward


def batched_model(spec: models.ModelSpec,
                  cnn_conv: Optional[str] = None) -> BatchedModel:
  """The batched form of `spec`: fast for 'fc' and 'cnn', mapped otherwise.

  Args:
    spec: The per-client model.
    cnn_conv: The CNN's convolutions, 'grouped' or 'im2col' (same results);
      default `default_cnn_conv()`.
  """
  if spec.name == 'fc' and spec.forward is models.fc_model().forward:
    return BatchedModel(spec, _fc_forward, uses_seeds=False,
                        prepare=_fc_prepare,
                        first_examples=_fc_first_examples)
  if spec.name == 'cnn' and spec.forward is models.cnn_model().forward:
    conv = cnn_conv or default_cnn_conv()
    if conv not in _CNN_FORWARDS:
      raise ValueError(f'cnn_conv must be one of {sorted(_CNN_FORWARDS)}, '
                       f'got {conv!r}')
    return BatchedModel(spec, _CNN_FORWARDS[conv], uses_seeds=True)
  return BatchedModel(spec, _mapped_forward(spec), uses_seeds=True)


def activation_floats(spec: models.ModelSpec) -> int:
  """Floats of one example's input and layer outputs (a memory estimate)."""
  d = math.prod(spec.input_shape)
  if spec.name == 'cnn':
    h, w = spec.input_shape[:2]
    c1, c2 = spec.shapes[0][-1], spec.shapes[2][-1]
    return (d + h * w * c1 + (h // 2) * (w // 2) * (c1 + c2) +
            (h // 4) * (w // 4) * c2 + spec.shapes[4][-1] + spec.num_classes)
  if spec.name == 'fc':
    return d + spec.shapes[0][-1] + spec.num_classes
  return 16 * d  # Unknown layers: a generous guess.


def fold_in_each(seeds: tf.Tensor, data: tf.Tensor) -> tf.Tensor:
  """Per row k, `stateless_fold_in(seeds[k], data)` (int32 [K, 2])."""
  data = tf.convert_to_tensor(data, tf.int32)
  return tf.map_fn(
      lambda s: tf.random.experimental.stateless_fold_in(s, data),
      seeds, fn_output_signature=tf.int32)


def fold_in_rows(seed: tf.Tensor, data: tf.Tensor) -> tf.Tensor:
  """Per k, `stateless_fold_in(seed, data[k])` (int32 [K, 2])."""
  return tf.map_fn(
      lambda d: tf.random.experimental.stateless_fold_in(seed, d),
      tf.convert_to_tensor(data, tf.int32), fn_output_signature=tf.int32)


def weights_spec(spec: models.ModelSpec,
                 leading: Optional[Sequence[Optional[int]]] = (None,)
                 ) -> list[tf.TensorSpec]:
  """TensorSpecs of `spec`'s weights with `leading` axes in front."""
  return [tf.TensorSpec(tuple(leading) + tuple(s), tf.float32)
          for s in spec.shapes]
