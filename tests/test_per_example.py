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

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from tff_hdp import layers
from tff_hdp import models
from tff_hdp import per_example
from tff_hdp.robust_hdp import dp_sgd

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


# cnn5, LeNet and ResNet-18 reach every form of a layer (fc's dense layers
# and cnn's STACKED and GROUPED convolutions are also cnn5's).
@pytest.mark.parametrize('name,shape,classes', MODELS[2:])
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


def test_weight_outside_any_layer_takes_the_general_path():
  # A weight no recorded layer uses (w[4]), or one two layers use (w[0]):
  # `recorded_gradients` refuses them by name, `batch_gradients` forms the
  # per-example gradients by `vectorized_map` instead.
  spec = models.fc_model((3,), 2)
  weights = [tf.constant(w + 0.1) for w in spec.init(0)]
  x, y = tf.constant([[1.0, -2.0, 0.5], [0.3, 0.2, -1.0]]), tf.constant([0, 1])

  class Scaled:
    def apply(self, w, x):
      return spec.apply(w[:4], x) * w[4]

  class Twice:
    def apply(self, w, x):
      return spec.apply(w, spec.apply(w, x) @ tf.ones([2, 3]))

  for model, w, message in [
      (Scaled(), weights + [tf.constant(1.5)], r'weights \[4\] are not'),
      (Twice(), weights, r'weights \[0, 1, 2, 3\] are used twice')]:
    with pytest.raises(ValueError, match=message):
      per_example.recorded_gradients(
          lambda v, model=model: tf.reduce_sum(model.apply(v, x)), w)
    grads = per_example.batch_gradients(model, w, x, y)
    assert isinstance(grads, per_example.MaterializedGradients)
    _close(grads.materialize(), _reference(model, w, x, y))


# Models of plain TF ops (no tff_hdp.layers), as one adapted from Keras.


def _plain_fc_forward(weights, x, training, seed):
  """`models._fc_forward` with `tf.matmul` for `layers.dense`."""
  del training, seed
  w1, b1, w2, b2 = weights
  x = tf.reshape(tf.cast(x, tf.float32), [tf.shape(x)[0], w1.shape[0]])
  return tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2


def _plain_cnn5_forward(weights, x, training, seed):
  """`models._cnn5_forward` with `tf.nn.conv2d` and `tf.matmul`."""
  del training, seed
  c1, cb1, c2, cb2, w, b = weights
  x = tf.cast(x, tf.float32)
  if x.shape.rank == 3:
    x = x[..., tf.newaxis]
  for kernel, bias in ((c1, cb1), (c2, cb2)):
    x = tf.nn.relu(tf.nn.conv2d(x, kernel, 1, 'SAME') + bias)
    x = tf.nn.max_pool2d(x, ksize=2, strides=2, padding='VALID')
  return tf.matmul(tf.reshape(x, [tf.shape(x)[0], w.shape[0]]), w) + b


PLAIN = {'fc': _plain_fc_forward, 'cnn5': _plain_cnn5_forward}


def _plain_copy(spec):
  """`spec` with its forward in plain TF: the same numbers, no layers."""
  return dataclasses.replace(spec, forward=PLAIN[spec.name])


def _strided_forward(weights, x, training, seed):
  """A stride-2 VALID convolution, tanh, a dense layer and a temperature."""
  del training, seed
  kernel, bias, w, b, temperature = weights
  x = tf.tanh(tf.nn.conv2d(x[..., tf.newaxis], kernel, 2, 'VALID') + bias)
  x = tf.reshape(x, [tf.shape(x)[0], w.shape[0]])
  return (tf.matmul(x, w) + b) * temperature


def _strided_model():
  return models.ModelSpec(
      name='strided', input_shape=(9, 9), num_classes=3,
      shapes=((3, 3, 1, 4), (4,), (64, 3), (3,), ()),
      forward=_strided_forward, ones=frozenset({4}))


def _plain_problem(batch, seed=0):
  spec = _strided_model()
  rng = np.random.default_rng(seed)
  weights = [tf.constant(w + rng.normal(scale=0.05, size=np.shape(w))
                         .astype(np.float32)) for w in spec.init(seed)]
  x = tf.constant(rng.random((batch, 9, 9), np.float32))
  y = tf.constant(rng.integers(0, 3, batch).astype(np.int32))
  return spec, weights, x, y


