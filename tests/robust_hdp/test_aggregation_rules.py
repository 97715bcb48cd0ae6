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
"""Tests of the Robust-HDP rules' maths (aggregation_rules.py, rules/):
every rule by hand."""

import inspect
import math

import numpy as np
import pytest
import tensorflow as tf

from tff_hdp import models
from tff_hdp.robust_hdp import aggregation_rules as rules
from tff_hdp.robust_hdp import dp_sgd
from tff_hdp.robust_hdp import rule as rule_lib
from tff_hdp.robust_hdp import rule_registry
from tff_hdp.robust_hdp.rules import pfa


def fixed_weights(name, epsilons=None, num_examples=None, variances=None):
  """The normalised fixed weights of the rule called `name`."""
  side = rule_lib.SideInformation(epsilons, num_examples, variances)
  return rule_lib.normalized(rule_registry.get(name).fixed_weights(side))


def test_fixed_weights_by_hand():
  eps = [1.0, 2.0, 5.0]
  n = [100, 300, 600]
  var = [4.0, 1.0, 2.0]
  kw = dict(epsilons=eps, num_examples=n, variances=var)
  np.testing.assert_allclose(fixed_weights('weiavg', **kw),
                             [0.125, 0.25, 0.625])
  for rule in ('dpfedavg', 'min_epsilon', 'non_private'):
    np.testing.assert_allclose(fixed_weights(rule, **kw), [0.1, 0.3, 0.6])
  # 1/4 : 1 : 1/2 -> divide by 1.75.
  np.testing.assert_allclose(fixed_weights('oracle', **kw),
                             [1 / 7, 4 / 7, 2 / 7])
  assert not isinstance(rule_registry.get('robust_hdp'),
                        rule_lib.FixedWeightRule)
  # The minimum-epsilon rule calibrates every private client to the least.
  assert rule_registry.get('min_epsilon').calibration_epsilons(
      [2.0, None, 0.5]) == [0.5, None, 0.5]


def test_weighted_sum_and_noise_power_by_hand():
  updates = tf.constant([[1.0, 2.0], [3.0, -4.0]])
  np.testing.assert_allclose(
      rules.weighted_sum(updates, tf.constant([0.25, 0.75])), [2.5, -2.5])
  # sum w^2 sigma^2 / (p eta^2) = (0.25^2 * 8 + 0.75^2 * 4) / (2 * 0.01).
  assert rules.noise_power([0.25, 0.75], [8.0, 4.0], 2, 0.1) == pytest.approx(
      (0.0625 * 8 + 0.5625 * 4) / 0.02)


def test_oracle_variance_is_equation_7():
  # sigma_i^2 = K ceil(N/b) eta^2 p c^2 z^2 / b^2 (eqs. (7) and (3)).
  got = rules.dp_sgd_noise_variance(1.5, 64, 2400, 2, 3.0, 0.1, 28938)
  assert got == pytest.approx(2 * 38 * 0.01 * 28938 * 9.0 * 2.25 / 64**2)
  assert rules.dp_sgd_noise_variance(None, 64, 2400, 1, 3.0, 0.1, 10) == 0.0


def test_equation_7_matches_the_noise_dp_sgd_adds():
  # The update of a client whose gradients are all zero is pure noise:
  # -eta sum_k N(0, (c z)^2 I) / b over E_i steps, variance per coordinate
  # E_i eta^2 c^2 z^2 / b^2, i.e. eq. (7) / p. A linear model with zero
  # weights and inputs has zero gradient for the kernel; we read the kernel.
  spec = models.fc_model((3,), num_classes=2, hidden=200)
  weights = [tf.zeros(s) for s in spec.shapes]
  x = np.zeros((40, 3), np.float32)
  y = np.zeros(40, np.int32)
  c, z, b, lr = 2.0, 1.5, 8, 0.1
  update = tf.function(lambda key: dp_sgd.client_update(
      spec, weights, x, y, batch_size=tf.constant(b),
      noise_multiplier=tf.constant(z), key=key,
      settings=dp_sgd.DpSgdSettings(clip=c, learning_rate=lr, poisson=False)))
  kernels = [update(tf.constant([seed, 0], tf.int64))[0].numpy().ravel()
             for seed in range(40)]
  per_coordinate = np.var(np.concatenate(kernels))
  expected = rules.dp_sgd_noise_variance(z, b, 40, 1, c, lr, 1)
  # 40 x 600 coordinates: relative standard error of a variance sqrt(2/m)
  # = 0.9%; we allow 5%.
  assert per_coordinate == pytest.approx(expected, rel=0.05)


