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
`batch_gradients` records the batched forward once and takes one of two
paths per model, when the graph is traced:

1. Factored (`BatchGradients`), when the recorded layers (`tff_hdp.layers`)
   cover every weight exactly once, as in every model of `tff_hdp.models`.
   One backward pass gives every layer's output gradients dz, and each
   example's weight gradient comes from its own rows (Goodfellow 2015;
   Rochette, Manoel and Tramel 2019 for convolutions): dense z = a W + b,
   G_j = a_j (x) dz_j with norm ||a_j|| ||dz_j|| (the "ghost norm"), never
   formed; convolution, G_j = P_j^T dz_j (P_j its input patches), its norm
   by the ghost form or from G_j formed, per layer (`conv_form`);
   GroupNorm's scale-shift, sums over positions of a_j * dz_j and dz_j.
   DP-SGD's clipped, weighted sum sum_j s_j G_j then needs no second
   backward pass (the book-keeping of Bu et al. 2023).
2. Materialised (`MaterializedGradients`), for any other model:
   `tf.vectorized_map` over the examples of a `GradientTape` of each
   example's loss; correct for any forward, but slower.

A forward that also uses a weight outside the recorded layers, besides its
own layer, is not detected (its gradient would miss that use): the
package's models never do. Grouped layers (`layers.grouped_dense`,
`layers.grouped_conv2d`: G models at once, as a cohort of DP-SGD clients
needs) run the same kernels with sums per group. The forms and their cost:
docs/performance.md, "Per-example gradients"; tests/test_per_example.py
checks every path and form against TF's gradient of each example's loss.
"""

import dataclasses
import functools
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


def _kernel_shape(layer: layers.Layer) -> tuple[int, int, int, int]:
  """(kh, kw, c_in, c_out) of one example's (one group's) kernel."""
  return layer.kernel_size + (layer.inputs.shape[-1],
                              layer.outputs.shape[-1])


def _use_ghost_norm(layer: layers.Layer) -> bool:
  """Whether <P_j P_j^T, dz_j dz_j^T> (T^2 (K + C)) is cheaper than G_j
  (T K C): T (K + C) < K C, T the output positions, K the fan-in."""
  if layer.kernel_size is None:
    return True  # T = 1.
  t = layer.outputs.shape[-3] * layer.outputs.shape[-2]
  kh, kw, c_in, c = _kernel_shape(layer)
  k = kh * kw * c_in
  return t * (k + c) < k * c


# The forms of a convolution's per-example squared norms (`conv_form`).
GHOST = 'ghost'  # <P_j P_j^T, dz_j dz_j^T>; the sum from the rescaled dz.
GROUPED = 'grouped'  # G_j as one filter gradient, the examples as groups.
STACKED = 'stacked'  # G_j from its kh kw taps stacked: one matmul.
TAPS = 'taps'  # G_j tap by tap: kh kw batched matmuls.


def _grouped_filter_gradient_probe() -> tf.Tensor:
  """A tiny grouped filter gradient (2 groups)."""
  return tf.raw_ops.Conv2DBackpropFilter(
      input=tf.ones([1, 4, 4, 4]), filter_sizes=[3, 3, 2, 6],
      out_backprop=tf.ones([1, 4, 4, 6]), strides=[1, 1, 1, 1],
      padding='SAME')


@functools.lru_cache(maxsize=None)
def grouped_filter_gradients() -> bool:
  """Whether TensorFlow computes grouped filter gradients on this device.

  oneDNN (on by default in `tff_hdp`) and cuDNN do; TensorFlow's own CPU
  kernels refuse them. Probed once on a tiny grouped convolution, run
  eagerly, or in a graph of its own when first asked while a graph is
  built (a `tf.function`'s, or TFF's).
  """
  errors = (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError)
  with tf.init_scope():
    if tf.executing_eagerly():
      try:
        _grouped_filter_gradient_probe().numpy()
      except errors:
        return False
      return True
  graph = tf.Graph()
  with graph.as_default():
    probe = _grouped_filter_gradient_probe()
  with tf.compat.v1.Session(graph=graph) as session:
    try:
      session.run(probe)
    except errors:
      return False
  return True


def conv_form(layer: layers.Layer) -> str:
  """How `BatchGradients.squared_norms` takes a convolution's norms.

  GHOST where its two Gram matrices cost fewer multiply-adds than forming
  G_j (`_use_ghost_norm`: ResNet-18's late layers). Otherwise G_j is formed
  (Rochette et al., 2019), in the form measured fastest for such a layer
  on a CPU at b = 16 to 128: with one input channel (the first layer on
  grey images) STACKED, its kh kw taps stacked into [kh kw, T] and one matmul
  with dz (tap by tap, each product would be a matrix-vector one reading
  dz again); with more, GROUPED, TensorFlow's filter gradient with the
  examples as groups, where it has one (`grouped_filter_gradients`), else
  TAPS.
  """
  if _use_ghost_norm(layer):
    return GHOST
  if _kernel_shape(layer)[2] == 1:
    return STACKED
  return GROUPED if grouped_filter_gradients() else TAPS


def _filter_gradient(layer: layers.Layer, a: tf.Tensor,
                     dz: tf.Tensor) -> tf.Tensor:
  """sum over the batch of a convolution's filter gradient (TF's own op)."""
  s = layer.strides
  return tf.raw_ops.Conv2DBackpropFilter(
      input=a, filter_sizes=_kernel_shape(layer), out_backprop=dz,
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
      [tf.shape(dz)[:1], _kernel_shape(layer)], 0))


def _conv_per_example_stacked(layer: layers.Layer,
                              dz: tf.Tensor) -> tf.Tensor:
  """`_conv_per_example` of a one-channel input: its kh kw taps stacked,
  [B, kh kw, T] (kh kw times the input), times dz [B, T, c_out]."""
  stacked = tf.stack([x[:, :, 0] for x in _taps(layer, layer.inputs)],
                     axis=1)
  return tf.reshape(tf.matmul(stacked, _positions(dz)), tf.concat(
      [tf.shape(dz)[:1], _kernel_shape(layer)], 0))


def _conv_per_example_grouped(layer: layers.Layer,
                              dz: tf.Tensor) -> tf.Tensor:
  """[kh kw c_in, B, c_out] each example's filter gradient: one
  `Conv2DBackpropFilter` of the batch's examples side by side as the groups
  of one image ([1, H, W, B c_in] and [1, H', W', B c_out]; Rochette et
  al., 2019). Needs `grouped_filter_gradients()`."""
  def side_by_side(v):  # [B, H, W, C] -> [1, H, W, B C].
    s = tf.shape(v)
    return tf.reshape(tf.transpose(v, [1, 2, 0, 3]),
                      [1, s[1], s[2], s[0] * v.shape[-1]])

  kh, kw, c_in, c_out = _kernel_shape(layer)
  batch = tf.shape(dz)[0]
  s = layer.strides
  g = tf.raw_ops.Conv2DBackpropFilter(
      input=side_by_side(layer.inputs),
      filter_sizes=tf.stack([kh, kw, c_in, batch * c_out]),
      out_backprop=side_by_side(dz), strides=[1, s, s, 1],
      padding=layer.padding)
  return tf.reshape(g, [kh * kw * c_in, batch, c_out])


def _grouped_filter_gradient(layer: layers.Layer, dz: tf.Tensor,
                             groups: tf.Tensor) -> tf.Tensor:
  """[G, kh, kw, c_in, c_out]: per group, its rows' filter gradients
  summed, tap by tap ([G, c_in, B T] x [G, B T, c_out] per tap); `layer`
  and `dz` are the grouped layer's rows view (`_rows_view`)."""
  d = tf.reshape(dz, [groups, -1, dz.shape[-1]])
  per_tap = tf.stack(
      [tf.matmul(tf.reshape(x, [groups, -1, x.shape[-1]]), d,
                 transpose_a=True) for x in _taps(layer, layer.inputs)],
      axis=1)
  return tf.reshape(per_tap, tf.concat([[groups], _kernel_shape(layer)], 0))


