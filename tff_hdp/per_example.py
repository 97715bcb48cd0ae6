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
"""Per-example weight gradients, from one batched pass where possible (shared).

DP-SGD (Robust-HDP's clients) clips each example's gradient; UDP-Alg clips
each user's hypernetwork gradient, a per-example gradient with the users as
the examples (`recorded_gradients`, `tff_hdp.udp.hypernetwork`).

Two paths; `batch_gradients` takes one per model, when the graph is traced:

1. Factored (`BatchGradients`), for a model whose forward uses every weight
   in exactly one recorded layer (`tff_hdp.layers`): every model of
   `tff_hdp.models`. The batched forward is recorded layer by layer, one
   backward pass gives every layer's output gradients dz, and each
   example's weight gradient comes from its own rows.
2. Materialised (`MaterializedGradients`), for any other model (e.g. a
   forward of plain `tf` ops, or one adapted from a Keras model):
   `tf.vectorized_map` over the examples of a `GradientTape` of that
   example's loss. It repeats the forward and backward pass per example in
   vectorised form and runs each convolution's filter gradient
   (`Conv2DBackpropFilter`) as a `while_loop` over the examples: correct for
   any forward, but slower (benchmarks/benchmark_per_example.py times
   both).

`batch_gradients` records the batched forward once and takes path 1 if the
recorded layers cover every weight exactly once, else path 2. A forward
that also uses a weight outside the recorded layers, besides its own layer,
is not detected (its gradient would miss that use): the package's models
never do.

Path 1 (Goodfellow, 2015, "Efficient per-example gradient computations";
Rochette, Manoel and Tramel, 2019, for convolutions):

- dense z = a W + b: G_j = a_j (x) dz_j, whose norm is ||a_j|| ||dz_j||
  ("ghost norm", Li et al., 2021; Bu et al., 2022), never formed;
- convolution: G_j = P_j^T dz_j with P_j its input patches [T, K]; its norm
  by the ghost form <P_j P_j^T, dz_j dz_j^T> when T (K + C) < K C (ResNet-18's
  late layers), else from G_j formed tap by tap, kh kw batched matmuls
  (`_taps` says why not the patches on a CPU);
- GroupNorm's scale-shift: sums over positions of a_j * dz_j and dz_j.

DP-SGD then needs only the clipped, weighted sum sum_j s_j G_j: for a
convolution whose G_j the norms formed, their contraction with s; for every
other layer its ordinary batched weight gradient of the rescaled s_j dz_j,
one matmul or one `Conv2DBackpropFilter`.

tests/test_per_example.py checks both paths against TF's gradient of each
example's loss alone, on every model, padding, stride and batch size used,
and the two paths against each other.
"""

from typing import Callable, Sequence, Union

import tensorflow as tf

from tff_hdp import layers
from tff_hdp import models


def _patches(layer: layers.Layer) -> tf.Tensor:
  """[B, T, K] a convolution's inputs as the rows its kernel multiplies."""
  kh, kw = layer.kernel_size
  s = layer.strides
  patches = tf.image.extract_patches(
      layer.inputs, sizes=[1, kh, kw, 1], strides=[1, s, s, 1],
      rates=[1, 1, 1, 1], padding=layer.padding)
  return tf.reshape(patches, [tf.shape(patches)[0], -1, patches.shape[-1]])


def _positions(dz: tf.Tensor) -> tf.Tensor:
  """[B, T, C] of an output gradient [B, ..., C]."""
  return tf.reshape(dz, [tf.shape(dz)[0], -1, dz.shape[-1]])


def _use_ghost_norm(layer: layers.Layer) -> bool:
  """Whether <P_j P_j^T, dz_j dz_j^T> (T^2 (K + C)) is cheaper than G_j
  (T K C): T (K + C) < K C, T the output positions, K the fan-in."""
  if layer.kernel_size is None:
    return True  # T = 1.
  t = layer.outputs.shape[1] * layer.outputs.shape[2]
  k = layer.kernel_size[0] * layer.kernel_size[1] * layer.inputs.shape[-1]
  c = layer.outputs.shape[-1]
  return t * (k + c) < k * c


def _filter_gradient(layer: layers.Layer, a: tf.Tensor,
                     dz: tf.Tensor) -> tf.Tensor:
  """sum over the batch of a convolution's filter gradient (TF's own op)."""
  s = layer.strides
  return tf.raw_ops.Conv2DBackpropFilter(
      input=a, filter_sizes=tf.shape(layer.params[0]), out_backprop=dz,
      strides=[1, s, s, 1], padding=layer.padding)