def _check_against_reference(grads, ref, batch):
  ref_norms = np.sqrt(sum(np.sum(np.reshape(g, (batch, -1))**2, 1)
                          for g in ref))
  np.testing.assert_allclose(np.sqrt(grads.squared_norms()), ref_norms,
                             rtol=1e-5)
  scale = tf.constant(np.linspace(-1.0, 2.0, batch), tf.float32)
  _close(grads.weighted_sum(scale),
         [np.tensordot(scale, g, axes=1) for g in ref])
  _close(grads.materialize(), ref)


@pytest.mark.parametrize('batch', [1, 3])
def test_plain_tf_model_matches_each_examples_own_gradient(batch):
  spec, weights, x, y = _plain_problem(batch)
  grads = per_example.batch_gradients(spec, weights, x, y)
  assert isinstance(grads, per_example.MaterializedGradients)
  ref = _reference(spec, weights, x, y)
  _check_against_reference(grads, ref, batch)
  _close(per_example.per_example_gradients(spec, weights, x, y), ref)


def test_plain_tf_model_in_a_tf_function_without_autograph():
  # As DP-SGD runs it (`process._client_function`, and TFF's tracing).
  spec, weights, x, y = _plain_problem(4, seed=2)

  @tf.function(autograph=False)
  def everything(w, x, y):
    grads = per_example.batch_gradients(spec, w, x, y)
    return (grads.squared_norms(), grads.weighted_sum(tf.ones([4])),
            grads.materialize())

  norms, summed, materialized = everything(weights, x, y)
  ref = _reference(spec, weights, x, y)
  _check_against_reference(
      per_example.MaterializedGradients(materialized), ref, 4)
  _close(summed, [np.sum(g, 0) for g in ref])
  np.testing.assert_allclose(
      norms, per_example.MaterializedGradients(ref).squared_norms(),
      rtol=1e-5)


@pytest.mark.parametrize('name,shape,classes',
                         [('fc', (6, 5), 3), ('cnn5', (12, 12), 5)])
def test_factored_path_equals_the_general_one(name, shape, classes):
  spec, weights, x, y = _problem(name, shape, classes, 4, seed=3)
  plain = _plain_copy(spec)
  fast = per_example.batch_gradients(spec, weights, x, y)
  general = per_example.batch_gradients(plain, weights, x, y)
  assert isinstance(fast, per_example.BatchGradients)
  assert isinstance(general, per_example.MaterializedGradients)
  np.testing.assert_allclose(fast.squared_norms(), general.squared_norms(),
                             rtol=1e-5)
  scale = tf.constant([0.5, -1.0, 2.0, 0.0])
  _close(fast.weighted_sum(scale), general.weighted_sum(scale))
  _close(fast.materialize(), general.materialize())
  _close(per_example.vectorized_gradients(spec, weights, x, y),
         general.materialize())


def _client_update(spec, w, x, y):
  return dp_sgd.client_update(
      spec, w, x, y, batch_size=tf.constant(4),
      noise_multiplier=tf.constant(1.0), key=tf.constant([1, 2], tf.int64),
      settings=dp_sgd.DpSgdSettings(clip=0.1, learning_rate=0.5,
                                    local_epochs=2))


def test_dp_sgd_with_a_plain_tf_model_in_a_tf_function():
  # Poisson batches, clipping binding, the noise: the plain copy's DP-SGD
  # round equals the package model's, step for step.
  spec, weights, x, y = _problem('cnn5', (12, 12), 5, 10, seed=4)
  run = tf.function(_client_update, autograph=False)
  fast = run(spec, weights, x, y)
  assert np.abs(np.asarray(fast[0])).max() > 0
  _close(run(_plain_copy(spec), weights, x, y), fast)


def test_dp_sgd_with_a_plain_tf_model_in_tff(tff_runtime):
  del tff_runtime  # Installs the context that runs the computations.
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  spec, weights, x, y = _problem('fc', (6, 5), 3, 10, seed=5)

  def computation(model):
    @tff.tensorflow.computation(
        tff.types.to_type([(np.float32, s) for s in spec.shapes]),
        tff.TensorType(np.float32, x.shape), tff.TensorType(np.int32, y.shape))
    def update(w, x, y):
      return _client_update(model, w, x, y)
    return update

  args = ([w.numpy() for w in weights], x.numpy(), y.numpy())
  plain = computation(_plain_copy(spec))(*args)
  fast = computation(spec)(*args)
  assert np.abs(np.asarray(fast[0])).max() > 0
  _close(plain, fast)


