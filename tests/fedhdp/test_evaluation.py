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
"""The Ditto models on their label's held-out images, against numpy."""

import numpy as np

from tff_hdp import models
from tff_hdp.fedhdp import evaluation
from tff_hdp.fedhdp import personal_store


def _numpy_predict(weights, x):
  """The FC NN's forward pass written out: flatten, ReLU layer, logits."""
  w1, b1, w2, b2 = weights
  hidden = np.maximum(x.reshape(len(x), -1) @ w1 + b1, 0.0)
  return np.argmax(hidden @ w2 + b2, axis=1)


def test_personal_models_on_label_pools_against_numpy():
  rng = np.random.default_rng(3)
  spec = models.fc_model((2, 3), num_classes=3, hidden=4)
  num_clients = 7
  labels = np.array([0, 1, 2, 0, 1, 2, 0])
  groups = ['private', 'private', 'non_private', 'private', 'non_private',
            'private', 'private']
  store = personal_store.PersonalModelStore(num_clients, spec.shapes)
  trained = [0, 1, 2, 3, 4, 5]
  weights = {c: [rng.normal(size=s).astype(np.float32) for s in spec.shapes]
             for c in range(num_clients)}
  store.scatter(trained, [weights[c] for c in trained])
  # Client 6 never trained: it is scored with the global model, as Acc_l
  # scores it.
  global_weights = weights[6]
  x_test = rng.normal(size=(40, 2, 3)).astype(np.float32)
  y_test = rng.integers(0, 3, 40).astype(np.int32)
  train = [(rng.normal(size=(5, 2, 3)).astype(np.float32),
            np.full(5, labels[c], np.int32)) for c in range(num_clients)]

  out = evaluation.personal_models_on_label_pools(
      spec, store, global_weights, train, (x_test, y_test), labels, groups,
      most_missed=3)

  pool_acc, train_acc = {}, {}
  misses = np.zeros(40)
  for c in range(num_clients):
    pool = np.flatnonzero(y_test == labels[c])
    hit = _numpy_predict(weights[c], x_test[pool]) == labels[c]
    pool_acc[c] = hit.mean()
    misses[pool[~hit]] += 1
    train_acc[c] = np.mean(_numpy_predict(weights[c], train[c][0]) ==
                           labels[c])
  for short, members in (('p', [0, 1, 3, 5, 6]), ('np', [2, 4])):
    for kind, acc in (('pool', pool_acc), ('train', train_acc)):
      values = np.array([acc[c] for c in members])
      np.testing.assert_allclose(out[f'acc_l_{kind}_{short}'],
                                 100 * values.mean(), rtol=1e-6)
      np.testing.assert_allclose(out[f'acc_l_{kind}_{short}_var'],
                                 100 * values.var(), rtol=1e-6, atol=1e-12)
  clients_per_label = np.array([3, 2, 2])
  fraction = misses / clients_per_label[y_test]
  top = np.argsort(-fraction, kind='stable')[:3]
  assert out['most_missed'] == [[int(i), int(y_test[i]),
                                 round(float(fraction[i]), 4)] for i in top]
  ranked = np.sort(misses)[::-1]
  needed = next(k for k in range(1, 41)
                if ranked[:k].sum() >= 0.9 * ranked.sum())
  assert out['images_holding_90pct_of_misses'] == needed
  assert out['pool_size'] == {
      str(c): int(np.sum(y_test == c)) for c in range(3)}


def test_a_client_without_a_model_is_scored_with_the_global_model():
  spec = models.fc_model((2,), num_classes=2, hidden=3)
  store = personal_store.PersonalModelStore(2, spec.shapes)
  # Client 1's model calls everything 1; the global model everything 0.
  always = lambda label: [np.zeros((2, 3), np.float32), np.zeros(3, np.float32),
                          np.zeros((3, 2), np.float32),
                          np.eye(2, dtype=np.float32)[label]]
  store.scatter([1], [always(1)])
  out = evaluation.personal_models_on_label_pools(
      spec, store, always(0),
      [(np.zeros((1, 2), np.float32), np.array([c], np.int32)) for c in (0, 1)],
      (np.ones((4, 2), np.float32), np.array([0, 1, 0, 1], np.int32)),
      np.array([0, 1]), ['private', 'non_private'])
  # Client 0 (private, label 0) never trained: the global model, right.
  assert out['acc_l_pool_p'] == 100.0 and out['acc_l_train_p'] == 100.0
  assert out['acc_l_pool_np'] == 100.0
  assert out['images_holding_90pct_of_misses'] == 0
