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
"""HyperNetFL's hypernetwork h(phi, v) in plain TensorFlow (paper 004).

The architecture is pFedHN's (Shamsian et al., ICML 2021, its public code),
which paper 004 adopts: user u's embedding v_u (dimension floor(1 + N/4) by
default) -> linear to a hidden width of 100 -> 3 x (ReLU, linear 100 -> 100)
-> one linear head per tensor of the target network (each kernel and bias),
no output activation. The target network is a `tff_hdp.models.ModelSpec`
(LeNet for images of 16 x 16 or more; the FC NN for the offline digits).

phi is a plain list of tensors, like a model's weights. Initialisation is
PyTorch's default, as pFedHN's: linear weights and biases U(-1/sqrt(fan_in),
1/sqrt(fan_in)); embeddings N(0, 1).

`generate` maps a batch of embeddings to a batch of target weights.
`phi_vjps` gives each user's (d theta_u / d phi)^T Delta_u for a batch of
users at once, through `tf.vectorized_map` (the reference);
`scaled_phi_vjp_sum` gives sum_u s_u g_u with s_u a function of ||g_u|| (the
clipped, weighted sum of UDP-Alg) through `tff_hdp.per_example`, without
forming the heads' per-user gradients (below);
`embedding_vjps` each user's (d theta_u / d v_u)^T Delta_u from one gradient
of sum_u <theta_u, Delta_u> (theta_u depends on no other user's embedding).
"""

import dataclasses
import math
from typing import Sequence

import numpy as np
import tensorflow as tf

from tff_hdp import layers
from tff_hdp import models
from tff_hdp import per_example


