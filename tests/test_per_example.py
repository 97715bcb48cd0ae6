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
"""Tests of tff_hdp/per_example.py against TF's own per-example gradients."""

import numpy as np
import pytest
import tensorflow as tf

from tff_hdp import layers
from tff_hdp import models
from tff_hdp import per_example

# (model, input shape, classes): every model and padding the package uses;
# ResNet-18 on 9 x 9 for its stride-2 SAME convolutions of odd and even
# sizes, and GroupNorm.
MODELS = [('fc', (6, 5), 3), ('cnn', (12, 12), 5), ('cnn5', (28, 28), 10),
          ('lenet', (16, 16, 3), 4), ('resnet18', (9, 9, 3), 3)]


def _reference(spec, weights, x, y):
  """TF's gradient of each example's loss alone: a `GradientTape` per
  example (a Python loop, so that the reference shares nothing with the
  batched pass; `vectorized_map` of it gives the same numbers)."""
  grads = []
  for j in range(int(tf.shape(y)[0])):
    with tf.GradientTape() as tape:
      tape.watch(weights)
      loss = models.loss_fn(spec.apply(weights, x[j:j + 1]), y[j:j + 1])
    grads.append(tape.gradient(loss, weights))
  return [tf.stack(g) for g in zip(*grads)]


def _problem(name, shape, classes, batch, seed=0):
  spec = models.build_model(name, shape, classes)
  rng = np.random.default_rng(seed)
  # Non-zero biases, so that no ReLU is dead everywhere by symmetry.
  weights = [tf.constant(w + rng.normal(scale=0.05, size=w.shape)
                         .astype(np.float32)) for w in spec.init(seed)]
  x = tf.constant(rng.random((batch,) + tuple(shape), np.float32))
  y = tf.constant(rng.integers(0, classes, batch).astype(np.int32))
  return spec, weights, x, y


def _close(ours, ref, rtol=1e-5):
  for a, b in zip(ours, ref):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    scale = max(np.abs(b).max(), 1e-30)
    np.testing.assert_allclose(a, b, atol=rtol * scale, rtol=0)


@pytest.mark.parametrize('name,shape,classes', MODELS)
@pytest.mark.parametrize('batch', [1, 3])
def test_materialized_gradients_match_vectorized_map(name, shape, classes,
                                                     batch):
  if name == 'resnet18' and batch == 3:
    pytest.skip('one ResNet-18 batch size is enough (11 M parameters)')
  spec, weights, x, y = _problem(name, shape, classes, batch)
  ours = per_example.per_example_gradients(spec, weights, x, y)
  _close(ours, _reference(spec, weights, x, y))


@pytest.mark.parametrize('name,shape,classes', MODELS)
def test_norms_and_weighted_sum_match_vectorized_map(name, shape, classes):
  batch = 2 if name == 'resnet18' else 4
  spec, weights, x, y = _problem(name, shape, classes, batch, seed=1)
  ref = _reference(spec, weights, x, y)
  grads = per_example.batch_gradients(spec, weights, x, y)
  ref_norms = np.sqrt(sum(np.sum(np.reshape(g, (batch, -1))**2, 1)
                          for g in ref))
  np.testing.assert_allclose(np.sqrt(grads.squared_norms()), ref_norms,
                             rtol=1e-5)
  scale = tf.constant(np.linspace(-1.0, 2.0, batch), tf.float32)
  expected = [np.tensordot(scale, g, axes=1) for g in ref]
  # From the per-example gradients the norms formed, and without them (each
  # layer's batched weight gradient of the rescaled output gradients).
  _close(grads.weighted_sum(scale), expected)
  _close(per_example.batch_gradients(spec, weights, x, y).weighted_sum(scale),
         expected)


def test_ghost_norm_is_taken_where_cheaper():
  # ResNet-18's 1 x 1 and 2 x 2 positions at 9 x 9 take the ghost norm, its
  # first layers do not, and neither do cnn5's convolutions; the norms
  # agree with TF's either way (test above).
  spec, weights, x, _ = _problem('resnet18', (9, 9, 3), 3, 2)
  with layers.record() as recorded:
    spec.apply(weights, x)
  ghost = [per_example._use_ghost_norm(l) for l in recorded
           if l.kind == layers.LINEAR and l.kernel_size is not None]
  assert any(ghost) and not all(ghost)
  spec5, w5, x5, _ = _problem('cnn5', (28, 28), 10, 2)
  with layers.record() as recorded:
    spec5.apply(w5, x5)
  assert [per_example._use_ghost_norm(l) for l in recorded] == [
      False, False, True]


@pytest.mark.parametrize('name,shape,classes', MODELS[1:4])
def test_patches_give_the_same_per_example_gradients(name, shape, classes):
  spec, weights, x, y = _problem(name, shape, classes, 3)
  grads = per_example.batch_gradients(spec, weights, x, y)
  _close(grads.materialize('patches'), grads.materialize('taps'))


@pytest.mark.parametrize('name,shape,classes', MODELS)
def test_no_loop_over_the_examples(name, shape, classes):
  # Norms, weighted sum and per-example gradients are batched ops: no
  # `while_loop` (a `map_fn` or `vectorized_map`'s fallback) in the graph.
  spec, weights, x, y = _problem(name, shape, classes, 2)

  @tf.function
  def everything(w, x, y):
    grads = per_example.batch_gradients(spec, w, x, y)
    return (grads.squared_norms(), grads.weighted_sum(tf.ones([2])),
            grads.materialize())

  graph = everything.get_concrete_function(weights, x, y).graph
  loops = [op.name for op in graph.get_operations()
           if op.type in ('While', 'StatelessWhile')]
  assert not loops


def test_zero_input_and_single_example():
  spec, weights, _, y = _problem('cnn5', (28, 28), 10, 1)
  x = tf.zeros([1, 28, 28])
  _close(per_example.per_example_gradients(spec, weights, x, y),
         _reference(spec, weights, x, y))
  zero = [tf.zeros_like(w) for w in weights]
  grads = per_example.batch_gradients(spec, zero, x, y)
  assert np.all(np.asarray(grads.squared_norms()) >= 0)
  _close(grads.materialize(), _reference(spec, zero, x, y))


def test_layers_record_exactly_the_forward():
  spec, weights, x, _ = _problem('lenet', (16, 16, 3), 4, 2)
  with layers.record() as recorded:
    logits = spec.apply(weights, x)
  np.testing.assert_array_equal(logits, spec.apply(weights, x))
  assert [l.kernel_size for l in recorded] == [(5, 5), (5, 5), None, None,
                                                None]
  with layers.record() as outer:
    with layers.record() as inner:
      spec.apply(weights, x)
    assert len(inner) == 5
  assert not outer


def test_weight_outside_any_layer_is_named():
  spec = models.fc_model((3,), 2)
  weights = [tf.constant(w) for w in spec.init(0)]
  extra = tf.constant(1.0)

  class Spec:
    def apply(self, w, x):
      return spec.apply(w[:4], x) * w[4]

  with pytest.raises(ValueError, match=r'weights \[4\] are not'):
    per_example.batch_gradients(Spec(), weights + [extra],
                                tf.ones([2, 3]), tf.constant([0, 1]))
