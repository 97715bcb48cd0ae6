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
"""The models' weighted layers, as plain TF ops that can be recorded (shared).

`tff_hdp.models` builds every model from these three functions, which compute
exactly `tf.matmul(x, w) + b`, `tf.nn.conv2d(x, k) + b` and `x * g + b`. Under
`record()`, each call also notes its input, its output and the weight
tensors it used. That is all `tff_hdp.per_example` needs to form per-example
(or per-user) weight gradients from one batched forward and backward pass:
for a layer z = a W, example j's gradient is a_j^T dz_j, with dz_j the
gradient of example j's loss with respect to its own rows of z (Goodfellow,
2015; Rochette et al., 2019, for convolutions through their input patches).

`grouped_dense` and `grouped_conv2d` are the same layers for G models at
once, model g's weights on a leading axis and its own batch of rows
x[g] ([G, B, ...]): one batched matmul, and one grouped convolution whose
groups are the models (their channels side by side, as FedHDP's direct
backend runs its cohort). The grouped convolution's input gradient is
written as a grouped forward convolution of the output gradient with the
flipped kernel, so it exists wherever grouped forward convolutions do
(TensorFlow's own CPU kernels have none for the gradient; oneDNN and cuDNN
do). Recorded, they let DP-SGD form every row's gradient for a whole
cohort of clients in one pass (`tff_hdp.robust_hdp.cohort`).
"""

import contextlib
import dataclasses
import threading
from typing import Optional, Sequence

import tensorflow as tf

LINEAR = 'linear'  # z = patches(a) W (+ b): dense and conv2d.
SCALE_SHIFT = 'scale_shift'  # z = a * gamma + beta (a normalisation's affine).


@dataclasses.dataclass(frozen=True)
class Layer:
  """One recorded call.

  Attributes:
    kind: LINEAR or SCALE_SHIFT.
    inputs: a, the layer's input ([B, in] for dense, NHWC for the rest).
    outputs: z, the layer's output (before any activation).
    params: The weight tensors used: (kernel, bias) or (gamma, beta); a bias
      may be None.
    kernel_size: (kh, kw) for a convolution, None for dense.
    strides: The convolution's stride.
    padding: The convolution's padding, 'SAME' or 'VALID'.
    grouped: Whether the call is a grouped one (`grouped_dense`,
      `grouped_conv2d`): inputs and outputs [G, B, ...], params [G, ...].
  """
  kind: str
  inputs: tf.Tensor
  outputs: tf.Tensor
  params: tuple
  kernel_size: Optional[tuple[int, int]] = None
  strides: int = 1
  padding: str = 'VALID'
  grouped: bool = False


_STATE = threading.local()


@contextlib.contextmanager
def record():
  """Within the context, every layer call is appended to the yielded list."""
  previous = getattr(_STATE, 'layers', None)
  _STATE.layers = []
  try:
    yield _STATE.layers
  finally:
    _STATE.layers = previous


def _note(layer: Layer) -> None:
  layers = getattr(_STATE, 'layers', None)
  if layers is not None:
    layers.append(layer)


def dense(x: tf.Tensor, kernel: tf.Tensor,
          bias: Optional[tf.Tensor] = None) -> tf.Tensor:
  """x W + b for x [B, in]."""
  z = tf.matmul(x, kernel)
  if bias is not None:
    z = z + bias
  _note(Layer(LINEAR, x, z, (kernel, bias)))
  return z


def conv2d(x: tf.Tensor, kernel: tf.Tensor, bias: Optional[tf.Tensor] = None,
           *, strides: int = 1, padding: str = 'SAME') -> tf.Tensor:
  """`tf.nn.conv2d(x, kernel, strides, padding) + bias` (NHWC)."""
  z = tf.nn.conv2d(x, kernel, strides=strides, padding=padding)
  if bias is not None:
    z = z + bias
  _note(Layer(LINEAR, x, z, (kernel, bias), tuple(kernel.shape[:2]),
              int(strides), padding.upper()))
  return z


def scale_shift(x: tf.Tensor, gamma: tf.Tensor,
                beta: tf.Tensor) -> tf.Tensor:
  """x * gamma + beta over the last axis (a normalisation's affine part)."""
  z = x * gamma + beta
  _note(Layer(SCALE_SHIFT, x, z, (gamma, beta)))
  return z


def grouped_dense(x: tf.Tensor, kernel: tf.Tensor,
                  bias: Optional[tf.Tensor] = None) -> tf.Tensor:
  """Per group g, x[g] W[g] + b[g]: x [G, B, in], kernel [G, in, out], bias
  [G, out]; one batched matmul."""
  z = tf.matmul(x, kernel)
  if bias is not None:
    z = z + bias[:, tf.newaxis, :]
  _note(Layer(LINEAR, x, z, (kernel, bias), grouped=True))
  return z


def _same_padding(size: int) -> tuple[int, int]:
  """TF's 'SAME' padding of a stride-1 kernel of `size` (the extra after)."""
  return (size - 1) // 2, size - 1 - (size - 1) // 2


