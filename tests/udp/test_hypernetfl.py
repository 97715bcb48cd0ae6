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
"""UDP-Alg's maths: generated shapes, VJPs against per-user tapes, local SGD
against a loop, clipping and the weighted estimator by hand, the noise
stddev statistically, Noiseless = UDP with z = 0 and a clip that never
binds."""

import numpy as np
import pytest
import tensorflow as tf

from tff_hdp import models
from tff_hdp.udp import hypernetfl
from tff_hdp.udp import hypernetwork


def _net(target=None, dim=3):
  target = target or models.fc_model((4, 4), num_classes=3, hidden=5)
  return hypernetwork.HyperNetwork(target, embedding_dim=dim, hidden=7)


def _constants(**kwargs):
  """The estimator's constants (the learning rates unused)."""
  return hypernetfl.RoundConstants(local_learning_rate=0.0,
                                   hyper_learning_rate=0.0,
                                   embedding_learning_rate=0.0, **kwargs)


def test_generated_weights_have_the_target_shapes():
  net = hypernetwork.HyperNetwork(models.lenet_model((32, 32, 3), 10), 26)
  phi = net.init(0)
  assert [p.shape for p in phi] == [tuple(s) for s in net.shapes]
  thetas = net.generate(phi, net.init_embeddings(4, 0)[:3])
  assert [tuple(t.shape) for t in thetas] == [
      (3,) + tuple(s) for s in net.target.shapes]
  assert net.target.num_parameters == 121182  # pFedHN's LeNet on CIFAR-10.
  assert hypernetwork.default_embedding_dim(100) == 26