# The forms of a convolution's per-example norms, each against autodiff.


@pytest.mark.parametrize('form', [per_example.GHOST, per_example.GROUPED,
                                  per_example.STACKED, per_example.TAPS])
@pytest.mark.parametrize('name,shape,classes', [('cnn5', (12, 12), 5),
                                                ('lenet', (16, 16, 3), 4)])
def test_each_conv_form_matches_autodiff(monkeypatch, form, name, shape,
                                         classes):
  # Every form on every convolution it applies to (STACKED: one input
  # channel; GROUPED: where TensorFlow has grouped filter gradients).
  if form == per_example.GROUPED and not per_example.grouped_filter_gradients():
    pytest.skip('no grouped filter gradients on this device')
  if form == per_example.STACKED and name == 'lenet':
    pytest.skip('STACKED takes one input channel')
  monkeypatch.setattr(
      per_example, 'conv_form',
      lambda layer: form if (form != per_example.STACKED or
                             per_example._kernel_shape(layer)[2] == 1)
      else per_example.TAPS)
  spec, weights, x, y = _problem(name, shape, classes, 3, seed=6)
  ref = _reference(spec, weights, x, y)
  grads = per_example.batch_gradients(spec, weights, x, y)
  ref_norms = np.sqrt(sum(np.sum(np.reshape(g, (3, -1))**2, 1) for g in ref))
  np.testing.assert_allclose(np.sqrt(grads.squared_norms()), ref_norms,
                             rtol=1e-5)
  scale = tf.constant([0.5, -1.0, 2.0])
  _close(grads.weighted_sum(scale),
         [np.tensordot(scale, g, axes=1) for g in ref])


def test_conv_form_is_chosen_per_layer():
  # cnn5: its one-channel first convolution STACKED, its second GROUPED
  # (TAPS without grouped filter gradients); ResNet-18's late, small layers
  # the ghost norm.
  spec, weights, x, _ = _problem('cnn5', (28, 28), 10, 2)
  with layers.record() as recorded:
    spec.apply(weights, x)
  second = (per_example.GROUPED if per_example.grouped_filter_gradients()
            else per_example.TAPS)
  assert [per_example.conv_form(l) for l in recorded[:2]] == [
      per_example.STACKED, second]
  spec, weights, x, _ = _problem('resnet18', (9, 9, 3), 3, 2)
  with layers.record() as recorded:
    spec.apply(weights, x)
  forms = {per_example.conv_form(l) for l in recorded
           if l.kind == layers.LINEAR and l.kernel_size is not None}
  assert forms == {per_example.GHOST, second}


def test_grouped_filter_gradients_probe_runs_whoever_asks():
  # First asked eagerly, while a tf.function is traced, or while a graph
  # of TF1's kind is built (as TFF's computations are): the same answer.
  eager = per_example.grouped_filter_gradients()
  per_example.grouped_filter_gradients.cache_clear()

  @tf.function
  def traced():
    return tf.constant(per_example.grouped_filter_gradients())

  assert bool(traced()) == eager
  per_example.grouped_filter_gradients.cache_clear()
  with tf.Graph().as_default():
    assert per_example.grouped_filter_gradients() == eager


# Grouped layers: G models at once, each on its own rows.


def _grouped_model(weights, x):
  """Two grouped convolutions (SAME 3x3, VALID 2x2) and a grouped dense."""
  k1, b1, k2, b2, w, b = weights
  h = tf.nn.relu(layers.grouped_conv2d(x, k1, b1, padding='SAME'))
  h = tf.tanh(layers.grouped_conv2d(h, k2, b2, padding='VALID'))
  s = tf.shape(h)
  return layers.grouped_dense(tf.reshape(h, [s[0], s[1], -1]), w, b)


def _grouped_problem(groups=3, rows=4, seed=0):
  rng = np.random.default_rng(seed)
  shapes = [(3, 3, 2, 4), (4,), (2, 2, 4, 3), (3,), (4 * 4 * 3, 5), (5,)]
  weights = [tf.constant(rng.normal(scale=0.3, size=(groups,) + s)
                         .astype(np.float32)) for s in shapes]
  x = tf.constant(rng.normal(size=(groups, rows, 5, 5, 2)).astype(np.float32))
  y = tf.constant(rng.integers(0, 5, (groups, rows)).astype(np.int32))
  return weights, x, y


