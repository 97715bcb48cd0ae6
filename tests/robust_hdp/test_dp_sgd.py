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
"""Tests of tff_hdp/robust_hdp/dp_sgd.py: clipping, noise, batches, exact steps."""

import math

import numpy as np
import pytest
import tensorflow as tf

from tff_hdp import models
from tff_hdp.privacy import mechanism_key
from tff_hdp.robust_hdp import audit
from tff_hdp.robust_hdp import dp_sgd


def _spec():
  return models.fc_model((4,), num_classes=3, hidden=5)


def _data(n, seed=0):
  rng = np.random.default_rng(seed)
  return (rng.normal(size=(n, 4)).astype(np.float32),
          rng.integers(0, 3, n).astype(np.int32))


def test_per_example_gradients_match_one_at_a_time():
  spec = _spec()
  w = [tf.constant(a) for a in spec.init(1)]
  x, y = _data(6)
  grads = dp_sgd.per_example_gradients(spec, w, tf.constant(x), tf.constant(y))
  for j in range(6):
    with tf.GradientTape() as tape:
      tape.watch(w)
      loss = models.loss_fn(spec.apply(w, x[j:j + 1]), y[j:j + 1])
    for g, ref in zip(grads, tape.gradient(loss, w)):
      np.testing.assert_allclose(g[j], ref, rtol=1e-5, atol=1e-7)


def test_clipped_sum_clips_each_record_to_c():
  c = 0.7
  query = dp_sgd.gaussian_query(c, 1.0)
  state = query.initial_global_state()
  rng = np.random.default_rng(2)
  grads = [tf.constant(rng.normal(size=(5, 3, 2)).astype(np.float32) * s)
           for s in (1.0, 0.01)]
  grads[0] = tf.tensor_scatter_nd_update(grads[0], [[4]],
                                         tf.fill([1, 3, 2], 1e-3))
  summed = dp_sgd.clipped_sum(query, state, grads)
  expected = [np.zeros((3, 2)), np.zeros((3, 2))]
  for j in range(5):
    record = [g[j].numpy().astype(np.float64) for g in grads]
    norm = math.sqrt(sum(np.sum(r**2) for r in record))
    factor = min(1.0, c / norm)
    assert (factor < 1.0) == (j < 4)  # The last record is inside the ball.
    for k in range(2):
      expected[k] += factor * record[k]
  for s, e in zip(summed, expected):
    np.testing.assert_allclose(s, e, rtol=1e-5, atol=1e-7)


def test_clipped_sum_equals_tf_privacy_preprocess_record():
  # The batched clip against the library's own, one record at a time: records
  # far outside, just outside, inside the ball, and zero.
  c = 1.3
  query = dp_sgd.gaussian_query(c, 2.0)
  state = query.initial_global_state()
  params = query.derive_sample_params(state)
  rng = np.random.default_rng(4)
  grads = [rng.normal(size=(4, 5, 3)).astype(np.float32),
           rng.normal(size=(4, 7)).astype(np.float32)]
  norms = np.sqrt(sum(np.sum(g.reshape(4, -1)**2, 1) for g in grads))
  for g in grads:
    g *= np.array([10.0, 1.01 * c, 0.5 * c, 0.0])[(slice(None),) + (
        None,) * (g.ndim - 1)] / norms[(slice(None),) + (None,) * (g.ndim - 1)]
  summed = dp_sgd.clipped_sum(query, state, [tf.constant(g) for g in grads])
  expected = [tf.zeros(g.shape[1:]) for g in grads]
  for j in range(4):
    record = query.preprocess_record(params, [tf.constant(g[j]) for g in grads])
    expected = [e + r for e, r in zip(expected, record)]
  for s, e in zip(summed, expected):
    np.testing.assert_allclose(s, e, rtol=1e-6, atol=1e-7)


def test_query_stddev_is_c_times_z():
  query = dp_sgd.gaussian_query(3.0, 1.7)
  assert float(query.initial_global_state().stddev) == pytest.approx(5.1)


def test_noised_average_has_stddev_c_z_over_b():
  # Statistical: 400 x 250 draws of (0 + N(0, (c z)^2)) / b. The sample
  # stddev of m = 100,000 normals has relative standard error 1/sqrt(2m),
  # 0.22%; we allow 1% (4.5 standard errors).
  c, z, b = 3.0, 1.3, 32.0
  summed = [tf.zeros([400, 250])]
  draws = dp_sgd.noised_average(summed, tf.constant(c * z), tf.constant(b),
                                tf.constant([7, 11], tf.int64))[0].numpy()
  assert draws.std() == pytest.approx(c * z / b, rel=0.01)
  assert abs(draws.mean()) < 5 * (c * z / b) / math.sqrt(draws.size)


