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
"""The step-aware rule (rules/step_aware.py): its weights against an
independent numpy computation on robust PCA's split, its fall-back, and,
on planted updates Delta_i = E_i mu + e_i, that it recovers E_i / sigma_i^2
better than Robust-HDP's 1/sigma^_i^2 and gives the aggregate more progress
per unit of noise."""

import math

import numpy as np
import pytest
import tensorflow as tf

from tff_hdp.robust_hdp import rpca
from tff_hdp.robust_hdp import rule
from tff_hdp.robust_hdp import rule_registry
from tff_hdp.robust_hdp.rules import robust_hdp
from tff_hdp.robust_hdp.rules import step_aware


def _planted(seed=0, p=1500, step_norm=0.3):
  """Updates Delta_i = E_i mu + e_i of 8 clients of N = 200 at b_i in {16,
  32, 64, 128} (E_i = 13, 7, 4, 2 steps), as eqs. (6)-(7) model them, with
  z_i = b_i / 16 (then 1.5 times that): the same noise per step in each
  half, so E_i / sigma_i^2 is equal within a half where 1/sigma_i^2 is
  ~ 1/E_i. Returns the [8, p] updates, E_i and sigma_i^2 (eq. (7), eta =
  0.1, c = 3)."""
  rng = np.random.default_rng(seed)
  batches = np.array([16, 32, 64, 128] * 2)
  z = batches / 16 * np.repeat([1.0, 1.5], 4)
  steps = np.ceil(200 / batches)
  variances = steps * 0.1**2 * p * 3.0**2 * z**2 / batches**2
  mu = rng.normal(size=p)
  mu *= step_norm / np.linalg.norm(mu)
  updates = (steps[:, None] * mu +
             rng.normal(size=(len(z), p)) * np.sqrt(variances / p)[:, None])
  return updates, steps, variances


IALM = {'method': 'ialm'}  # Robust PCA's fast solver (rpca's module doc).


def test_weights_are_the_split_norms_over_the_noise_by_numpy():
  updates, _, _ = _planted(p=600)
  weights, estimates = step_aware.StepAware(IALM).weights(
      tf.constant(updates), {})
  # Independently: robust PCA's numpy split, then the weights in numpy.
  low, sparse = rpca.robust_pca(updates.T, **IALM)
  variances = np.sum(sparse**2, axis=0) / updates.shape[1]
  scores = np.linalg.norm(low, axis=0) / variances
  np.testing.assert_allclose(estimates.numpy(), variances, rtol=1e-9)
  np.testing.assert_allclose(weights.numpy(), scores / scores.sum(),
                             rtol=1e-9)
  # On blocks of p' rows: a column of L is its blocks' columns.
  norms, _ = rpca.split_norms(tf.constant(updates.T), block_rows=250, **IALM)
  blocks = [rpca.robust_pca(updates.T[s:s + 250], **IALM)[0]
            for s in (0, 250, 500)]
  np.testing.assert_allclose(
      norms.numpy(), np.sqrt(sum(np.sum(b**2, axis=0) for b in blocks)),
      rtol=1e-9)


def test_step_aware_weights_by_hand_and_fall_back():
  signal = tf.constant([1.0, 2.0, 3.0], tf.float64)
  noise = tf.constant([1.0, 4.0, 2.0], tf.float64)
  # 1 : 1/2 : 3/2 -> divide by 3.
  np.testing.assert_allclose(
      step_aware.step_aware_weights(signal, noise).numpy(),
      [1 / 3, 1 / 6, 1 / 2])
  # No common signal found: Robust-HDP's 1/sigma^2 (4/7, 1/7, 2/7).
  np.testing.assert_allclose(
      step_aware.step_aware_weights(tf.zeros([3], tf.float64),
                                    noise).numpy(), [4 / 7, 1 / 7, 2 / 7])


def test_its_server_is_told_nothing():
  found = rule_registry.get('step_aware')
  side = rule.SideInformation((1.0, 2.0), (10, 20), (3.0, 4.0))
  assert found.told(side) == {}
  assert found.server_knows == 'nothing' and found.estimates_from_updates


def test_it_recovers_the_steps_robust_hdp_leaves_out():
  updates, steps, variances = _planted()
  ours, theirs = (found.weights(tf.constant(updates), {})[0].numpy()
                  for found in (step_aware.StepAware(IALM),
                                robust_hdp.RobustHdp(IALM)))
  target = steps / variances / np.sum(steps / variances)
  # Seed 0: 0.23 against 0.62.
  assert np.abs(ours - target).sum() < 0.5 * np.abs(theirs - target).sum()

  def progress_per_noise(w):  # (sum_i w_i E_i)^2 / sum_i w_i^2 sigma_i^2.
    return np.sum(w * steps)**2 / np.sum(w**2 * variances)

  # Seed 0: 1.68 times Robust-HDP's.
  assert progress_per_noise(ours) > 1.3 * progress_per_noise(theirs)
  # Robust-HDP leans on the largest batches, which take the fewest steps.
  assert np.sum(theirs * steps) < np.sum(ours * steps)
  assert math.isclose(ours.sum(), 1.0)