@dataclasses.dataclass(frozen=True)
class HyperNetwork:
  """h(phi, v): shapes of phi and the map from embeddings to target weights.

  Attributes:
    target: The target network whose weights are generated.
    embedding_dim: Dimension of each user's embedding v_u.
    hidden: Width of the MLP (pFedHN: 100).
    hidden_layers: Number of (ReLU, linear hidden -> hidden) blocks (3).
  """

  target: models.ModelSpec
  embedding_dim: int
  hidden: int = 100
  hidden_layers: int = 3

  @property
  def shapes(self) -> tuple[tuple[int, ...], ...]:
    """Shapes of phi: the MLP's kernels and biases, then one head per
    target tensor (kernel [hidden, size], bias [size])."""
    shapes = [(self.embedding_dim, self.hidden), (self.hidden,)]
    for _ in range(self.hidden_layers):
      shapes += [(self.hidden, self.hidden), (self.hidden,)]
    for shape in self.target.shapes:
      size = math.prod(shape)
      shapes += [(self.hidden, size), (size,)]
    return tuple(shapes)

  @property
  def num_parameters(self) -> int:
    return sum(math.prod(s) for s in self.shapes)

  def init(self, seed: int) -> list[np.ndarray]:
    """phi^0: PyTorch's default linear initialisation."""
    rng = np.random.default_rng([seed, 0x4E])
    phi = []
    for kernel, bias in zip(self.shapes[::2], self.shapes[1::2]):
      bound = 1.0 / math.sqrt(kernel[0])
      phi.append(rng.uniform(-bound, bound, kernel).astype(np.float32))
      phi.append(rng.uniform(-bound, bound, bias).astype(np.float32))
    return phi

  def init_embeddings(self, num_users: int, seed: int) -> np.ndarray:
    """[N, embedding_dim] N(0, 1) embeddings (PyTorch's nn.Embedding)."""
    rng = np.random.default_rng([seed, 0x45])
    return rng.standard_normal((num_users, self.embedding_dim)).astype(
        np.float32)

  def generate(self, phi: Sequence[tf.Tensor],
               embeddings: tf.Tensor) -> list[tf.Tensor]:
    """theta for a batch of embeddings [B, e]: per target tensor [B, *shape]."""
    phi = list(phi)
    features = layers.dense(embeddings, phi[0], phi[1])
    for i in range(self.hidden_layers):
      kernel, bias = phi[2 + 2 * i], phi[3 + 2 * i]
      features = layers.dense(tf.nn.relu(features), kernel, bias)
    heads = phi[2 + 2 * self.hidden_layers:]
    batch = tf.shape(embeddings)[0]
    return [
        tf.reshape(layers.dense(features, kernel, bias),
                   tf.concat([[batch], shape], 0))
        for kernel, bias, shape in zip(heads[::2], heads[1::2],
                                       self.target.shapes)
    ]

  def phi_vjps(self, phi: Sequence[tf.Tensor], embeddings: tf.Tensor,
               deltas: Sequence[tf.Tensor]) -> list[tf.Tensor]:
    """Each user's (d theta_u / d phi)^T Delta_u, per phi tensor [B, *shape].

    Args:
      phi: The hypernetwork's weights.
      embeddings: [B, e] the users' embeddings v_u.
      deltas: Per target tensor, [B, *shape] the users' Delta_u.
    """
    phi = [tf.convert_to_tensor(p) for p in phi]

    def one_user(args):
      v, delta = args
      with tf.GradientTape() as tape:
        tape.watch(phi)
        theta = self.generate(phi, v[tf.newaxis])
        inner = tf.add_n([tf.reduce_sum(t[0] * d)
                          for t, d in zip(theta, delta)])
      return tape.gradient(inner, phi)

    return list(tf.vectorized_map(
        one_user, (tf.convert_to_tensor(embeddings),
                   [tf.convert_to_tensor(d) for d in deltas])))

  def scaled_phi_vjp_sum(self, phi: Sequence[tf.Tensor],
                         embeddings: tf.Tensor, deltas: Sequence[tf.Tensor],
                         scale_fn) -> tuple[list[tf.Tensor], tf.Tensor]:
    """sum_u s_u (d theta_u / d phi)^T Delta_u, s = scale_fn(norms), and norms.

    The heads hold almost all of phi (hidden x |theta| weights: 4 M for the
    FC NN on 28 x 28, 8.6 M for LeNet), and `phi_vjps` writes every user's
    copy of them. But g_u is the gradient of user u's own
    <h(phi, v_u), Delta_u>, a per-example gradient with the users as the
    examples, and every layer of h is dense (`tff_hdp.layers.dense`): so
    `tff_hdp.per_example` takes it from one batched backward pass, the norm
    of a layer's a_u (x) dz_u as ||a_u|| ||dz_u|| (the "ghost norm" of Li et
    al., 2021, and Bu et al., 2022) and sum_u s_u a_u (x) dz_u as one
    matmul, never forming a user's copy of a head. Exact
    (tests/udp/test_hypernetfl.py checks it against `phi_vjps`).

    Args:
      phi: The hypernetwork's weights.
      embeddings: [B, e] the users' v_u.
      deltas: Per target tensor, [B, *shape] the users' Delta_u.
      scale_fn: [B] norms -> [B] factors s_u.

    Returns:
      (the sum per phi tensor, [B] each user's ||g_u||).
    """
    embeddings = tf.convert_to_tensor(embeddings)
    deltas = [tf.convert_to_tensor(d) for d in deltas]

    def inner(phi):  # sum_u <theta_u, Delta_u>
      return tf.add_n([tf.reduce_sum(t * d) for t, d in zip(
          self.generate(phi, embeddings), deltas)])

    grads = per_example.recorded_gradients(inner, phi)
    norms = tf.sqrt(grads.squared_norms())
    return grads.weighted_sum(scale_fn(norms)), norms

  def embedding_vjps(self, phi: Sequence[tf.Tensor], embeddings: tf.Tensor,
                     deltas: Sequence[tf.Tensor]) -> tf.Tensor:
    """[B, e]: each user's (d theta_u / d v_u)^T Delta_u, from one gradient."""
    embeddings = tf.convert_to_tensor(embeddings)
    with tf.GradientTape() as tape:
      tape.watch(embeddings)
      theta = self.generate(phi, embeddings)
      inner = tf.add_n([tf.reduce_sum(t * d) for t, d in zip(theta, deltas)])
    return tape.gradient(inner, embeddings)

  def user_vjps(self, phi: Sequence[tf.Tensor], embeddings: tf.Tensor,
                deltas: Sequence[tf.Tensor]):
    """(`phi_vjps`, `embedding_vjps`) of a cohort."""
    return (self.phi_vjps(phi, embeddings, deltas),
            self.embedding_vjps(phi, embeddings, deltas))


def default_embedding_dim(num_users: int) -> int:
  """pFedHN's default: floor(1 + N / 4)."""
  return int(1 + num_users / 4)