def test_one_step_equals_hand_computation():
  # N = b, fixed batches, one epoch: one step on the whole (shuffled) data.
  spec = _spec()
  w0 = [tf.constant(a) for a in spec.init(3)]
  x, y = _data(8)
  c, z, lr = 0.5, 0.9, 0.3
  settings = dp_sgd.DpSgdSettings(clip=c, learning_rate=lr, local_epochs=1,
                                  poisson=False)
  key = tf.constant([5, 6], tf.int64)
  delta = dp_sgd.client_update(spec, w0, x, y, batch_size=tf.constant(8),
                               noise_multiplier=tf.constant(z), key=key,
                               settings=settings)
  query = dp_sgd.gaussian_query(c, z)
  grads = dp_sgd.per_example_gradients(spec, w0, tf.constant(x),
                                       tf.constant(y))
  summed = dp_sgd.clipped_sum(query, query.initial_global_state(), grads)
  expected = dp_sgd.noised_average(summed, tf.constant(c * z),
                                   tf.constant(8.0), dp_sgd.noise_key(key, 0))
  for d, e in zip(delta, expected):
    np.testing.assert_allclose(d, -lr * e.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize('name,shape', [('fc', (4,)), ('cnn5', (28, 28))])
def test_empty_poisson_batch_releases_the_noise_alone(name, shape):
  # A Poisson batch is empty with probability (1 - b/N)^N ~ e^-b; the step
  # must still release N(0, (c z)^2 I) / b, through the same per-example
  # path (for cnn5 the convolutions' taps, with a batch of 0). Traced
  # without autograph, as the rounds trace it.
  spec = models.build_model(name, shape, 3)
  w = [tf.constant(a) for a in spec.init(0)]
  query = dp_sgd.gaussian_query(2.0, 1.5)
  key = tf.constant([3, 4], tf.int64)
  step = tf.function(lambda x, y: dp_sgd.private_gradient(
      spec, w, x, y, query, query.initial_global_state(), tf.constant(16.0),
      key), autograph=False)
  got = step(tf.zeros((0,) + shape), tf.zeros([0], tf.int32))
  noise = dp_sgd.noised_average([tf.zeros_like(v) for v in w],
                                tf.constant(2.0 * 1.5), tf.constant(16.0), key)
  for g, e in zip(got, noise):
    np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize('private', [True, False])
def test_the_step_is_a_graph_of_its_own(private):
  # `dp_sgd.own_graph`: traced, each step is a function of its own that the
  # loop calls (not inlined into the loop's body), where oneDNN's rewrite
  # gives every pooling gradient its own kernel; the same update as eagerly.
  spec = models.build_model('cnn5', (8, 8), 3)
  x, y = np.random.default_rng(0).random((12, 8, 8), np.float32), np.arange(
      12, dtype=np.int32) % 3
  args = dict(batch_size=tf.constant(4),
              noise_multiplier=tf.constant(0.5) if private else None,
              key=tf.constant([1, 2], tf.int64),
              settings=dp_sgd.DpSgdSettings())
  update = tf.function(lambda w: dp_sgd.client_update(spec, w, x, y, **args),
                       autograph=False)
  weights = [tf.constant(w) for w in spec.init(0)]
  for got, want in zip(update(weights),
                       dp_sgd.client_update(spec, weights, x, y, **args)):
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
  graph = update.get_concrete_function(weights).graph.as_graph_def()
  functions = {f.signature.name: f for f in graph.library.function}

  def reached(name):  # The ops of function `name` and of those it calls.
    ops = set()
    for n in functions[name].node_def:
      ops.add(n.op)
      for v in n.attr.values():
        if v.func.name in functions:
          ops |= reached(v.func.name)
    return ops

  (loop,) = [n for n in graph.node if n.op in ('While', 'StatelessWhile')]
  body = functions[loop.attr['body'].func.name]
  calls = [n.attr['f'].func.name for n in body.node_def
           if n.op in ('PartitionedCall', 'StatefulPartitionedCall')]
  assert len(calls) == 1 and functions[calls[0]].attr['_noinline'].b
  assert 'MaxPoolGrad' in reached(calls[0])
  assert 'MaxPoolGrad' not in {n.op for n in body.node_def}


def test_steps_per_round():
  assert dp_sgd.steps_per_round(2400, 64, 1) == 38
  assert dp_sgd.steps_per_round(2400, 32, 2) == 150
  with pytest.raises(ValueError, match='batch_size'):
    dp_sgd.steps_per_round(10, 0, 1)


def test_poisson_batches_have_rate_b_over_n():
  # Statistical: 2,000 steps of Poisson sampling with q = 0.25 on 40
  # examples: mean batch size 10, standard error sqrt(40 q (1-q) / 2000) =
  # 0.061; we allow 0.3 (5 standard errors). The steps' draws in one
  # graph: the same stateless draws as 2,000 eager calls, at a call's cost.
  @tf.function(autograph=False)
  def sizes():
    return tf.map_fn(
        lambda s: tf.size(dp_sgd.batch_indices(
            s, 40, 10, 4, tf.constant([1, 2], tf.int64), True)),
        tf.range(2000), fn_output_signature=tf.int32)

  assert np.mean(sizes()) == pytest.approx(10.0, abs=0.3)


def test_shuffled_batches_cover_each_epoch_once():
  idx = [dp_sgd.batch_indices(
      tf.constant(s), 10, 4, 3, tf.constant([1, 2], tf.int64), False).numpy()
         for s in range(6)]
  assert [len(i) for i in idx] == [4, 4, 2, 4, 4, 2]
  for epoch in (idx[:3], idx[3:]):
    assert sorted(np.concatenate(epoch).tolist()) == list(range(10))
  assert not np.array_equal(np.concatenate(idx[:3]), np.concatenate(idx[3:]))


def test_same_key_same_update_other_key_other_noise():
  spec = _spec()
  w0 = [tf.constant(a) for a in spec.init(0)]
  x, y = _data(30)
  run = lambda key: dp_sgd.client_update(
      spec, w0, x, y, batch_size=tf.constant(8),
      noise_multiplier=tf.constant(1.0), key=tf.constant(key, tf.int64),
      settings=dp_sgd.DpSgdSettings())
  a, b, c = run([1, 2]), run([1, 2]), run([1, 3])
  assert all(np.array_equal(u, v) for u, v in zip(a, b))
  assert not np.array_equal(a[0], c[0])


def test_non_private_is_plain_sgd():
  spec = _spec()
  w0 = [tf.constant(a) for a in spec.init(0)]
  x, y = _data(8)
  delta = dp_sgd.client_update(
      spec, w0, x, y, batch_size=tf.constant(8), noise_multiplier=None,
      key=tf.constant([1, 1], tf.int64),
      settings=dp_sgd.DpSgdSettings(learning_rate=0.5))
  with tf.GradientTape() as tape:
    tape.watch(w0)
    loss = models.loss_fn(spec.apply(w0, x), y)
  for d, g in zip(delta, tape.gradient(loss, w0)):
    np.testing.assert_allclose(d, -0.5 * g.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize('field,value,message', [
    ('clip', 0.0, 'clip'), ('learning_rate', -1.0, 'learning_rate'),
    ('local_epochs', 0, 'local_epochs')])
def test_bad_settings(field, value, message):
  settings = dp_sgd.DpSgdSettings()._replace(**{field: value})
  with pytest.raises(ValueError, match=message):
    dp_sgd.check_settings(settings)


@pytest.mark.parametrize('model,shape', [('fc', (4,)), ('cnn5', (12, 12))])
def test_private_gradient_equals_tf_privacy_on_each_example(model, shape):
  # The batched path (tff_hdp.per_example: norms, then the rescaled batch
  # gradient, canary records joining the clip) against an independent one:
  # each example's own GradientTape, TF Privacy's preprocess_record, its
  # accumulate_preprocessed_record, and the same noise draw.
  spec = models.build_model(model, shape, 3)
  rng = np.random.default_rng(2)
  w = [tf.constant(a) for a in spec.init(4)]
  x = tf.constant(rng.normal(size=(5,) + shape).astype(np.float32))
  y = tf.constant(rng.integers(0, 3, 5).astype(np.int32))
  extra = [tf.constant(rng.normal(size=(2,) + tuple(s)).astype(np.float32))
           for s in spec.shapes]
  c, z, key = 0.05, 1.1, tf.constant([3, 9], tf.int64)  # c binds for most records.
  query = dp_sgd.gaussian_query(c, z)
  state = query.initial_global_state()
  gradient, release = audit.audited_gradient(
      spec, w, (x, y), query, state, tf.constant(4.0), key, extra)
  params = query.derive_sample_params(state)
  records = []
  for j in range(5):
    with tf.GradientTape() as tape:
      tape.watch(w)
      loss = models.loss_fn(spec.apply(w, x[j:j + 1]), y[j:j + 1])
    records.append(tape.gradient(loss, w))
  records += [[e[k] for e in extra] for k in range(2)]
  total = query.initial_sample_state(w)
  for r in records:
    total = query.accumulate_preprocessed_record(
        total, query.preprocess_record(params, r))
  noised = dp_sgd.noised_sum(total, tf.constant(c * z), key)
  for got, want in zip(gradient, noised):
    np.testing.assert_allclose(got, want / 4.0, rtol=1e-5, atol=1e-7)
  canaries = query.initial_sample_state(w)
  for r in records[5:]:
    canaries = query.accumulate_preprocessed_record(
        canaries, query.preprocess_record(params, r))
  noise = dp_sgd.noised_sum([tf.zeros_like(v) for v in w],
                            tf.constant(c * z), key)
  for got, cn, n in zip(release, canaries, noise):
    np.testing.assert_allclose(got, cn + n, rtol=1e-4, atol=1e-6)


def test_every_step_divides_by_b_not_the_realised_batch(monkeypatch):
  # The fixed denominator of Poisson-sampled DP-SGD: each step's noised sum
  # is divided by b_i whatever the batch's realised size (which would reveal
  # who was sampled). A stand-in `private_gradient` returns its denominator
  # and records each step's batch size; K ceil(N/b) = 5 steps of lr 1 then
  # move every weight by -5 b.
  seen = []

  def spy(spec, weights, xb, yb, query, global_state, denominator, key):
    del spec, xb, query, global_state, key
    seen.append(tf.size(yb))
    return [tf.fill(tf.shape(w), denominator) for w in weights]

  monkeypatch.setattr(dp_sgd, 'private_gradient', spy)
  spec = _spec()
  x, y = _data(40)
  settings = dp_sgd.DpSgdSettings(clip=1.0, learning_rate=1.0, poisson=True)
  delta = dp_sgd.client_update(
      spec, spec.init(0), tf.constant(x), tf.constant(y),
      batch_size=tf.constant(8), noise_multiplier=tf.constant(1.0),
      key=tf.constant([4, 2], tf.int64), settings=settings)
  for d in delta:
    np.testing.assert_allclose(d.numpy(), -5 * 8.0)
  sizes = [int(s) for s in seen]
  assert len(sizes) == 5 and len(set(sizes)) > 1, sizes  # Sizes varied.


def test_keys_of_batches_and_noise():
  # The derivations `client_update` draws from (and the cohort with it,
  # tff_hdp/robust_hdp/cohort.py), each by `mechanism_key.fold_in` (128
  # bits kept): step s's Poisson draws from fold_in(fold_in(k, s), 0), its
  # noise from fold_in(fold_in(k, s), 1) and tensor i's from fold_in(that,
  # i); epoch e's shuffle from fold_in(k, -1 - e).
  fold = mechanism_key.fold_in
  key, step = tf.constant([5, -7], tf.int64), tf.constant(3)
  np.testing.assert_array_equal(dp_sgd.poisson_key(key, step),
                                fold(fold(key, step), 0))
  np.testing.assert_array_equal(dp_sgd.noise_key(key, step),
                                fold(fold(key, step), 1))
  np.testing.assert_array_equal(dp_sgd.shuffle_key(key, step),
                                fold(key, -4))
  draw = tf.random.stateless_uniform([12], seed=fold(fold(key, step), 0))
  np.testing.assert_array_equal(
      dp_sgd.batch_indices(step, 12, 6, 2, key, True),
      np.flatnonzero(draw.numpy() < 0.5))
  order = tf.random.experimental.stateless_shuffle(tf.range(12),
                                                   seed=fold(key, -2))
  np.testing.assert_array_equal(
      dp_sgd.batch_indices(tf.constant(3), 12, 5, 3, key, False), order[:5])
  noise = dp_sgd.gaussian_noise([(2, 3), (4,)], tf.constant(1.5), key)
  for i, (shape, e) in enumerate(zip([(2, 3), (4,)], noise)):
    np.testing.assert_array_equal(e, tf.random.stateless_normal(
        shape, seed=fold(key, i), stddev=1.5))
  # TensorFlow's stateless_fold_in(k, d) would be [a random word, d]: here
  # neither word of a derived key is the data folded in last.
  for derived, data in ((dp_sgd.poisson_key(key, step), 0),
                        (dp_sgd.noise_key(key, step), 1),
                        (dp_sgd.shuffle_key(key, step), -4)):
    assert data not in derived.numpy(), derived
