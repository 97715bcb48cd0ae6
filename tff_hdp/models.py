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
"""The papers' models as pure functions of their weights (shared).

A model is a `ModelSpec`: the shapes of its weights, an initializer and a pure
`apply(weights, x, ...) -> logits`. Weights are plain lists of tensors, so the
client update, the personal-model store and a batched (vectorised) backend
all work on the same representation, with no Keras object per client.

- FC NN (non-IID MNIST, FMNIST): flatten 784 -> dense 50 ReLU -> dense 10.
- CNN (FEMNIST): conv 16 (same, ReLU) -> maxpool 2 -> conv 32 (same, ReLU) ->
  maxpool 2 -> dropout 0.25 -> flatten 1568 -> dense 128 ReLU -> dropout 0.5 ->
  dense 62. Table 6 gives no kernel size; we use 3x3, the usual choice.

Paper 003 (Robust-HDP), from its authors' code:
- CNN5 (MNIST, Fashion-MNIST): conv 5x5 16 (same, ReLU) -> maxpool 2 ->
  conv 5x5 32 (same, ReLU) -> maxpool 2 -> flatten 1568 -> dense 10.
- ResNet-18 (CIFAR-10): the CIFAR variant (3x3 stem, no max-pool, basic
  blocks [2, 2, 2, 2] of 64/128/256/512 channels, 1x1 projection shortcuts)
  with GroupNorm of 2 groups in place of BatchNorm, as the authors' code
  (BatchNorm's batch statistics would break per-example clipping);
  p = 11,173,962. Meant for a GPU: a DP-SGD step on CPU takes seconds.

Paper 004 (UDP-Alg), from pFedHN's code:
- LeNet (the target network the hypernetwork generates): conv 5x5 16 (valid,
  ReLU) -> maxpool 2 -> conv 5x5 32 (valid, ReLU) -> maxpool 2 -> dense 120
  ReLU -> dense 84 ReLU -> classes; p = 121,182 on CIFAR-10.

The softmax of Table 6 is folded into the loss (logits are returned).
Initialisation follows Keras' defaults: Glorot-uniform kernels, zero biases.
`metric_sums` and `metrics_from_sums` give a loss and an accuracy the way
TFF does, summed over clients before dividing.
"""

import collections
import dataclasses
import math
from typing import Callable, Optional, Sequence

import numpy as np
import tensorflow as tf

from tff_hdp import layers

Weights = list  # A list of tensors (or arrays), in `ModelSpec.shapes` order.


@dataclasses.dataclass(frozen=True)
class ModelSpec:
  """A model as shapes plus a pure forward function.

  Attributes:
    name: One of `MODELS`.
    input_shape: Shape of one example, e.g. (28, 28).
    num_classes: Number of output classes.
    shapes: Shapes of the weight tensors, in order.
    forward: `forward(weights, x, training, seed) -> logits`; `seed` is an
      int32 [2] tensor for dropout (only used when training).
  """

  name: str
  input_shape: tuple[int, ...]
  num_classes: int
  shapes: tuple[tuple[int, ...], ...]
  forward: Callable[..., tf.Tensor]
  ones: frozenset[int] = frozenset()  # Indices of weights that start at 1.
  # theta^0 of a model adapted from elsewhere (`as_model_spec`): `init`
  # returns it whatever the seed.
  initial_weights: Optional[tuple[np.ndarray, ...]] = dataclasses.field(
      default=None, compare=False, repr=False)

  @property
  def num_parameters(self) -> int:
    return sum(math.prod(s) for s in self.shapes)

  def init(self, seed: int) -> list[np.ndarray]:
    """Keras-default initial weights: Glorot-uniform kernels, zero biases
    (and norm offsets), norm scales (`ones`) at one; an adapted model's own
    `initial_weights` (copies) when it has them."""
    if self.initial_weights is not None:
      return [np.array(w, np.float32) for w in self.initial_weights]
    weights = []
    for i, shape in enumerate(self.shapes):
      if i in self.ones:
        weights.append(np.ones(shape, np.float32))
      elif len(shape) == 1:
        weights.append(np.zeros(shape, np.float32))
      else:
        init = tf.keras.initializers.GlorotUniform(seed=seed * 1000 + i)
        weights.append(init(shape, dtype=tf.float32).numpy())
    return weights

  def apply(self,
            weights: Sequence[tf.Tensor],
            x: tf.Tensor,
            training: bool = False,
            seed: Optional[tf.Tensor] = None) -> tf.Tensor:
    return self.forward(list(weights), x, training, seed)


