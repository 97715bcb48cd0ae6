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
  """
  kind: str
  inputs: tf.Tensor
  outputs: tf.Tensor
  params: tuple
  kernel_size: Optional[tuple[int, int]] = None
  strides: int = 1
  padding: str = 'VALID'


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


def weight_index(weights: Sequence[tf.Tensor]) -> dict[int, int]:
  """{id(tensor): position} of `weights`, to find a layer's weights."""
  return {id(w): i for i, w in enumerate(weights)}