def test_vjps_match_one_tape_per_user():
  net = _net()
  phi = [tf.constant(p) for p in net.init(1)]
  v = tf.constant(net.init_embeddings(4, 1))
  rng = np.random.default_rng(0)
  deltas = [tf.constant(rng.normal(size=(4,) + s).astype(np.float32))
            for s in net.target.shapes]
  per_user, v_grads = net.user_vjps(phi, v, deltas)
  for u in range(4):
    with tf.GradientTape(persistent=True) as tape:
      tape.watch(phi)
      vu = v[u:u + 1]
      tape.watch(vu)
      theta = net.generate(phi, vu)
      inner = tf.add_n([tf.reduce_sum(t[0] * d[u])
                        for t, d in zip(theta, deltas)])
    for got, want in zip(per_user, tape.gradient(inner, phi)):
      np.testing.assert_allclose(got[u], want, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(v_grads[u], tape.gradient(inner, vu)[0],
                               rtol=1e-4, atol=1e-6)


def test_vjp_against_finite_differences():
  # (d theta/d v)^T Delta is the derivative of <h(phi, v), Delta> along v.
  net = _net(dim=2)
  phi = [tf.constant(p, tf.float64) for p in net.init(2)]
  v = tf.constant(net.init_embeddings(1, 2), tf.float64)
  rng = np.random.default_rng(1)
  deltas = [tf.constant(rng.normal(size=(1,) + s))
            for s in net.target.shapes]
  _, v_grad = net.user_vjps(phi, v, deltas)

  def inner(vec):
    return sum(float(tf.reduce_sum(t * d))
               for t, d in zip(net.generate(phi, vec), deltas))

  h = 1e-6
  for j in range(2):
    step = np.zeros((1, 2))
    step[0, j] = h
    numeric = (inner(v + step) - inner(v - step)) / (2 * h)
    assert float(v_grad[0, j]) == pytest.approx(numeric, rel=1e-6)


# `local_deltas` has no branch per model: LeNet is checked on grey,
# non-square images (`models._images` adds their channel axis, and VALID
# convolutions of unequal sides), which reach all an RGB LeNet would.
@pytest.mark.parametrize('target', [
    models.fc_model((4, 4), num_classes=3, hidden=5),
    models.lenet_model((17, 18), num_classes=3),
], ids=['fc', 'lenet_gray'])
def test_local_deltas_are_k_sgd_steps_per_user(target):
  rng = np.random.default_rng(2)
  thetas = [np.stack(w) for w in zip(target.init(1), target.init(2))]
  thetas = [t + 0.1 * rng.normal(size=t.shape).astype(np.float32)
            for t in thetas]  # Biases not all zero.
  x = rng.normal(size=(2, 6) + target.input_shape).astype(np.float32)
  y = rng.integers(0, 3, (2, 6)).astype(np.int32)
  indices = rng.integers(0, 6, (3, 2, 4)).astype(np.int32)
  mask = np.ones((3, 2, 4), np.float32)
  mask[:, 1, 3] = 0.0  # User 1's batches hold 3 real examples.
  deltas = hypernetfl.local_deltas(target, thetas, x, y, indices, mask, 0.1)
  for u in range(2):
    w = [tf.constant(t[u]) for t in thetas]
    for k in range(3):
      real = indices[k, u][mask[k, u] > 0]
      with tf.GradientTape() as tape:
        tape.watch(w)
        loss = models.loss_fn(target.apply(w, x[u][real]), y[u][real])
      w = [a - 0.1 * g for a, g in zip(w, tape.gradient(loss, w))]
    for got, start, end in zip(deltas, thetas, w):
      np.testing.assert_allclose(got[u], start[u] - end.numpy(), rtol=1e-4,
                                 atol=1e-6)


def test_clipping_and_weighted_estimator_by_hand():
  rng = np.random.default_rng(3)
  grads = [rng.normal(size=(3, 4, 2)).astype(np.float32),
           rng.normal(size=(3, 5)).astype(np.float32)]
  grads[0][2] *= 1e-3  # User 2's gradient is inside the clip.
  grads[1][2] *= 1e-3
  weights = np.array([1.0, 0.5, 0.25], np.float32)
  clip = 0.7
  flat = np.concatenate([g.reshape(3, -1) for g in grads], 1)
  factors = np.minimum(1.0, clip / np.linalg.norm(flat, axis=1))
  assert factors[2] == 1.0 and factors[0] < 1.0
  clipped = hypernetfl.clip_each([tf.constant(g) for g in grads], clip)
  for got, g in zip(clipped, grads):
    np.testing.assert_allclose(got, g * factors.reshape(
        [-1] + [1] * (g.ndim - 1)), rtol=1e-5)
  total = hypernetfl.weighted_clipped_sum(grads, weights, clip)
  constants = _constants(clip=clip, noise_multiplier=0.0, max_weight=1.0,
                         denominator=2.5)
  estimate, stddev = hypernetfl.normalize(hypernetfl.gaussian_release(
      total, tf.constant([1, 2], tf.int64), constants), constants)
  assert float(stddev) == 0.0
  for got, g in zip(estimate, grads):
    want = np.tensordot(weights * factors, g, axes=1) / 2.5
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
  # Noiseless: the same weighted sum, unclipped.
  for got, g in zip(hypernetfl.weighted_clipped_sum(grads, weights, clip,
                                                    clip_and_noise=False),
                    grads):
    np.testing.assert_allclose(got, np.tensordot(weights, g, axes=1),
                               rtol=1e-5, atol=1e-7)


# Without clipping (Noiseless) only the scale differs, s_u = w_u, the same
# for any net: checked on fc; LeNet's heads are checked clipped.
@pytest.mark.parametrize('clip_and_noise,target', [
    (True, 'fc'), (False, 'fc'), (True, 'lenet')])
def test_cohort_gradient_equals_per_user_vjps_clipped(target, clip_and_noise):
  # The heads' ghost norms and matmul sum against every user's own VJP from
  # tf.vectorized_map, clipped by TF Privacy's record clip; user 4's Delta is
  # zero, user 2's small enough to be inside the clip.
  net = _net() if target == 'fc' else hypernetwork.HyperNetwork(
      models.build_model('lenet', (16, 16), 10), embedding_dim=3, hidden=8,
      hidden_layers=2)
  phi = [tf.constant(p) for p in net.init(6)]
  v = tf.constant(net.init_embeddings(5, 6))
  rng = np.random.default_rng(6)
  deltas = [rng.normal(size=(5,) + s).astype(np.float32)
            for s in net.target.shapes]
  for d in deltas:
    d[4] = 0.0
    d[2] *= 1e-4
  deltas = [tf.constant(d) for d in deltas]
  weights = tf.constant([1.0, 0.2, 0.7, 1.0, 0.4])
  per_user = net.phi_vjps(phi, v, deltas)
  want = hypernetfl.weighted_clipped_sum(per_user, weights, 0.3,
                                         clip_and_noise)
  got, norms = hypernetfl.cohort_gradient(net, phi, v, deltas, weights,
                                          clip=0.3,
                                          clip_and_noise=clip_and_noise)
  for a, b in zip(got, want):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
  flat = np.concatenate([g.numpy().reshape(5, -1) for g in per_user], 1)
  np.testing.assert_allclose(norms, np.linalg.norm(flat, axis=1), rtol=1e-5)
  assert 0.0 < norms[2] < 0.3 and norms[4] == 0.0
  assert all(np.all(np.isfinite(a)) for a in got)


@pytest.mark.parametrize('z,max_weight,clip,denominator',
                         [(5.0, 1.0, 0.1, 10.0), (1.0, 0.4, 0.2, 3.0)])
def test_noise_stddev_is_z_max_w_s_over_q_w(z, max_weight, clip, denominator):
  zeros = [tf.zeros((300, 200)), tf.zeros((1000,))]
  # The two steps phi_step takes: the release, then its division by qW.
  constants = _constants(clip=clip, noise_multiplier=z,
                         max_weight=max_weight, denominator=denominator)
  estimate, stddev = hypernetfl.normalize(hypernetfl.gaussian_release(
      zeros, tf.constant([7, 8], tf.int64), constants), constants)
  expected = z * max_weight * clip / denominator
  assert float(stddev) == pytest.approx(expected, rel=1e-6)
  noise = np.concatenate([e.numpy().ravel() for e in estimate])
  # 61,000 draws: the sample stddev is within 1% (about 3.5 sigma) of sigma.
  assert noise.std() == pytest.approx(expected, rel=0.01)
  assert abs(noise.mean()) < 4 * expected / np.sqrt(noise.size)


def _round(clip_and_noise, clip, z, key=(3, 4)):
  net = _net()
  rng = np.random.default_rng(4)
  x = rng.normal(size=(3, 5, 4, 4)).astype(np.float32)
  y = rng.integers(0, 3, (3, 5)).astype(np.int32)
  indices = rng.integers(0, 5, (2, 3, 4)).astype(np.int32)
  return hypernetfl.round_step(
      net, net.init(5), net.init_embeddings(3, 5),
      hypernetfl.UserBatches(x, y, indices, np.ones((2, 3, 4), np.float32)),
      tf.constant([1.0, 0.5, 0.8]), tf.constant(key, tf.int64),
      hypernetfl.RoundConstants(
          clip=clip, noise_multiplier=z, max_weight=1.0, denominator=1.2,
          local_learning_rate=0.1, hyper_learning_rate=0.05,
          embedding_learning_rate=0.05, clip_and_noise=clip_and_noise))


def test_noiseless_is_udp_with_zero_noise_and_a_clip_that_never_binds():
  phi_a, v_a, m_a = _round(False, clip=0.1, z=5.0)
  phi_b, v_b, m_b = _round(True, clip=1e9, z=0.0)
  for a, b in zip(phi_a, phi_b):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)
  np.testing.assert_allclose(v_a, v_b, rtol=1e-6)
  assert set(m_b) == {'noise_stddev'}  # Nothing unnoised is published.
  # With noise the same round moves phi differently, and a key reproduces it.
  phi_c, _, _ = _round(True, clip=0.1, z=5.0)
  phi_d, _, _ = _round(True, clip=0.1, z=5.0)
  phi_e, _, _ = _round(True, clip=0.1, z=5.0, key=(9, 9))
  np.testing.assert_array_equal(phi_c[0], phi_d[0])
  assert not np.array_equal(phi_c[0], phi_e[0])