def _losses(logits, y):
  return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                        logits=logits)


def test_grouped_layers_compute_each_groups_own_layer():
  weights, x, _ = _grouped_problem()
  k1, b1, k2, b2, w, b = weights
  for g in range(3):
    h = tf.nn.relu(tf.nn.conv2d(x[g], k1[g], 1, 'SAME') + b1[g])
    h = tf.tanh(tf.nn.conv2d(h, k2[g], 1, 'VALID') + b2[g])
    want = tf.reshape(h, [4, -1]) @ w[g] + b[g]
    np.testing.assert_allclose(_grouped_model(weights, x)[g], want,
                               rtol=1e-5, atol=1e-5)


def test_grouped_convolution_gradients_match_each_groups_own():
  # The custom gradient of `layers.grouped_conv2d` (input: a grouped
  # forward convolution; kernel: tap by tap) against TF's gradient of
  # each group's own convolution, for SAME and VALID, odd and even kernels.
  rng = np.random.default_rng(1)
  for padding, k in (('SAME', 3), ('SAME', 2), ('VALID', 3), ('SAME', 5)):
    x = tf.constant(rng.normal(size=(3, 2, 6, 6, 2)).astype(np.float32))
    kernel = tf.constant(rng.normal(size=(3, k, k, 2, 4)).astype(np.float32))
    up = tf.constant(rng.normal(size=tf.shape(
        layers.grouped_conv2d(x, kernel, padding=padding))).astype(
            np.float32))
    with tf.GradientTape() as tape:
      tape.watch([x, kernel])
      total = tf.reduce_sum(layers.grouped_conv2d(x, kernel, padding=padding)
                            * up)
    dx, dk = tape.gradient(total, [x, kernel])
    for g in range(3):
      with tf.GradientTape() as tape:
        tape.watch([x, kernel])
        total = tf.reduce_sum(
            tf.nn.conv2d(x[g], kernel[g], 1, padding) * up[g])
      want_x, want_k = tape.gradient(total, [x, kernel])
      np.testing.assert_allclose(dx[g], want_x[g], rtol=1e-4, atol=1e-4)
      np.testing.assert_allclose(dk[g], want_k[g], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize('form', [per_example.GROUPED, per_example.TAPS,
                                  per_example.GHOST])
def test_grouped_rows_match_each_rows_own_gradient(monkeypatch, form):
  # Per row of every group: norms, the clipped sum per group and the
  # per-example gradients, against each row's own loss on its group's
  # model (a GradientTape per row).
  if form == per_example.GROUPED and not per_example.grouped_filter_gradients():
    pytest.skip('no grouped filter gradients on this device')
  monkeypatch.setattr(per_example, 'conv_form', lambda layer: form)
  weights, x, y = _grouped_problem()
  grads = per_example.recorded_gradients(
      lambda w: tf.reduce_sum(_losses(_grouped_model(w, x), y)), weights)
  ref = [[None] * 4 for _ in range(3)]
  for g in range(3):
    for j in range(4):
      with tf.GradientTape() as tape:
        tape.watch(weights)
        loss = _losses(_grouped_model(weights, x[:, j:j + 1]), y[:, j:j + 1])
        loss = loss[g, 0]
      ref[g][j] = [d[g] for d in tape.gradient(loss, weights)]
  norms = np.sqrt(grads.squared_norms())
  assert norms.shape == (3, 4)
  for g in range(3):
    for j in range(4):
      want = np.sqrt(sum(np.sum(np.square(d)) for d in ref[g][j]))
      np.testing.assert_allclose(norms[g, j], want, rtol=1e-5)
  scale = tf.constant(np.linspace(-1, 2, 12).reshape(3, 4), tf.float32)
  for i, summed in enumerate(grads.weighted_sum(scale)):
    for g in range(3):
      want = sum(float(scale[g, j]) * ref[g][j][i] for j in range(4))
      np.testing.assert_allclose(summed[g], want, rtol=1e-4, atol=1e-5)
  for i, per_row in enumerate(grads.materialize()):
    for g in range(3):
      for j in range(4):
        np.testing.assert_allclose(per_row[g, j], ref[g][j][i], rtol=1e-4,
                                   atol=1e-5)
