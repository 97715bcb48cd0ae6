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
clipped, weighted sum of UDP-Alg) without forming the heads' per-user
gradients (below);
`embedding_vjps` each user's (d theta_u / d v_u)^T Delta_u from one gradient
of sum_u <theta_u, Delta_u> (theta_u depends on no other user's embedding).
"""

import dataclasses
import math
from typing import Sequence

import numpy as np
import tensorflow as tf

from tff_hdp import models


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
    features = tf.matmul(embeddings, phi[0]) + phi[1]
    for i in range(self.hidden_layers):
      kernel, bias = phi[2 + 2 * i], phi[3 + 2 * i]
      features = tf.matmul(tf.nn.relu(features), kernel) + bias
    heads = phi[2 + 2 * self.hidden_layers:]
    batch = tf.shape(embeddings)[0]
    return [
        tf.reshape(tf.matmul(features, kernel) + bias,
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
    copy of them. But a head theta_t = F K_t + c_t is linear in its weights:
    user u's gradient is the outer product F_u (x) Delta_{t,u} (and
    Delta_{t,u} for c_t), whose norm is ||F_u|| ||Delta_{t,u}||, and
    sum_u s_u F_u (x) Delta_{t,u} = F^T diag(s) Delta_t is one matmul (the
    "ghost norm" of Li et al., 2021, and Bu et al., 2022). Only the small
    MLP body's per-user gradients are formed, from one batched backward
    pass: for its layer z = a W + b they are a_u (x) dz_u and dz_u. Exact
    (tests/udp/test_hypernetfl.py checks it against `phi_vjps`).

    Args:
      phi: The hypernetwork's weights.
      embeddings: [B, e] the users' v_u.
      deltas: Per target tensor, [B, *shape] the users' Delta_u.
      scale_fn: [B] norms -> [B] factors s_u.

    Returns:
      (the sum per phi tensor, [B] each user's ||g_u||).
    """
    phi = [tf.convert_to_tensor(p) for p in phi]
    embeddings = tf.convert_to_tensor(embeddings)
    batch = tf.shape(embeddings)[0]
    body = phi[:2 + 2 * self.hidden_layers]
    heads = phi[2 + 2 * self.hidden_layers:]
    flat = [tf.reshape(tf.convert_to_tensor(d), [batch, -1]) for d in deltas]
    with tf.GradientTape() as tape:
      tape.watch(embeddings)  # So the tape records the layers' outputs.
      inputs, outputs = [embeddings], []
      features = tf.matmul(embeddings, body[0]) + body[1]
      outputs.append(features)
      for i in range(self.hidden_layers):
        inputs.append(tf.nn.relu(features))
        features = tf.matmul(inputs[-1], body[2 + 2 * i]) + body[3 + 2 * i]
        outputs.append(features)
    # d <theta_u, Delta_u> / d F_u, for every user at once.
    grad_features = tf.add_n([tf.matmul(d, kernel, transpose_b=True)
                              for d, kernel in zip(flat, heads[::2])])
    grad_outputs = tape.gradient(outputs[-1], outputs,
                                 output_gradients=grad_features)
    per_user_body = []
    for a, dz in zip(inputs, grad_outputs):
      per_user_body += [a[:, :, tf.newaxis] * dz[:, tf.newaxis, :], dz]
    body_squares = tf.add_n([
        tf.reduce_sum(tf.reshape(tf.square(g), [batch, -1]), 1)
        for g in per_user_body])
    delta_squares = tf.add_n([tf.reduce_sum(tf.square(d), 1) for d in flat])
    feature_squares = tf.reduce_sum(tf.square(features), 1)
    norms = tf.sqrt(body_squares + (feature_squares + 1.0) * delta_squares)
    scale = scale_fn(norms)
    sums = [tf.tensordot(scale, g, axes=1) for g in per_user_body]
    for d, kernel in zip(flat, heads[::2]):
      scaled = scale[:, tf.newaxis] * d
      sums += [tf.matmul(features, scaled, transpose_a=True),
               tf.reduce_sum(scaled, 0)]
    return sums, norms

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
