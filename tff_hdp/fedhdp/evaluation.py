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
"""The metrics of paper 001's tables (docs/fedhdp.md), computed after training.

- Acc_g: the global model on the server test set.
- Acc_g,p / Acc_g,np: mean over the private (all levels) or non-private
  clients of the global model's
  accuracy on each client's local test data; Acc_l,p / Acc_l,np the same with
  each client's personal model (the global model for a client that never
  trained one).
- Delta_g = Acc_g,np - Acc_g,p; Delta_l = Acc_l,np - Acc_l,p.
- The papers' number in parentheses, `*_var`: 100 x the variance across the
  group's clients of the per-client accuracy as a fraction (population
  variance); means are in percent.
- `personal_models_on_label_pools`: on a split of one label per client, each
  Ditto model on every held-out image of its client's label and on its own
  training images: Acc_l's mean without the few test images a client has,
  and which images the models miss.

Clients with no local test data are left out of the means.
"""

from typing import Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf

from tff_hdp import models
from tff_hdp.fedhdp import personal_store as personal_store_lib


def _predict(spec: models.ModelSpec, weights, x: np.ndarray,
             batch_size: int = 4096) -> np.ndarray:
  weights = [tf.constant(w) for w in weights]
  out = []
  for start in range(0, len(x), batch_size):
    logits = spec.apply(weights, tf.constant(x[start:start + batch_size]))
    out.append(tf.argmax(logits, axis=-1, output_type=tf.int32).numpy())
  return np.concatenate(out) if out else np.zeros((0,), np.int32)


def loss_and_accuracy(spec: models.ModelSpec, weights, x: np.ndarray,
                      y: np.ndarray,
                      batch_size: int = 4096) -> tuple[float, float]:
  """Mean loss and accuracy of one model on (x, y), in batches."""
  weights = [tf.constant(w) for w in weights]
  loss_sum, hits = 0.0, 0
  for start in range(0, len(y), batch_size):
    xb, yb = x[start:start + batch_size], y[start:start + batch_size]
    logits = spec.apply(weights, tf.constant(xb))
    loss_sum += float(models.loss_fn(logits, yb)) * len(yb)
    hits += int(np.sum(np.argmax(logits.numpy(), axis=-1) == yb))
  return loss_sum / max(len(y), 1), hits / max(len(y), 1)


def accuracy(spec: models.ModelSpec, weights, x: np.ndarray,
             y: np.ndarray) -> float:
  """Fraction of (x, y) classified correctly."""
  return float(np.mean(_predict(spec, weights, x) == y)) if len(y) else np.nan


def per_client_accuracy(spec: models.ModelSpec, weights,
                        tests: Sequence[tuple[np.ndarray, np.ndarray]]
                        ) -> np.ndarray:
  """Accuracy of one model on every client's test data (nan if empty)."""
  sizes = np.array([len(y) for _, y in tests])
  x = np.concatenate([x for x, _ in tests])
  y = np.concatenate([y for _, y in tests])
  correct = (_predict(spec, weights, x) == y).astype(np.float64)
  owner = np.repeat(np.arange(len(tests)), sizes)
  hits = np.bincount(owner, weights=correct, minlength=len(tests))
  with np.errstate(invalid='ignore', divide='ignore'):
    return np.where(sizes > 0, hits / np.maximum(sizes, 1), np.nan)


def personal_accuracy(spec: models.ModelSpec,
                      store: Optional[personal_store_lib.PersonalModelStore],
                      global_accuracy: np.ndarray,
                      tests: Sequence[tuple[np.ndarray, np.ndarray]]
                      ) -> np.ndarray:
  """Per client, its personal model's accuracy on its own test data.

  Clients without a personal model use the global model, whose accuracies
  are `global_accuracy`.
  """
  out = np.array(global_accuracy, np.float64)
  if store is None:
    return out
  for cid in np.flatnonzero(store.initialized):
    x, y = tests[cid]
    if len(y):
      out[cid] = np.mean(_predict(spec, store.get(cid), x) == y)
  return out


def _group_masks(client_group_names: Sequence[str]):
  """(('p', mask of private clients, every level), ('np', mask of the
  non-private ones)): the groups of the tables' columns."""
  names = np.asarray(client_group_names).astype(str)
  return (('p', np.char.startswith(names, 'private')),
          ('np', names == 'non_private'))


