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
"""Ditto's personal step as XLA fuses it equals its TensorFlow ops."""

import numpy as np
import pytest
import tensorflow as tf

from tff_hdp import models
from tff_hdp.fedhdp import direct_backend


def _stacked(rng, num_clients, shapes, scale=1.0):
  return tuple(
      tf.constant(scale * rng.standard_normal((num_clients,) + tuple(s)),
                  tf.float32) for s in shapes)


@pytest.mark.parametrize('num_clients', [1, 3, 7])
def test_fused_step_is_the_ops_step_up_to_round_off(num_clients):
  rng = np.random.default_rng(num_clients)
  shapes = models.fc_model((8, 8), num_classes=4).shapes
  personal = _stacked(rng, num_clients, shapes)
  steps = _stacked(rng, num_clients, shapes, scale=1e-2)
  global_weights = tuple(t[0] for t in _stacked(rng, 1, shapes))
  pull = tf.constant(rng.uniform(0, 0.1, num_clients), tf.float32)
  fused = direct_backend.fused_personal_update(personal, steps,
                                               global_weights, pull)
  ops = direct_backend.personal_update(personal, steps, global_weights, pull)
  # The Ditto step, in float64 from the same float32 inputs.
  for q, d, w0, a, b in zip(personal, steps, global_weights, fused, ops):
    pull_rows = np.reshape(pull.numpy().astype(np.float64),
                           (-1,) + (1,) * (q.shape.rank - 1))
    exact = (q.numpy().astype(np.float64) -
             (d.numpy() + pull_rows * (q.numpy() - w0.numpy())))
    # One or two float32 roundings of values of order 1 apart.
    np.testing.assert_allclose(a.numpy(), exact, rtol=0, atol=1e-6)
    np.testing.assert_allclose(b.numpy(), exact, rtol=0, atol=1e-6)
    assert a.shape == q.shape


def test_without_pull_both_are_the_plain_step_exactly():
  rng = np.random.default_rng(0)
  shapes = models.fc_model((8, 8), num_classes=4).shapes
  personal = _stacked(rng, 4, shapes)
  steps = _stacked(rng, 4, shapes, scale=1e-2)
  global_weights = tuple(t[0] for t in _stacked(rng, 1, shapes))
  pull = tf.zeros([4])
  for update in (direct_backend.fused_personal_update,
                 direct_backend.personal_update):
    for new, q, d in zip(update(personal, steps, global_weights, pull),
                         personal, steps):
      np.testing.assert_array_equal(new.numpy(), (q - d).numpy())