def _rows(t: tf.Tensor) -> tf.Tensor:
  """[G, B, ...] -> [G B, ...]."""
  return tf.reshape(t, tf.concat([[-1], tf.shape(t)[2:]], 0))


def _rows_view(layer: layers.Layer) -> layers.Layer:
  """A grouped layer as the plain layer of its G B rows."""
  return dataclasses.replace(layer, inputs=_rows(layer.inputs),
                             outputs=_rows(layer.outputs))


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

  Grouped layers (`layers.grouped_dense`, `layers.grouped_conv2d`: G
  models, each on its own rows [G, B, ...]) are taken row by row alike:
  per-row quantities are [G, B] (`squared_norms`, `weighted_sum`'s scale,
  `materialize`), and `weighted_sum` returns per group, [G, *shape] per
  weight tensor. The model's layers are either all grouped or none.
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
    self._bias = {}  # Per-example bias gradients, likewise.
    kept = [  # Skips a layer whose weights are not among `weights`.
        (layer, slots, dz)
        for layer, slots, dz in zip(recorded, all_slots, output_gradients)
        if any(s is not None for s in slots)]
    self._grouped = bool(kept) and kept[0][0].grouped
    if any(layer.grouped != self._grouped for layer, _, _ in kept):
      raise ValueError('a model\'s recorded layers must be all grouped or '
                       'none')
    # [B], or [G, B] for grouped layers: the leading axes of a row.
    self._lead = (tf.shape(kept[0][2])[:2 if self._grouped else 1]
                  if kept else tf.zeros([1], tf.int32))
    if self._grouped:  # Each grouped layer as the plain layer of its rows.
      kept = [(_rows_view(layer), slots, _rows(dz))
              for layer, slots, dz in kept]
    self._layers = kept  # (layer, positions of its params, dz)

  def _per_row(self, t: tf.Tensor) -> tf.Tensor:
    """[R, ...] -> the leading axes of a row ([G, B, ...] when grouped)."""
    if not self._grouped:
      return t
    return tf.reshape(t, tf.concat([self._lead, tf.shape(t)[1:]], 0))

  def squared_norms(self) -> tf.Tensor:
    """[B] (grouped: [G, B]) sum over weights of ||g_j||^2, per example."""
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
      else:
        form = conv_form(layer)
        if form == GHOST:
          p, d = _patches(layer), _positions(dz)
          total.append(tf.reduce_sum(
              tf.matmul(p, p, transpose_b=True) *
              tf.matmul(d, d, transpose_b=True), axis=[1, 2]))
        else:
          if form == GROUPED:  # [kh kw c_in, B, c_out]
            g = _conv_per_example_grouped(layer, dz)
            squares = tf.reduce_sum(tf.square(g), 2)  # Inner, then outer.
            total.append(tf.reduce_sum(squares, 0))
          else:  # [B, kh, kw, c_in, c_out]
            g = (_conv_per_example_stacked if form == STACKED else
                 _conv_per_example)(layer, dz)
            total.append(tf.reduce_sum(
                tf.reshape(tf.square(g), [tf.shape(g)[0], -1]), 1))
          self._formed[position] = (g, form == GROUPED)
      if slots[1] is not None:  # The bias: sum_t dz_j[t], kept for the sum.
        bias = self._bias[position] = tf.reduce_sum(_positions(dz), 1)
        total.append(tf.reduce_sum(tf.square(bias), 1))
    return self._per_row(tf.add_n(total))

  def weighted_sum(self, scale: tf.Tensor) -> list[tf.Tensor]:
    """sum_j scale_j g_j per weight tensor, in the weights' order (grouped:
    per group, over its rows, [G, *shape]): the contraction of a
    convolution's per-example gradients with `scale` when `squared_norms`
    formed them, else the layer's batched weight gradient of the rescaled
    output gradients."""
    out = [None] * len(self._shapes)
    groups = self._lead[0]

    def by_group(v):  # [G B, ...] -> [G, B, ...].
      return tf.reshape(v, tf.concat([[groups, -1], tf.shape(v)[1:]], 0))

    def total(v):  # Per row -> summed (per group when grouped).
      return (tf.reduce_sum(by_group(v), 1) if self._grouped else
              tf.reduce_sum(v, 0))

    def contract(row_scale, v):  # sum_j s_j v_j of per-row v [R, C].
      if not self._grouped:
        return tf.matmul(row_scale[tf.newaxis], v)[0]
      return tf.matmul(tf.reshape(row_scale, [groups, 1, -1]),
                       by_group(v))[:, 0]

    for position, (layer, slots, dz) in enumerate(self._layers):
      row_scale = tf.reshape(tf.cast(scale, dz.dtype), [-1])
      # Unused (a formed kernel's layer, whose bias `squared_norms` kept)
      # is pruned from the graph.
      scaled = dz * tf.reshape(row_scale, [-1] + [1] * (dz.shape.rank - 1))
      if layer.kind == layers.SCALE_SHIFT:
        out[slots[0]] = total(tf.reduce_sum(
            _positions(layer.inputs * scaled), 1))
        out[slots[1]] = total(tf.reduce_sum(_positions(scaled), 1))
        continue
      if layer.kernel_size is None:
        out[slots[0]] = (
            tf.matmul(by_group(layer.inputs), by_group(scaled),
                      transpose_a=True) if self._grouped else
            tf.matmul(layer.inputs, scaled, transpose_a=True))
      elif position in self._formed:
        out[slots[0]] = self._contract(layer, *self._formed[position],
                                       row_scale, groups)
      elif self._grouped:
        out[slots[0]] = _grouped_filter_gradient(layer, scaled, groups)
      else:
        out[slots[0]] = _filter_gradient(layer, layer.inputs, scaled)
      if slots[1] is not None:
        out[slots[1]] = (contract(row_scale, self._bias[position])
                         if position in self._bias else
                         total(tf.reduce_sum(_positions(scaled), 1)))
    return out

  def _contract(self, layer, formed, grouped_form, row_scale, groups):
    """sum_j s_j G_j of a convolution's formed per-example gradients
    (`squared_norms`), per group when grouped: one matmul."""
    kh, kw, c_in, c_out = _kernel_shape(layer)
    k = kh * kw * c_in
    shape = [kh, kw, c_in, c_out]
    if not grouped_form:  # [R, kh, kw, c_in, c_out]
      if not self._grouped:
        return tf.reshape(tf.matmul(row_scale[tf.newaxis],
                                    tf.reshape(formed, [-1, k * c_out])),
                          shape)
      flat = tf.reshape(formed, [groups, -1, k * c_out])
      summed = tf.matmul(tf.reshape(row_scale, [groups, 1, -1]), flat)
      return tf.reshape(summed, tf.concat([[groups], shape], 0))
    # [k, R, c_out]: per k, [1, R] x [R, c_out]; per group, R = G B.
    per = 1 if not self._grouped else groups
    g = tf.reshape(formed, [k * per, -1, c_out])
    s = tf.reshape(tf.broadcast_to(tf.reshape(row_scale, [1, per, 1, -1]),
                                   tf.stack([k, per, 1, tf.shape(g)[1]])),
                   [k * per, 1, -1])
    summed = tf.matmul(s, g)  # [k * per, 1, c_out]
    if not self._grouped:
      return tf.reshape(summed, shape)
    summed = tf.transpose(tf.reshape(summed, [k, per, c_out]), [1, 0, 2])
    return tf.reshape(summed, tf.concat([[groups], shape], 0))

  def materialize(self, method: str = 'taps') -> list[tf.Tensor]:
    """Per weight tensor, [B, *shape] (grouped: [G, B, *shape]) every
    example's gradient; a convolution's tap by tap (`_conv_per_example`,
    'taps') or as one matmul of its input patches ('patches', the usual
    form on a GPU)."""
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
            tf.concat([[batch], _kernel_shape(layer)], 0))
      else:
        out[slots[0]] = _conv_per_example(layer, dz)
      if slots[1] is not None:
        out[slots[1]] = tf.reduce_sum(_positions(dz), 1)
    return [self._per_row(g) for g in out]


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