def _taps(layer: layers.Layer, a: tf.Tensor) -> list[tf.Tensor]:
  """Per kernel tap (i, j), row-major: [B, T, c_in] the input values that
  the tap multiplies at each of the T output positions.

  A convolution's filter gradient for tap (i, j) is then a plain matmul,
  taps(a)[i, j]^T dz: per example a batched [c_in, T] x [T, c_out] matmul,
  summed over the batch one [c_in, B T] x [B T, c_out] matmul. The taps
  are the input patches (`_patches`) cut by tap, one [B, T, c_in] strided
  slice at a time, so no tensor K = kh kw c_in times the input is ever
  written (the patches' cost on a CPU, docs/performance.md).
  """
  kh, kw = layer.kernel_size
  s = layer.strides
  ho, wo = layer.outputs.shape[1], layer.outputs.shape[2]
  if layer.padding == 'SAME':  # TF's SAME: the extra row/column after.
    ph = max((ho - 1) * s + kh - a.shape[1], 0)
    pw = max((wo - 1) * s + kw - a.shape[2], 0)
    a = tf.pad(a, [[0, 0], [ph // 2, ph - ph // 2], [pw // 2, pw - pw // 2],
                   [0, 0]])
  return [tf.reshape(a[:, i:i + s * (ho - 1) + 1:s, j:j + s * (wo - 1) + 1:s],
                     [tf.shape(a)[0], ho * wo, a.shape[-1]])
          for i in range(kh) for j in range(kw)]


def _conv_per_example(layer: layers.Layer, dz: tf.Tensor) -> tf.Tensor:
  """[B, kh, kw, c_in, c_out] each example's filter gradient, tap by tap
  (`_taps`): kh kw batched matmuls, no loop over examples."""
  d = _positions(dz)
  per_tap = tf.stack([tf.matmul(x, d, transpose_a=True)
                      for x in _taps(layer, layer.inputs)], axis=1)
  return tf.reshape(per_tap, tf.concat(
      [tf.shape(dz)[:1], layer.params[0].shape], 0))


def _weight_slots(recorded: Sequence[layers.Layer],
                  weights: Sequence[tf.Tensor]) -> list[tuple]:
  """Per recorded layer, the positions in `weights` of its params (None for
  a param that is not among them)."""
  index = layers.weight_index(weights)
  return [tuple(None if p is None else index.get(id(p)) for p in l.params)
          for l in recorded]


def _coverage_gaps(slots: Sequence[tuple],
                   num_weights: int) -> tuple[list[int], list[int]]:
  """(weights no recorded layer uses, weights more than one uses)."""
  covered = [s for layer_slots in slots for s in layer_slots if s is not None]
  twice = sorted({s for s in covered if covered.count(s) > 1})
  missing = sorted(set(range(num_weights)) - set(covered))
  return missing, twice


class BatchGradients:
  """The per-example weight gradients of one batch, in factored form.

  Built by `batch_gradients` from one batched forward and backward pass;
  each method works from the recorded layer inputs and output gradients.
  """

  def __init__(self, recorded: Sequence[layers.Layer],
               output_gradients: Sequence[tf.Tensor],
               weights: Sequence[tf.Tensor]):
    self._shapes = [w.shape for w in weights]
    all_slots = _weight_slots(recorded, weights)
    missing, twice = _coverage_gaps(all_slots, len(weights))
    if missing or twice:
      raise ValueError(
          'per-example gradients need every weight used by exactly one '
          f'recorded layer (tff_hdp.layers); weights {missing} are not, and '
          f'weights {twice} are used twice')
    # Per-example filter gradients formed by `squared_norms`, by layer
    # position: `weighted_sum` contracts them with the scale instead of
    # taking a batched filter gradient again.
    self._formed = {}
    self._layers = [  # (layer, positions of its params, dz)
        (layer, slots, dz)
        for layer, slots, dz in zip(recorded, all_slots, output_gradients)
        # Skips a layer whose weights are not among `weights`.
        if any(s is not None for s in slots)]

  def squared_norms(self) -> tf.Tensor:
    """[B] sum over weights of ||g_j||^2, per example."""
    total = []
    for position, (layer, slots, dz) in enumerate(self._layers):
      a = layer.inputs
      if layer.kind == layers.SCALE_SHIFT:
        a, d = _positions(a), _positions(dz)
        total += [tf.reduce_sum(tf.square(tf.reduce_sum(a * d, 1)), 1),
                  tf.reduce_sum(tf.square(tf.reduce_sum(d, 1)), 1)]
        continue
      if layer.kernel_size is None:  # dense: ||a_j||^2 ||dz_j||^2.
        total.append(tf.reduce_sum(tf.square(a), 1) *
                     tf.reduce_sum(tf.square(dz), 1))
      elif _use_ghost_norm(layer):
        p, d = _patches(layer), _positions(dz)
        total.append(tf.reduce_sum(
            tf.matmul(p, p, transpose_b=True) *
            tf.matmul(d, d, transpose_b=True), axis=[1, 2]))
      else:
        g = self._formed[position] = _conv_per_example(layer, dz)
        total.append(tf.reduce_sum(
            tf.reshape(tf.square(g), [tf.shape(g)[0], -1]), 1))
      if slots[1] is not None:
        total.append(tf.reduce_sum(
            tf.square(tf.reduce_sum(_positions(dz), 1)), 1))
    return tf.add_n(total)

  def weighted_sum(self, scale: tf.Tensor) -> list[tf.Tensor]:
    """sum_j scale_j g_j per weight tensor, in the weights' order: the
    contraction of a convolution's per-example gradients with `scale` when
    `squared_norms` formed them, else the layer's batched weight gradient of
    the rescaled output gradients."""
    out = [None] * len(self._shapes)
    for position, (layer, slots, dz) in enumerate(self._layers):
      scale = tf.cast(scale, dz.dtype)
      scaled = dz * tf.reshape(scale, [-1] + [1] * (dz.shape.rank - 1))
      if layer.kind == layers.SCALE_SHIFT:
        out[slots[0]] = tf.reduce_sum(_positions(layer.inputs * scaled),
                                      [0, 1])
        out[slots[1]] = tf.reduce_sum(_positions(scaled), [0, 1])
        continue
      if layer.kernel_size is None:
        out[slots[0]] = tf.matmul(layer.inputs, scaled, transpose_a=True)
      elif position in self._formed:
        out[slots[0]] = tf.tensordot(scale, self._formed[position], axes=1)
      else:
        out[slots[0]] = _filter_gradient(layer, layer.inputs, scaled)
      if slots[1] is not None:
        out[slots[1]] = tf.reduce_sum(_positions(scaled), [0, 1])
    return out

  def materialize(self, method: str = 'taps') -> list[tf.Tensor]:
    """Per weight tensor, [B, *shape] every example's gradient; a
    convolution's tap by tap (`_conv_per_example`, 'taps') or as one
    matmul of its input patches ('patches', the usual form on a GPU)."""
    out = [None] * len(self._shapes)
    for layer, slots, dz in self._layers:
      batch = tf.shape(dz)[0]
      if layer.kind == layers.SCALE_SHIFT:
        a, d = _positions(layer.inputs), _positions(dz)
        out[slots[0]] = tf.reduce_sum(a * d, 1)
        out[slots[1]] = tf.reduce_sum(d, 1)
        continue
      if layer.kernel_size is None:
        out[slots[0]] = layer.inputs[:, :, tf.newaxis] * dz[:, tf.newaxis, :]
      elif method == 'patches':
        out[slots[0]] = tf.reshape(
            tf.matmul(_patches(layer), _positions(dz), transpose_a=True),
            tf.concat([[batch], self._shapes[slots[0]]], 0))
      else:
        out[slots[0]] = _conv_per_example(layer, dz)
      if slots[1] is not None:
        out[slots[1]] = tf.reduce_sum(_positions(dz), 1)
    return out


class MaterializedGradients:
  """Per-example weight gradients held as formed, [B, *shape] per weight:
  the interface of `BatchGradients` for any model (`batch_gradients`'s
  path 2)."""

  def __init__(self, per_example: Sequence[tf.Tensor]):
    self._grads = list(per_example)

  def squared_norms(self) -> tf.Tensor:
    """[B] sum over weights of ||g_j||^2, per example."""
    return tf.add_n([
        tf.reduce_sum(tf.reshape(tf.square(g), [tf.shape(g)[0], -1]), 1)
        for g in self._grads])

  def weighted_sum(self, scale: tf.Tensor) -> list[tf.Tensor]:
    """sum_j scale_j g_j per weight tensor, in the weights' order."""
    return [tf.tensordot(tf.cast(scale, g.dtype), g, axes=1)
            for g in self._grads]

  def materialize(self, method: str = 'taps') -> list[tf.Tensor]:
    """Per weight tensor, [B, *shape] every example's gradient (`method`,
    `BatchGradients`'s choice of convolution form, does not apply)."""
    del method
    return list(self._grads)


def _record(summed_loss: Callable[[list[tf.Tensor]], tf.Tensor],
            weights: list[tf.Tensor]):
  """(recorded layers, tape, summed loss) of one batched forward pass."""
  with tf.GradientTape() as tape, layers.record() as recorded:
    tape.watch(weights)
    total = summed_loss(weights)
  return recorded, tape, total


def _factored(recorded, tape, total, weights) -> BatchGradients:
  """Path 1: the recorded layers' output gradients, one backward pass."""
  output_gradients = tape.gradient(total, [l.outputs for l in recorded])
  return BatchGradients(recorded, output_gradients, weights)


def recorded_gradients(summed_loss: Callable[[list[tf.Tensor]], tf.Tensor],
                       weights: Sequence[tf.Tensor]) -> BatchGradients:
  """The gradients, per row j, of loss_j(weights), from one batched pass.

  `summed_loss(weights)` returns sum_j loss_j, each loss_j a function of
  row j of every recorded layer's output alone, and builds its layers with
  `tff_hdp.layers` (each weight used by exactly one of them, else a
  ValueError names the weights): a model's per-example cross-entropy
  (`batch_gradients`), or UDP-Alg's per-user <h(phi, v_u), Delta_u>
  (`tff_hdp.udp.hypernetwork`).
  """
  weights = [tf.convert_to_tensor(w) for w in weights]
  return _factored(*_record(summed_loss, weights), weights)


def _example_losses(spec: models.ModelSpec, weights: Sequence[tf.Tensor],
                    x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
  """[B] each example's cross-entropy (`models.loss_fn` of it alone)."""
  return tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.cast(y, tf.int32), logits=spec.apply(weights, x))


def vectorized_gradients(spec: models.ModelSpec,
                         weights: Sequence[tf.Tensor], x: tf.Tensor,
                         y: tf.Tensor) -> list[tf.Tensor]:
  """Path 2: [B, *shape] per weight, `tf.vectorized_map` over the examples
  of each one's own `GradientTape` (any forward; zero for a weight that an
  example's loss does not use)."""
  weights = [tf.convert_to_tensor(w) for w in weights]

  def one(example):
    xj, yj = example
    with tf.GradientTape() as tape:
      tape.watch(weights)
      loss = _example_losses(spec, weights, xj[tf.newaxis],
                             yj[tf.newaxis])[0]
    return tape.gradient(loss, weights,
                         unconnected_gradients=tf.UnconnectedGradients.ZERO)

  return tf.vectorized_map(
      one, (tf.convert_to_tensor(x), tf.convert_to_tensor(y)))


def batch_gradients(
    spec: models.ModelSpec, weights: Sequence[tf.Tensor], x: tf.Tensor,
    y: tf.Tensor) -> Union[BatchGradients, MaterializedGradients]:
  """The gradients of each example's own loss f(theta; x_j, y_j) (the
  cross-entropy of `models.loss_fn` on that example alone), for any model:
  factored from one batched pass when the recorded layers cover every
  weight exactly once, else materialised by `vectorized_gradients`."""
  weights = [tf.convert_to_tensor(w) for w in weights]
  recorded, tape, total = _record(
      lambda w: tf.reduce_sum(_example_losses(spec, w, x, y)), weights)
  if not any(_coverage_gaps(_weight_slots(recorded, weights), len(weights))):
    return _factored(recorded, tape, total, weights)
  # The recorded forward is then unused: pruned from a traced graph.
  return MaterializedGradients(vectorized_gradients(spec, weights, x, y))


def per_example_gradients(spec: models.ModelSpec,
                          weights: Sequence[tf.Tensor], x: tf.Tensor,
                          y: tf.Tensor) -> list[tf.Tensor]:
  """d f(theta; x_j, y_j) / d theta for every j, stacked on a leading axis
  (either path of `batch_gradients`)."""
  return batch_gradients(spec, weights, x, y).materialize()