def loss_fn(logits: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
  """Mean sparse categorical cross-entropy (the loss f_j of Algorithm 2)."""
  return tf.reduce_mean(
      tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=tf.cast(labels, tf.int32), logits=logits))


def _fc_forward(weights, x, training, seed):
  del training, seed  # No dropout in the FC NN.
  w1, b1, w2, b2 = weights
  x = tf.reshape(tf.cast(x, tf.float32), [tf.shape(x)[0], w1.shape[0]])
  hidden = tf.nn.relu(layers.dense(x, w1, b1))
  return layers.dense(hidden, w2, b2)


def _dropout(x, rate, training, seed, salt):
  if not training or seed is None:
    return x
  return tf.nn.experimental.stateless_dropout(
      x, rate=rate, seed=tf.random.experimental.stateless_fold_in(seed, salt))


def _images(x):
  """`x` as float32 NHWC (a channel axis added to [batch, h, w] inputs)."""
  x = tf.cast(x, tf.float32)
  if x.shape.rank == 3:
    x = x[..., tf.newaxis]
  return x


def _conv_pool_twice(x, c1, cb1, c2, cb2, padding):
  """Images `x` through (conv -> ReLU -> maxpool 2) x 2."""
  x = _images(x)
  for kernel, bias in ((c1, cb1), (c2, cb2)):
    x = tf.nn.relu(layers.conv2d(x, kernel, bias, padding=padding))
    x = tf.nn.max_pool2d(x, ksize=2, strides=2, padding='VALID')
  return x


def _channels(input_shape: Sequence[int]) -> int:
  """Input channels of one example of shape `input_shape` (1 if 2-D)."""
  return input_shape[2] if len(input_shape) == 3 else 1


def _cnn_forward(weights, x, training, seed):
  c1, cb1, c2, cb2, w1, b1, w2, b2 = weights
  x = _conv_pool_twice(x, c1, cb1, c2, cb2, padding='SAME')
  x = _dropout(x, 0.25, training, seed, 1)
  x = tf.reshape(x, [tf.shape(x)[0], w1.shape[0]])
  x = tf.nn.relu(layers.dense(x, w1, b1))
  x = _dropout(x, 0.5, training, seed, 2)
  return layers.dense(x, w2, b2)


def fc_model(input_shape: Sequence[int] = (28, 28),
             num_classes: int = 10,
             hidden: int = 50) -> ModelSpec:
  """The FC NN of Table 6 (input flattened, one hidden layer of 50 ReLU)."""
  d = math.prod(input_shape)
  return ModelSpec(
      name='fc',
      input_shape=tuple(input_shape),
      num_classes=num_classes,
      shapes=((d, hidden), (hidden,), (hidden, num_classes), (num_classes,)),
      forward=_fc_forward)


