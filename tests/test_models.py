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
"""tff_hdp.models: ResNet-18 with GroupNorm (paper 003's CIFAR-10 model)."""

import numpy as np
import tensorflow as tf

from tff_hdp import models
from tff_hdp.robust_hdp import dp_sgd


def _group_norm_numpy(x, gamma, beta, groups, eps=1e-5):
  """torch.nn.GroupNorm's formula, channels last, in float64."""
  n, h, w, c = x.shape
  g = x.reshape(n, h, w, groups, c // groups).astype(np.float64)
  mean = g.mean(axis=(1, 2, 4), keepdims=True)
  var = g.var(axis=(1, 2, 4), keepdims=True)
  g = (g - mean) / np.sqrt(var + eps)
  return g.reshape(n, h, w, c) * gamma + beta


def test_group_norm_matches_the_formula():
  rng = np.random.default_rng(0)
  x = rng.normal(3.0, 2.0, size=(2, 4, 4, 6)).astype(np.float32)
  gamma = rng.normal(size=6).astype(np.float32)
  beta = rng.normal(size=6).astype(np.float32)
  out = models._group_norm(tf.constant(x), gamma, beta, groups=2)  # pylint: disable=protected-access
  np.testing.assert_allclose(out.numpy(), _group_norm_numpy(x, gamma, beta, 2),
                             rtol=1e-4, atol=1e-4)


def test_resnet18_size_and_layout():
  spec = models.build_model('resnet18', (32, 32, 3), 10)
  # torchvision-style CIFAR ResNet-18 (kuangliu/pytorch-cifar): 11,173,962
  # parameters with affine norms; GroupNorm has as many as BatchNorm.
  assert spec.num_parameters == 11_173_962
  convs = [s for s in spec.shapes if len(s) == 4]
  assert len(convs) == 1 + 8 * 2 + 3  # stem, 8 blocks x 2, 3 projections
  weights = spec.init(0)
  for i, (w, shape) in enumerate(zip(weights, spec.shapes)):
    assert w.shape == shape
    if i in spec.ones:
      assert np.all(w == 1.0) and len(shape) == 1
  assert len(spec.ones) == 1 + 8 * 2 + 3  # one scale per norm


def test_resnet18_forward_and_per_example_gradients():
  spec = models.build_model('resnet18', (8, 8, 3), 10)  # small images: fast
  weights = [tf.constant(w) for w in spec.init(1)]
  x = tf.random.stateless_normal([3, 8, 8, 3], seed=[1, 2])
  y = tf.constant([0, 3, 9])
  logits = spec.apply(weights, x)
  assert logits.shape == (3, 10)
  # GroupNorm has no batch statistics: an example's logits do not depend on
  # the rest of the batch (what per-example clipping needs; BatchNorm fails).
  np.testing.assert_allclose(spec.apply(weights, x[:1]).numpy(),
                             logits[:1].numpy(), rtol=1e-4, atol=1e-5)
  grads = dp_sgd.per_example_gradients(spec, weights, x, y)
  for j in range(3):
    with tf.GradientTape() as tape:
      tape.watch(weights)
      loss = models.loss_fn(spec.apply(weights, x[j:j + 1]), y[j:j + 1])
    expected = tape.gradient(loss, weights)
    for g, e in zip(grads, expected):
      np.testing.assert_allclose(g[j].numpy(), e.numpy(), rtol=1e-3,
                                 atol=1e-5)