def personal_models_on_label_pools(
    spec: models.ModelSpec,
    store: personal_store_lib.PersonalModelStore,
    global_weights,
    train: Sequence[tuple[np.ndarray, np.ndarray]],
    server_test: tuple[np.ndarray, np.ndarray],
    client_labels: np.ndarray,
    client_group_names: Sequence[str],
    most_missed: int = 10) -> dict:
  """Where the Ditto models err, on a split of one label per client.

  A client's own test data is a few images (non-IID MNIST: 4 to 6), so its
  Acc_l moves in steps of 20 points. Here each personal model is scored on
  every image of its client's label in the server test set (held out from
  all training), which estimates the same mean without that sampling, and
  on its own training images. As for Acc_l, a client that never trained is
  scored with the global model: each value depends on whether its client
  took part, so, like Acc_l, it depends on participation and is outside
  epsilon (docs/privacy.md).

  Args:
    spec: The model.
    store: The Ditto models.
    global_weights: The global model, for clients without a Ditto model.
    train: Each client's training data.
    server_test: The held-out images, (x, y).
    client_labels: Each client's one label.
    client_group_names: Each client's privacy group.
    most_missed: How many of the most-missed images to list.

  Returns:
    {'acc_l_pool_p', 'acc_l_pool_np'}: mean % over the group's clients of
    the accuracy on their label's held-out images (with '_var', 100 x the
    variance across clients; None for an empty group);
    {'acc_l_train_p', 'acc_l_train_np'}: the same on their own training
    images; 'most_missed': [test index, label, fraction of that label's
    clients whose model misses it] of the `most_missed` images missed most;
    'images_holding_90pct_of_misses': how few test images hold 90% of all
    misses; 'pool_size': held-out images per label.
  """
  x, y = server_test
  labels = np.asarray(client_labels)
  pools = {int(c): np.flatnonzero(y == c) for c in np.unique(labels)}
  on_pool = np.full(len(labels), np.nan)
  on_train = np.full(len(labels), np.nan)
  misses = np.zeros(len(y))
  for cid, label in enumerate(labels):
    (weights,) = store.gather([cid], global_weights)  # One at a time.
    pool = pools[label]
    hit = _predict(spec, weights, x[pool]) == label
    misses[pool[~hit]] += 1
    on_pool[cid] = np.mean(hit) if len(pool) else np.nan
    x_train, y_train = train[cid]
    if len(y_train):
      on_train[cid] = np.mean(_predict(spec, weights, x_train) == y_train)
  out = {}
  for short, mask in _group_masks(client_group_names):
    for kind, values in (('pool', on_pool), ('train', on_train)):
      vals = values[mask]
      vals = vals[~np.isnan(vals)]
      key = f'acc_l_{kind}_{short}'
      out[key] = 100.0 * float(np.mean(vals)) if vals.size else None
      out[key + '_var'] = 100.0 * float(np.var(vals)) if vals.size else None
  clients_per_label = np.bincount(labels, minlength=int(y.max()) + 1)
  with np.errstate(invalid='ignore', divide='ignore'):
    fraction = np.nan_to_num(misses / clients_per_label[y])
  order = np.argsort(-fraction, kind='stable')
  out['most_missed'] = [[int(i), int(y[i]), round(float(fraction[i]), 4)]
                        for i in order[:most_missed] if misses[i] > 0]
  ranked = np.sort(misses)[::-1]
  total = ranked.sum()
  out['images_holding_90pct_of_misses'] = (
      int(np.searchsorted(np.cumsum(ranked), 0.9 * total) + 1) if total else 0)
  out['pool_size'] = {str(c): int(len(p)) for c, p in pools.items()}
  return out


def summarize(global_acc: float, client_global: np.ndarray,
              client_personal: np.ndarray,
              client_group_names: Sequence[str]) -> Mapping[str, float]:
  """Section 7's table row from per-client accuracies (fractions)."""
  row = {'acc_g': 100.0 * global_acc}
  for short, mask in _group_masks(client_group_names):
    for kind, values in (('g', client_global), ('l', client_personal)):
      vals = np.asarray(values)[mask]
      vals = vals[~np.isnan(vals)]
      key = f'acc_{kind}_{short}'
      if vals.size:
        row[key] = 100.0 * float(np.mean(vals))
        row[key + '_var'] = 100.0 * float(np.var(vals))
      else:
        row[key] = row[key + '_var'] = None
  for kind in ('g', 'l'):
    p, np_ = row[f'acc_{kind}_p'], row[f'acc_{kind}_np']
    row[f'delta_{kind}'] = None if p is None or np_ is None else np_ - p
  return row