def test_robust_hdp_weights_take_only_the_updates():
  params = list(inspect.signature(rules.robust_hdp_weights).parameters)
  assert params[0] == 'updates'
  assert not {'epsilons', 'batch_sizes', 'num_examples', 'epsilon',
              'batch_size', 'noise_multiplier'} & set(params)


def test_robust_hdp_beats_weiavg_with_equal_epsilon_and_different_batches():
  # The paper's central claim on a controlled example: every client has the
  # same epsilon, so WeiAvg weighs them equally, but the larger batches carry
  # far less noise (eq. (7): ceil(N/b)/b^2), which Robust-HDP finds from the
  # updates alone.
  rng = np.random.default_rng(0)
  p, n_examples, lr, c, z = 4000, 2400, 0.1, 3.0, 1.0
  batches = [16, 16, 32, 32, 64, 64, 128, 128]
  var = np.array([rules.dp_sgd_noise_variance(z, b, n_examples, 1, c, lr, p)
                  for b in batches])
  signal = rng.normal(size=p) * 0.05
  updates = signal + rng.normal(size=(len(batches), p)) * np.sqrt(var / p)[:,
                                                                           None]
  w_robust, _ = rules.robust_hdp_weights(tf.constant(updates))
  w_weiavg = fixed_weights('weiavg', epsilons=[1.0] * len(batches))
  w_oracle = fixed_weights('oracle', variances=var)
  power = lambda w: rules.noise_power(w, var, p, lr)
  assert power(w_robust.numpy()) < 0.2 * power(w_weiavg)
  assert power(w_robust.numpy()) == pytest.approx(power(w_oracle), rel=0.2)


def test_pfa_by_hand():
  # Public: the top 10% by epsilon (one of five). With k = 1 and two public
  # clients the projection is onto their difference direction.
  eps = [1.0, 1.0, 2.0, 8.0, 8.0]
  public = pfa.public_mask(eps, fraction=0.4)
  assert public.tolist() == [False, False, False, True, True]
  updates = np.array([[1.0, 1.0, 0.0], [3.0, 1.0, 0.0], [0.0, 4.0, 0.0],
                      [2.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
  got = pfa.projected_aggregate(tf.constant(updates), eps, public,
                                k=1).numpy()
  x_pub = (updates[3] + updates[4]) / 2
  x_priv = (1 * updates[0] + 1 * updates[1] + 2 * updates[2]) / 4
  v = np.array([1.0, 0.0, 0.0])  # The public updates differ along x only.
  x_hat = v * (v @ (x_priv - x_pub)) + x_pub
  expected = (16 / 20) * x_pub + (4 / 20) * x_hat
  np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_pfa_public_mask_default_and_limits():
  eps = list(range(1, 21))
  assert np.flatnonzero(pfa.public_mask(eps)).tolist() == [18, 19]
  with pytest.raises(ValueError, match='private client'):
    pfa.public_mask([1.0])


def test_inverse_variance_weights_minimise_equation_8():
  var = tf.constant([1.0, 2.0, 4.0])
  w = rules.inverse_variance_weights(var).numpy()
  np.testing.assert_allclose(w, [4 / 7, 2 / 7, 1 / 7])
  best = np.sum(w**2 * var.numpy())
  rng = np.random.default_rng(0)
  for _ in range(100):
    other = rng.dirichlet(np.ones(3))
    assert np.sum(other**2 * var.numpy()) >= best - 1e-12


def test_normalized_refuses_bad_values():
  with pytest.raises(ValueError, match='non-negative'):
    rule_lib.normalized([1.0, -1.0])
  with pytest.raises(ValueError, match='non-negative'):
    rule_lib.normalized([0.0, 0.0])
  assert math.isclose(sum(rule_lib.normalized([3, 1])), 1.0)