def cnn_model(input_shape: Sequence[int] = (28, 28),
              num_classes: int = 62,
              kernel_size: int = 3) -> ModelSpec:
  """The CNN of Table 6 (3x3 kernels; Table 6 does not give the size)."""
  h, w = input_shape[:2]
  flat = (h // 4) * (w // 4) * 32
  k = kernel_size
  return ModelSpec(
      name='cnn',
      input_shape=tuple(input_shape),
      num_classes=num_classes,
      shapes=((k, k, 1, 16), (16,), (k, k, 16, 32), (32,), (flat, 128),
              (128,), (128, num_classes), (num_classes,)),
      forward=_cnn_forward)


def _cnn5_forward(weights, x, training, seed):
  del training, seed  # No dropout.
  c1, cb1, c2, cb2, w, b = weights
  x = _conv_pool_twice(x, c1, cb1, c2, cb2, padding='SAME')
  x = tf.reshape(x, [tf.shape(x)[0], w.shape[0]])
  return layers.dense(x, w, b)


def cnn5_model(input_shape: Sequence[int] = (28, 28),
               num_classes: int = 10) -> ModelSpec:
  """The MNIST/FMNIST CNN of paper 003's code (Robust-HDP).

  conv 5x5 16 (padding 2) -> ReLU -> maxpool 2 -> conv 5x5 32 (padding 2) ->
  ReLU -> maxpool 2 -> dense -> classes: p = 28,938 on 28 x 28 inputs.
  """
  h, w = input_shape[:2]
  channels = _channels(input_shape)
  flat = (h // 4) * (w // 4) * 32
  return ModelSpec(
      name='cnn5',
      input_shape=tuple(input_shape),
      num_classes=num_classes,
      shapes=((5, 5, channels, 16), (16,), (5, 5, 16, 32), (32,),
              (flat, num_classes), (num_classes,)),
      forward=_cnn5_forward)


def _group_norm(x, gamma, beta, groups: int, epsilon: float = 1e-5):
  """GroupNorm (Wu and He, 2018) of NHWC `x`. Written out because Keras'
  `GroupNormalization` is a layer object, and models here are pure functions
  of their weights (the same formula as `torch.nn.GroupNorm`)."""
  shape = tf.shape(x)
  c = x.shape[-1]
  grouped = tf.reshape(x, [shape[0], shape[1], shape[2], groups, c // groups])
  mean, variance = tf.nn.moments(grouped, axes=[1, 2, 4], keepdims=True)
  grouped = (grouped - mean) * tf.math.rsqrt(variance + epsilon)
  return layers.scale_shift(tf.reshape(grouped, shape), gamma, beta)


RESNET18_STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))
NORM_GROUPS = 2


def _resnet18_layout(channels: int, num_classes: int):
  """(shapes, indices of the norm scales, block plan) of ResNet-18."""
  shapes, ones = [(3, 3, channels, 64)], set()

  def norm(c):
    ones.add(len(shapes))
    shapes.extend([(c,), (c,)])

  norm(64)
  plan = []  # Per block: (stride, has a projection shortcut).
  c_in = 64
  for c_out, stride in RESNET18_STAGES:
    for block_stride in (stride, 1):
      shapes.append((3, 3, c_in, c_out))
      norm(c_out)
      shapes.append((3, 3, c_out, c_out))
      norm(c_out)
      project = block_stride != 1 or c_in != c_out
      if project:
        shapes.append((1, 1, c_in, c_out))
        norm(c_out)
      plan.append((block_stride, project))
      c_in = c_out
  shapes.extend([(512, num_classes), (num_classes,)])
  return tuple(shapes), frozenset(ones), tuple(plan)


def _resnet18_forward(plan, weights, x, training, seed):
  del training, seed  # No dropout; GroupNorm has no batch statistics.
  it = iter(weights)

  def conv_norm(x, stride):
    kernel, gamma, beta = next(it), next(it), next(it)
    x = layers.conv2d(x, kernel, strides=stride, padding='SAME')
    return _group_norm(x, gamma, beta, NORM_GROUPS)

  x = tf.nn.relu(conv_norm(_images(x), 1))
  for stride, project in plan:
    out = tf.nn.relu(conv_norm(x, stride))
    out = conv_norm(out, 1)
    shortcut = conv_norm(x, stride) if project else x
    x = tf.nn.relu(out + shortcut)
  x = tf.reduce_mean(x, axis=[1, 2])  # Global average pool (4 x 4 on CIFAR).
  w, b = next(it), next(it)
  return layers.dense(x, w, b)


def resnet18_model(input_shape: Sequence[int] = (32, 32, 3),
                   num_classes: int = 10) -> ModelSpec:
  """ResNet-18 with GroupNorm(2) for CIFAR-10 (paper 003's code)."""
  channels = _channels(input_shape)
  shapes, ones, plan = _resnet18_layout(channels, num_classes)
  return ModelSpec(
      name='resnet18',
      input_shape=tuple(input_shape),
      num_classes=num_classes,
      shapes=shapes,
      forward=lambda *args: _resnet18_forward(plan, *args),
      ones=ones)


def _lenet_forward(weights, x, training, seed):
  del training, seed  # No dropout.
  c1, cb1, c2, cb2, w1, b1, w2, b2, w3, b3 = weights
  x = _conv_pool_twice(x, c1, cb1, c2, cb2, padding='VALID')
  x = tf.reshape(x, [tf.shape(x)[0], w1.shape[0]])
  x = tf.nn.relu(layers.dense(x, w1, b1))
  x = tf.nn.relu(layers.dense(x, w2, b2))
  return layers.dense(x, w3, b3)


def lenet_model(input_shape: Sequence[int] = (32, 32, 3),
                num_classes: int = 10) -> ModelSpec:
  """pFedHN's LeNet, the target network of paper 004 (UDP-Alg).

  conv 5x5 16 (valid) -> ReLU -> maxpool 2 -> conv 5x5 32 (valid) -> ReLU ->
  maxpool 2 -> dense 120 ReLU -> dense 84 ReLU -> classes: p = 121,182 on
  CIFAR-10's 32 x 32 x 3 (pFedHN code). Needs inputs of at least 16 x 16.
  """
  h, w = input_shape[:2]
  channels = _channels(input_shape)
  side_h, side_w = ((h - 4) // 2 - 4) // 2, ((w - 4) // 2 - 4) // 2
  if side_h < 1 or side_w < 1:
    raise ValueError(f'lenet needs inputs of at least 16 x 16, got '
                     f'{tuple(input_shape)}')
  flat = side_h * side_w * 32
  return ModelSpec(
      name='lenet',
      input_shape=tuple(input_shape),
      num_classes=num_classes,
      shapes=((5, 5, channels, 16), (16,), (5, 5, 16, 32), (32,),
              (flat, 120), (120,), (120, 84), (84,), (84, num_classes),
              (num_classes,)),
      forward=_lenet_forward)


MODELS = ('fc', 'cnn', 'cnn5', 'resnet18', 'lenet')


def build_model(name: str, input_shape: Sequence[int],
                num_classes: int) -> ModelSpec:
  """Returns the model called `name` (one of `MODELS`)."""
  if name == 'fc':
    return fc_model(input_shape, num_classes)
  if name == 'cnn':
    return cnn_model(input_shape, num_classes)
  if name == 'cnn5':
    return cnn5_model(input_shape, num_classes)
  if name == 'resnet18':
    return resnet18_model(input_shape, num_classes)
  if name == 'lenet':
    return lenet_model(input_shape, num_classes)
  raise ValueError(f'unknown model {name!r}; allowed: {", ".join(MODELS)}')


def as_model_spec(model) -> ModelSpec:
  """`model` as a `ModelSpec`: a `ModelSpec` as is, or a
  `tff.learning.models.FunctionalModel` (what
  `tff.learning.models.functional_model_from_keras` makes of a Keras model).

  Every system trains with the papers' loss, the mean sparse softmax
  cross-entropy of the logits (`loss_fn`); a functional model is accepted
  only if its own loss is that one and its output logits, not
  probabilities (both checked on a random batch), has no
  non-trainable weights (DP-SGD and the clipped updates cover the trainable
  ones only) and takes one input tensor. Its `init` returns the functional
  model's initial weights. Keras layers that draw randomness (Dropout) use
  TensorFlow's global generator, not the run's seed.

  Raises:
    TypeError: If `model` is neither.
    ValueError: If a functional model breaks one of the conditions above.
  """
  if isinstance(model, ModelSpec):
    return model
  if not all(hasattr(model, a) for a in ('initial_weights', 'predict_on_batch',
                                          'loss', 'input_spec')):
    raise TypeError(
        f'model must be a tff_hdp.models.ModelSpec or a '
        f'tff.learning.models.FunctionalModel, got {type(model).__name__}: '
        'tff.learning.models.functional_model_from_keras(keras_model, loss, '
        'input_spec) converts a Keras model (a model_fn\'s too)')
  trainable, non_trainable = model.initial_weights
  if len(non_trainable):
    raise ValueError(
        f'the model has {len(non_trainable)} non-trainable weights; tff_hdp '
        'clips and noises trainable weights only, so it takes models without '
        'them (e.g. no BatchNormalization)')
  spec_x = model.input_spec[0] if isinstance(model.input_spec,
                                             (tuple, list)) else None
  if not isinstance(spec_x, tf.TensorSpec) or spec_x.shape.rank is None:
    raise ValueError('the model\'s input_spec must be (x, y) TensorSpecs, got '
                     f'{model.input_spec!r}')
  input_shape = tuple(int(d) for d in spec_x.shape[1:])
  initial = tuple(np.asarray(w, np.float32) for w in trainable)

  shapes = tuple(tuple(w.shape) for w in initial)
  predict = {training: _graph_function(model, shapes, input_shape, training)
             for training in (False, True)}

  def forward(weights, x, training, seed):
    del seed  # Keras layers draw their own randomness.
    return predict[bool(training)](*weights, tf.cast(x, tf.float32))

  x = tf.random.stateless_normal((4,) + input_shape, [7, 7])
  logits = forward([tf.constant(w) for w in initial], x, False, None)
  _check_logits(logits, model.loss)
  return ModelSpec(name='functional', input_shape=input_shape,
                   num_classes=int(logits.shape[-1]),
                   shapes=shapes, forward=forward, initial_weights=initial)


_LOSS_ADVICE = ('build it with tf.keras.losses.SparseCategoricalCrossentropy('
                'from_logits=True) and its default reduction (the batch mean), '
                'and a model that outputs logits')


def _check_logits(logits: tf.Tensor, loss: Callable) -> None:
  """Refuses, in one line, a model whose output on a random batch is not
  logits [batch, classes] or whose `loss` is not tff_hdp's (`loss_fn`),
  naming what differs when it can tell (the reduction, from_logits)."""
  if logits.shape.rank != 2:
    raise ValueError(f'the model must return logits [batch, classes], got '
                     f'shape {logits.shape}')
  y = tf.constant([0, 1, 2, 3]) % tf.shape(logits)[-1]
  try:
    theirs = tf.convert_to_tensor(
        tf.function(loss, autograph=False)(logits, y))
  except (ValueError, TypeError, tf.errors.InvalidArgumentError):
    raise ValueError(
        'the model\'s loss fails on integer labels [batch] and logits '
        '[batch, classes] (e.g. a mean squared error); tff_hdp trains with '
        f'the sparse softmax cross-entropy of logits: {_LOSS_ADVICE}'
    ) from None
  if theirs.shape.num_elements() != 1:
    raise ValueError(
        'the model\'s loss returns one value per example (shape '
        f'{theirs.shape.as_list()}, e.g. reduction=NONE) where tff_hdp trains '
        f'with their mean over the batch: {_LOSS_ADVICE}')
  theirs = float(tf.reshape(theirs, []))
  ours = float(loss_fn(logits, y))
  if not np.isclose(theirs, ours, rtol=1e-4, atol=1e-6):
    raise ValueError(f'the model\'s loss {_loss_difference(theirs, logits, y)}'
                     f' where tff_hdp\'s loss, the mean sparse softmax '
                     f'cross-entropy of logits, gives {ours:.6g}: '
                     f'{_LOSS_ADVICE}')
  rows = tf.reduce_sum(logits, axis=-1)
  if (bool(tf.reduce_all(logits >= 0)) and
      np.allclose(rows.numpy(), 1.0, atol=1e-5)):
    raise ValueError(
        'the model outputs probabilities (each row of its output on a batch '
        'is >= 0 and sums to 1, e.g. a final softmax) where its loss, '
        'from_logits=True, and tff_hdp\'s take logits: remove the softmax')


def _loss_difference(theirs: float, logits: tf.Tensor, y: tf.Tensor) -> str:
  """How a loss that gave `theirs` on (logits, y) differs from `loss_fn`,
  in words: the batch sum (reduction=SUM), the output read as
  probabilities (from_logits=False), both, or just its value."""
  batch = int(logits.shape[0])
  mean = float(loss_fn(logits, y))
  probabilities = float(tf.reduce_mean(
      tf.keras.losses.sparse_categorical_crossentropy(y, logits)))
  readings = [
      (batch * mean, f'sums over the batch (reduction=SUM): it gives '
       f'{theirs:.6g}, {batch} times the mean, on a batch of {batch},'),
      (probabilities, f'reads the output as probabilities '
       f'(from_logits=False): it gives {theirs:.6g}'),
      (batch * probabilities, 'reads the output as probabilities and sums '
       f'over the batch (from_logits=False, reduction=SUM): it gives '
       f'{theirs:.6g}'),
  ]
  for value, words in readings:
    if np.isclose(theirs, value, rtol=1e-4, atol=1e-6):
      return words
  return f'gives {theirs:.6g}'


def _graph_function(model, shapes, input_shape, training: bool):
  """`model.predict_on_batch` as a function of (*weights, x) callable
  anywhere: eagerly, in a tf.function, in `tf.vectorized_map`.

  A Keras model made functional by TFF refuses to run unless the outermost
  context is a graph (it checks under `tf.init_scope`). Where it is (TFF's
  tensorflow computations: the learning processes' client work), the
  Keras body is traced in place. Elsewhere (the package's tf.functions
  called eagerly) it is traced once into a `tf.Graph` whose import is
  wrapped by `wrap_function`, TensorFlow's way to make a graph's subgraph a
  function (its gradients are the ops' own). Not the wrapped function
  everywhere: inside a TFF computation it is a function call in every
  client's work, which TFF's runtime pays for client by client
  (docs/performance.md).
  """
  # The traced body, not a call of TFF's tf.function: a function call inside
  # the graph would stop `tf.vectorized_map` (UDP-Alg's users, DP-SGD's
  # examples), which cannot convert a call of an imported function.
  predict = getattr(model, '_predict_on_batch_fn', model.predict_on_batch)
  predict = getattr(predict, 'python_function', predict)
  graph = tf.Graph()
  with graph.as_default():
    weights = [tf.compat.v1.placeholder(tf.float32, s, name=f'w{i}')
               for i, s in enumerate(shapes)]
    x = tf.compat.v1.placeholder(tf.float32, (None,) + input_shape, name='x')
    tf.identity(predict((weights, []), x, training), name='logits')
  graph_def = graph.as_graph_def()

  def imported(*args):
    inputs = {f'w{i}:0': w for i, w in enumerate(args[:-1])}
    inputs['x:0'] = args[-1]
    return tf.compat.v1.import_graph_def(
        graph_def, input_map=inputs, return_elements=['logits:0'])[0]

  wrapped = tf.compat.v1.wrap_function(
      imported, [tf.TensorSpec(s, tf.float32) for s in shapes] +
      [tf.TensorSpec((None,) + input_shape, tf.float32)])

  def call(*args):
    if not tf.compat.v1.executing_eagerly_outside_functions():
      return predict((list(args[:-1]), []), args[-1], training)
    return wrapped(*args)

  return call


def accuracy(spec: ModelSpec, weights: Sequence[tf.Tensor], x: np.ndarray,
             y: np.ndarray) -> float:
  """Fraction of `x` that `weights` classify as `y` (nan if `x` is empty)."""
  if len(y) == 0:
    return float('nan')
  logits = spec.apply(weights, tf.constant(x))
  predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
  return float(
      tf.reduce_mean(tf.cast(tf.equal(predictions, tf.cast(y, tf.int32)),
                             tf.float32)))


def metric_sums(spec: ModelSpec, weights: Sequence[tf.Tensor], x: tf.Tensor,
                y: tf.Tensor) -> collections.OrderedDict:
  """The sums behind a loss and an accuracy, as TFF sums metrics before it
  divides: OrderedDict(loss=the summed cross-entropy, correct=how many
  `weights` classify right, num_examples) of the examples `x`, `y`."""
  logits = spec.apply(weights, x)
  labels = tf.cast(y, tf.int32)
  return collections.OrderedDict(
      loss=tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=labels, logits=logits)),
      correct=tf.reduce_sum(tf.cast(tf.equal(
          tf.argmax(logits, axis=-1, output_type=tf.int32), labels),
                                    tf.float32)),
      num_examples=tf.size(labels))


def no_metric_sums() -> collections.OrderedDict:
  """`metric_sums` of no example."""
  return collections.OrderedDict(loss=tf.constant(0.0),
                                 correct=tf.constant(0.0),
                                 num_examples=tf.constant(0))


def metrics_from_sums(sums) -> collections.OrderedDict:
  """OrderedDict(loss, accuracy, num_examples) from summed `metric_sums`:
  the mean loss and the fraction right over every example summed (0 when
  there was none)."""
  n = tf.cast(sums['num_examples'], tf.float32)
  return collections.OrderedDict(
      loss=tf.math.divide_no_nan(sums['loss'], n),
      accuracy=tf.math.divide_no_nan(sums['correct'], n),
      num_examples=sums['num_examples'])