def _flipped(kernels: tf.Tensor, groups: tf.Tensor, c_in: int,
             c_out: int) -> tf.Tensor:
  """The grouped kernel of the input gradient: [kh, kw, C, G*O] rotated by
  180 degrees with each group's channels swapped, [kh, kw, O, G*C]."""
  kh, kw = kernels.shape[0], kernels.shape[1]
  k = tf.reshape(kernels, [kh, kw, c_in, groups, c_out])
  k = tf.transpose(tf.reverse(k, [0, 1]), [0, 1, 4, 3, 2])
  return tf.reshape(k, [kh, kw, c_out, groups * c_in])


def _by_group(v: tf.Tensor, groups: tf.Tensor, c: int) -> tf.Tensor:
  """[B, h, w, G*c] -> [G, B h w, c]."""
  s = tf.shape(v)
  v = tf.reshape(v, [s[0], s[1], s[2], groups, c])
  return tf.reshape(tf.transpose(v, [3, 0, 1, 2, 4]), [groups, -1, c])


def _grouped_filter_gradient(x: tf.Tensor, dz: tf.Tensor, kh: int, kw: int,
                             groups: tf.Tensor, c_in: int, c_out: int,
                             padding: str) -> tf.Tensor:
  """[kh, kw, C, G*O]: per group, its filter gradient summed over the batch,
  tap by tap (one batched matmul [G, C, B T] x [G, B T, O] per tap)."""
  ho, wo = tf.shape(dz)[1], tf.shape(dz)[2]
  if padding == 'SAME':
    (top, bottom), (left, right) = _same_padding(kh), _same_padding(kw)
    x = tf.pad(x, [[0, 0], [top, bottom], [left, right], [0, 0]])
  d = _by_group(dz, groups, c_out)
  taps = [tf.matmul(_by_group(x[:, i:i + ho, j:j + wo], groups, c_in), d,
                    transpose_a=True)
          for i in range(kh) for j in range(kw)]
  g = tf.reshape(tf.stack(taps), [kh, kw, groups, c_in, c_out])
  return tf.reshape(tf.transpose(g, [0, 1, 3, 2, 4]),
                    [kh, kw, c_in, groups * c_out])


def _grouped_conv(x: tf.Tensor, kernels: tf.Tensor, groups: tf.Tensor,
                  c_out: int, padding: str) -> tf.Tensor:
  """Stride-1 grouped `tf.nn.conv2d` of x [B, H, W, G*C] with [kh, kw, C,
  G*O], differentiable wherever grouped forward convolutions run.

  Its input gradient is the transposed convolution of stride 1 written as a
  forward one: the output gradient padded by k - 1 minus the forward's
  padding on each side, convolved ('VALID') with `_flipped` kernels. Its
  kernel gradient is `_grouped_filter_gradient` (DP-SGD does not take it:
  `tff_hdp.per_example` forms per-example gradients from the recorded
  output gradients).
  """
  kh, kw, c_in = kernels.shape[0], kernels.shape[1], kernels.shape[2]

  @tf.custom_gradient
  def conv(x, kernels):

    def grad(dz):
      pads = [[0, 0], [kh - 1, kh - 1], [kw - 1, kw - 1], [0, 0]]
      if padding == 'SAME':
        for axis, size in ((1, kh), (2, kw)):
          before, after = _same_padding(size)
          pads[axis] = [size - 1 - before, size - 1 - after]
      dx = tf.nn.conv2d(tf.pad(dz, pads),
                        _flipped(kernels, groups, c_in, c_out), strides=1,
                        padding='VALID')
      return dx, _grouped_filter_gradient(x, dz, kh, kw, groups, c_in, c_out,
                                          padding)

    return tf.nn.conv2d(x, kernels, strides=1, padding=padding), grad

  return conv(x, kernels)


def grouped_conv2d(x: tf.Tensor, kernel: tf.Tensor,
                   bias: Optional[tf.Tensor] = None, *,
                   padding: str = 'SAME') -> tf.Tensor:
  """Per group g, `tf.nn.conv2d(x[g], kernel[g], 1, padding) + bias[g]`.

  Args:
    x: [G, B, H, W, C].
    kernel: [G, kh, kw, C, O].
    bias: [G, O] or None.
    padding: 'SAME' or 'VALID' (stride 1).

  Returns:
    [G, B, H', W', O]: one grouped convolution of the groups' channels side
    by side ([B, H, W, G*C] with [kh, kw, C, G*O]).
  """
  padding = padding.upper()
  groups = tf.shape(kernel)[0]
  _, kh, kw, c_in, c_out = kernel.shape
  s = tf.shape(x)
  channels = tf.reshape(tf.transpose(x, [1, 2, 3, 0, 4]),
                        [s[1], s[2], s[3], groups * c_in])
  kernels = tf.reshape(tf.transpose(kernel, [1, 2, 3, 0, 4]),
                       [kh, kw, c_in, groups * c_out])
  z = _grouped_conv(channels, kernels, groups, c_out, padding)
  zs = tf.shape(z)
  z = tf.transpose(tf.reshape(z, [zs[0], zs[1], zs[2], groups, c_out]),
                   [3, 0, 1, 2, 4])
  if bias is not None:
    z = z + bias[:, tf.newaxis, tf.newaxis, tf.newaxis, :]
  _note(Layer(LINEAR, x, z, (kernel, bias), (kh, kw), 1, padding,
              grouped=True))
  return z


def weight_index(weights: Sequence[tf.Tensor]) -> dict[int, int]:
  """{id(tensor): position} of `weights`, to find a layer's weights."""
  return {id(w): i for i, w in enumerate(weights)}

