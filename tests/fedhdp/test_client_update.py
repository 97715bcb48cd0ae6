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
"""Algorithm 2's ClientUpdate and Ditto's step against numpy by hand."""

import numpy as np
import pytest
import tensorflow as tf

from tff_hdp.fedhdp import client_update
from tff_hdp.fedhdp import process
from tff_hdp import models


def _np_fc_grad(weights, x, y):
  """Loss and gradient of the FC NN (mean cross-entropy), by hand."""
  w1, b1, w2, b2 = weights
  x = x.reshape(len(x), -1)
  h_pre = x @ w1 + b1
  h = np.maximum(h_pre, 0)
  logits = h @ w2 + b2
  logits = logits - logits.max(axis=1, keepdims=True)
  p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
  n = len(y)
  loss = -np.mean(np.log(p[np.arange(n), y]))
  d_logits = p.copy()
  d_logits[np.arange(n), y] -= 1
  d_logits /= n
  g_w2 = h.T @ d_logits
  g_b2 = d_logits.sum(0)
  d_h = d_logits @ w2.T * (h_pre > 0)
  g_w1 = x.T @ d_h
  g_b1 = d_h.sum(0)
  return loss, [g_w1, g_b1, g_w2, g_b2]


@pytest.fixture
def setup():
  spec = models.fc_model((2, 3), num_classes=4, hidden=5)
  rng = np.random.default_rng(0)
  theta0 = [rng.normal(size=s).astype(np.float32) * 0.5 for s in spec.shapes]
  personal = [rng.normal(size=s).astype(np.float32) * 0.5 for s in spec.shapes]
  x = rng.normal(size=(6, 2, 3)).astype(np.float32)
  y = rng.integers(0, 4, size=6).astype(np.int32)
  return spec, theta0, personal, x, y


def _run(spec, theta0, personal, x, y, *, batch, epochs, lam, ditto):
  ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)
  return client_update.client_update(
      spec, theta0, personal, ds, steps=client_update.Steps(epochs, ditto),
      rates=client_update.Rates(0.3, 0.2, lam),
      seed=tf.constant([0, 0]))


def test_sgd_steps_match_hand_computation(setup):
  spec, theta0, personal, x, y = setup
  out = _run(spec, theta0, personal, x, y, batch=4, epochs=2, lam=0.0,
             ditto=False)
  theta = [w.astype(np.float64) for w in theta0]
  for _ in range(2):
    for start in (0, 4):  # batches of 4 and 2
      _, grads = _np_fc_grad(theta, x[start:start + 4], y[start:start + 4])
      theta = [w - 0.3 * g for w, g in zip(theta, grads)]
  for d, t, t0 in zip(out.delta, theta, theta0):
    np.testing.assert_allclose(d, t - t0, atol=1e-5)
  assert int(out.num_examples) == 12
  # Ditto off: the personal model comes back unchanged.
  for p, p0 in zip(out.personal_weights, personal):
    np.testing.assert_array_equal(p, p0)


def test_learning_process_elements_train_as_x_y_batches(setup):
  # The process's client elements (mappings carrying x, y, group, id) give
  # the update of plain (x, y) batches; `_split` reads the group and id
  # with neither a map nor a reduce (functions TFF's runtime instantiates
  # for every client), and 0, 0 for a client without batches.
  spec, theta0, personal, x, y = setup
  element = process.client_element(x, y, group=2, client_id=9, batch_size=4)
  data, info = process._split(element)
  out = client_update.client_update(
      spec, theta0, personal, data, steps=client_update.Steps(2, True),
      rates=client_update.Rates(0.3, 0.2, 0.1),
      seed=tf.constant([0, 0]))
  plain = _run(spec, theta0, personal, x, y, batch=4, epochs=2, lam=0.1,
               ditto=True)
  for a, b in zip(out.delta + out.personal_weights,
                  plain.delta + plain.personal_weights):
    np.testing.assert_array_equal(a, b)
  assert (int(info['group']), int(info['client_id'])) == (2, 9)
  graph = tf.Graph()
  with graph.as_default():
    _, info = process._split(process.client_element(
        x, y, group=2, client_id=9, batch_size=4))
    ops = {op.type for op in graph.get_operations()}
    with tf.compat.v1.Session() as session:
      assert session.run(info) == {'group': 2, 'client_id': 9}
  assert not ops & {'MapDataset', 'ReduceDataset', 'ParallelMapDataset'}
  empty = process.client_element(x[:0], y[:0], group=2, client_id=9,
                                 batch_size=4)
  _, info = process._split(empty)
  assert (int(info['group']), int(info['client_id'])) == (0, 0)


def test_ditto_step_matches_hand_computation(setup):
  spec, theta0, personal, x, y = setup
  lam = 0.7
  out = _run(spec, theta0, personal, x, y, batch=3, epochs=1, lam=lam,
             ditto=True)
  theta_j = [w.astype(np.float64) for w in personal]
  for start in (0, 3):
    _, grads = _np_fc_grad(theta_j, x[start:start + 3], y[start:start + 3])
    # theta_j <- theta_j - eta_p (grad + lambda (theta_j - theta^t))
    theta_j = [p - 0.2 * (g + lam * (p - w0))
               for p, g, w0 in zip(theta_j, grads, theta0)]
  for got, want in zip(out.personal_weights, theta_j):
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_ditto_does_not_change_the_global_update(setup):
  spec, theta0, personal, x, y = setup
  a = _run(spec, theta0, personal, x, y, batch=3, epochs=1, lam=0.5,
           ditto=True)
  b = _run(spec, theta0, personal, x, y, batch=3, epochs=1, lam=0.5,
           ditto=False)
  for da, db in zip(a.delta, b.delta):
    np.testing.assert_allclose(da, db, atol=1e-7)


def test_large_lambda_pulls_personal_model_to_global(setup):
  spec, theta0, personal, x, y = setup
  # With eta_p * lambda = 1 the prox term alone maps theta_j to theta^t.
  ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(6)
  out = client_update.client_update(
      spec, theta0, theta0, ds, steps=client_update.Steps(1, True),
      rates=client_update.Rates(0.3, 0.0, 5.0),
      seed=tf.constant([0, 0]))
  for p, w0 in zip(out.personal_weights, theta0):
    np.testing.assert_allclose(p, w0, atol=1e-7)


def test_cnn_runs_and_dropout_is_seeded():
  spec = models.cnn_model((28, 28), num_classes=62)
  # Table 6 with 3x3 kernels: 160 + 4,640 + 200,832 + 7,998 (the ~214k of
  # the FEMNIST CNN).
  assert spec.num_parameters == 213_630
  weights = spec.init(0)
  rng = np.random.default_rng(1)
  x = rng.random((4, 28, 28)).astype(np.float32)
  y = rng.integers(0, 62, 4).astype(np.int32)
  ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(2)
  run = lambda seed: client_update.client_update(
      spec, weights, weights, ds, steps=client_update.Steps(1, True),
      rates=client_update.Rates(0.05, 0.05, 0.1),
      seed=tf.constant(seed))
  a, b, c = run([1, 2]), run([1, 2]), run([1, 3])
  for da, db in zip(a.delta, b.delta):
    np.testing.assert_array_equal(da, db)
  assert not all(np.allclose(da, dc) for da, dc in zip(a.delta, c.delta))
