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
"""Server maths of Algorithm 2: exact checks, then statistical ones."""

import math

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_privacy as tfp

from tff_hdp.fedhdp import algorithms
from tff_hdp.fedhdp import group_aggregation as ga
from tff_hdp.fedhdp import privacy_groups as pg


def _np(values):
  return [np.asarray(v) for v in values]


class TestCombinationWeights:

  def test_two_groups_match_paper_formula(self):
    # w_np = N_np/(N_np + r N_p), w_p = r N_p/(N_np + r N_p); r = 0.1.
    n_p, n_np, r = 95.0, 5.0, 0.1
    w = ga.combination_weights(tf.constant([n_p, n_np]), [r, 1.0]).numpy()
    np.testing.assert_allclose(
        w, [r * n_p / (n_np + r * n_p), n_np / (n_np + r * n_p)], rtol=1e-6)

  def test_r_one_is_plain_mean_weighting(self):
    w = ga.combination_weights(tf.constant([30.0, 10.0]), [1.0, 1.0]).numpy()
    np.testing.assert_allclose(w, [0.75, 0.25], rtol=1e-6)

  def test_r_zero_ignores_private_group(self):
    w = ga.combination_weights(tf.constant([30.0, 10.0]), [0.0, 1.0]).numpy()
    np.testing.assert_allclose(w, [0.0, 1.0])

  def test_empty_group_gets_zero_weight(self):
    w = ga.combination_weights(tf.constant([0.0, 4.0]), [0.5, 1.0]).numpy()
    np.testing.assert_allclose(w, [0.0, 1.0])

  def test_no_weight_at_all_means_no_update(self):
    w = ga.combination_weights(tf.constant([7.0, 0.0]), [0.0, 1.0]).numpy()
    np.testing.assert_allclose(w, [0.0, 0.0])

  def test_three_levels(self):
    counts, ratios = np.array([50.0, 30.0, 20.0]), np.array([0.01, 0.2, 1.0])
    w = ga.combination_weights(tf.constant(counts), ratios).numpy()
    np.testing.assert_allclose(w, ratios * counts / np.sum(ratios * counts),
                               rtol=1e-6)


class TestClipping:

  def test_private_group_clips_to_s(self):
    group = pg.PrivacyGroup('private', 1.0)
    query = ga.value_query(group, tf.constant(1.0))
    clipped = _np(ga.clip_record(query, [tf.constant([3.0, 4.0]),
                                        tf.constant([0.0])]))
    np.testing.assert_allclose(clipped[0], [0.6, 0.8], rtol=1e-6)

  def test_short_update_is_unchanged(self):
    group = pg.PrivacyGroup('non_private', None)
    query = ga.value_query(group, tf.constant(10.0))
    clipped = _np(ga.clip_record(query, [tf.constant([3.0, 4.0])]))
    np.testing.assert_allclose(clipped[0], [3.0, 4.0])

  def test_non_private_baseline_never_clips(self):
    group = pg.PrivacyGroup('non_private', None, clip=False)
    query = ga.value_query(group, tf.constant(0.1))
    clipped = _np(ga.clip_record(query, [tf.constant([3.0, 4.0])]))
    np.testing.assert_allclose(clipped[0], [3.0, 4.0])

  def test_noise_stddev_is_z_times_s(self):
    query = ga.value_query(pg.PrivacyGroup('private', 1.7), tf.constant(0.5))
    stddev = ga.noise_stddev(query, query.initial_global_state())
    assert float(stddev) == pytest.approx(1.7 * 0.5)

  def test_clipped_non_private_group_has_no_noise(self):
    query = ga.value_query(pg.PrivacyGroup('non_private', None),
                           tf.constant(0.5))
    assert float(ga.noise_stddev(query, query.initial_global_state())) == 0.0


class TestNoisedMean:

  def test_zero_noise_is_exact_mean(self):
    mean = ga.noised_group_mean([tf.constant([6.0, 3.0])], tf.constant(3.0),
                                tf.constant(0.0), tf.constant([1, 2],
                                                              tf.int64))
    np.testing.assert_allclose(mean[0], [2.0, 1.0])

  def test_empty_group_gives_zeros(self):
    mean = ga.noised_group_mean([tf.constant([0.0, 0.0])], tf.constant(0.0),
                                tf.constant(5.0), tf.constant([1, 2],
                                                              tf.int64))
    np.testing.assert_allclose(mean[0], [0.0, 0.0])

  def test_noise_has_configured_stddev(self):
    # Delta_i = sum/N_i + N(0, (z S / N_i)^2): with sum = 0, the coordinates
    # are iid N(0, sigma^2), sigma = z S / N_i. The sample stddev of n draws
    # has standard error ~ sigma / sqrt(2n); allow 5 of them.
    z, s, n_i, n = 1.3, 0.7, 4.0, 200_000
    sigma = z * s / n_i
    draws = ga.noised_group_mean([tf.zeros([n])], tf.constant(n_i),
                                 tf.constant(z * s),
                                 tf.constant([7, 11], tf.int64))[0].numpy()
    tolerance = 5 * sigma / math.sqrt(2 * n)
    assert abs(draws.std() - sigma) < tolerance
    assert abs(draws.mean()) < 5 * sigma / math.sqrt(n)

  def test_same_key_same_noise_other_key_other_noise(self):
    args = ([tf.zeros([8])], tf.constant(1.0), tf.constant(1.0))
    a = ga.noised_group_mean(*args, tf.constant([1, 2], tf.int64))[0]
    b = ga.noised_group_mean(*args, tf.constant([1, 2], tf.int64))[0]
    c = ga.noised_group_mean(*args, tf.constant([1, 3], tf.int64))[0]
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


class TestCombine:

  def test_weighted_sum(self):
    means = [[tf.constant([2.0, 2.0])], [tf.constant([5.0, 5.0])]]
    out = ga.combine(means, tf.constant([0.25, 0.75]))
    np.testing.assert_allclose(out[0], [4.25, 4.25])


def _paper_clip_update(s, bits, eta_b, kappa, noise=0.0):
  """Algorithm 2's rule by hand, with TF Privacy's clamp of the fraction."""
  fraction = np.mean(bits) + noise / len(bits)
  fraction = min(1.0, max(0.0, fraction))
  return s * math.exp(-eta_b * (fraction - kappa))


class TestClipNormUpdate:

  def test_hand_computed_step(self):
    est = ga.clip_estimator(0.5, 0.5, 0.2)
    norms = [0.1, 0.4, 0.9, 2.0]
    below = sum(float(ga.below_record(est, 0.5, tf.constant(v))) for v in norms)
    new, frac = ga.update_clip_norm(est, 0.5, below, 4, 0.0,
                                    tf.constant([0, 0], tf.int64))
    assert float(frac) == pytest.approx(0.5)
    assert float(new) == pytest.approx(0.5)
    norms = [0.1, 0.2, 0.3, 2.0]
    below = sum(float(ga.below_record(est, 0.5, tf.constant(v))) for v in norms)
    new, _ = ga.update_clip_norm(est, 0.5, below, 4, 0.0,
                                 tf.constant([0, 0], tf.int64))
    assert float(new) == pytest.approx(0.5 * math.exp(-0.2 * 0.25), rel=1e-6)

  def test_trajectory_matches_tf_privacy_estimator(self):
    # The same norms fed to TF Privacy's QuantileEstimatorQuery used the
    # standard way (preprocess, accumulate, get_noised_result), with no noise
    # and the cohort size as its denominator, and to the paper's rule by hand.
    rng = np.random.default_rng(3)
    s0, kappa, eta_b, n = 0.5, 0.5, 0.2, 10
    reference = tfp.QuantileEstimatorQuery(
        initial_estimate=s0, target_quantile=kappa, learning_rate=eta_b,
        below_estimate_stddev=0.0, expected_num_records=n,
        geometric_update=True)
    ref_state = reference.initial_global_state()
    ours = ga.clip_estimator(s0, kappa, eta_b)
    s_ours, s_hand = tf.constant(s0), s0
    for _ in range(30):
      norms = rng.lognormal(mean=-0.5, sigma=0.8, size=n).astype(np.float32)
      params = reference.derive_sample_params(ref_state)
      sample = reference.initial_sample_state(tf.constant(0.0))
      for v in norms:
        sample = reference.accumulate_record(params, sample, tf.constant(v))
      _, ref_state, _ = reference.get_noised_result(sample, ref_state)
      below = tf.add_n([ga.below_record(ours, s_ours, tf.constant(v))
                        for v in norms])
      bits = norms <= s_hand
      s_ours, _ = ga.update_clip_norm(ours, s_ours, below, n, 0.0,
                                      tf.constant([0, 0], tf.int64))
      s_hand = _paper_clip_update(s_hand, bits, eta_b, kappa)
      assert float(s_ours) == pytest.approx(float(ref_state.current_estimate),
                                            rel=1e-5)
      assert float(s_ours) == pytest.approx(s_hand, rel=1e-5)

  def test_divides_by_realised_count(self):
    # 3 clients of an expected 10, all below S: the fraction is 1, not 0.3.
    est = ga.clip_estimator(1.0, 0.5, 0.2)
    below = 3 * float(ga.below_record(est, 1.0, tf.constant(0.1)))
    new, frac = ga.update_clip_norm(est, 1.0, below, 3, 0.0,
                                    tf.constant([0, 0], tf.int64))
    assert float(frac) == pytest.approx(1.0)
    assert float(new) == pytest.approx(math.exp(-0.1), rel=1e-6)

  def test_no_client_keeps_s(self):
    est = ga.clip_estimator(1.0, 0.5, 0.2)
    new, _ = ga.update_clip_norm(est, 0.8, 0.0, 0, 3.0,
                                 tf.constant([0, 1], tf.int64))
    assert float(new) == pytest.approx(0.8)

  def test_count_noise_has_stddev_zb_over_n(self):
    # The noised fraction is mean(b) + N(0, z_b^2 / N^2) (before the clamp);
    # with all b = 1/2 exactly at kappa... use mean(b) = 0.5 and small noise
    # so the clamp never binds, over many keys.
    est = ga.clip_estimator(1.0, 0.5, 0.2)
    n, z_b, trials = 20, 1.0, 1500
    below = 10 * 0.5 + 10 * -0.5  # ten clients below S, ten above.
    fracs = np.array([
        float(ga.update_clip_norm(est, 1.0, below, n, z_b,
                                  tf.constant([5, k], tf.int64))[1])
        for k in range(trials)
    ])
    sigma = z_b / n
    assert abs(fracs.std() - sigma) < 5 * sigma / math.sqrt(2 * trials)
    assert abs(fracs.mean() - 0.5) < 5 * sigma / math.sqrt(trials)


class TestFixedDenominators:
  """A private group's release must not depend on who took part.

  One more (or one fewer) client in a round changes the realised count
  N_i^t. With fixed denominators (`expected_counts`) the noise on the round's
  update is the same draw, divided by the same numbers; with the realised
  counts of paper 001's Algorithm 2 its stddev moves with N_i^t, which an
  observer of ~40,000 coordinates can estimate (docs/privacy.md).
  """

  _GROUPS = pg.build_groups(algorithms.FedHdp(ratio=0.1),
                            noise_multipliers=[2.3])
  _EXPECTED = (36.0, 4.0)  # q N_i of the private and the opt-out group.
  _Z, _S, _D = 2.3, 0.5, 40_000

  def _round(self, private_count, expected_counts, key=(3, 4)):
    """Delta^t and S^{t+1} of a round whose sums are all zero (noise only)."""
    est = ga.clip_estimator(self._S, 0.5, 0.2)
    sums = [[tf.zeros([self._D])], [tf.zeros([self._D])]]
    counts = tf.constant([private_count, 4.0])
    delta, new_clip, _, _, _ = ga.server_aggregate(
        self._GROUPS, est, 2.0, tf.constant(self._S),
        tf.constant(key, tf.int64), ga.Totals(sums, counts, tf.constant(0.0)),
        expected_counts=expected_counts)
    return delta[0].numpy(), float(new_clip)

  def test_one_client_more_or_less_leaves_the_release_unchanged(self):
    base, clip = self._round(36.0, self._EXPECTED)
    for count in (35.0, 37.0):
      other, other_clip = self._round(count, self._EXPECTED)
      np.testing.assert_array_equal(other, base)
      assert other_clip == clip

  def test_noise_stddev_is_the_fixed_denominators_one(self):
    # Independently: w_p = r q N_p / (r q N_p + q N_np) and the private mean's
    # noise is N(0, (z S / (q N_p))^2); the opt-outs' sum is 0 and unnoised.
    w_p = 0.1 * 36.0 / (0.1 * 36.0 + 4.0)
    sigma = w_p * self._Z * self._S / 36.0
    tolerance = 5 * sigma / math.sqrt(2 * self._D)  # 5 standard errors
    for count in (0.0, 35.0, 36.0, 37.0):
      draws, _ = self._round(count, self._EXPECTED, key=(5, int(count)))
      assert abs(draws.std() - sigma) < tolerance, count

  def test_realised_counts_reveal_one_more_client(self):
    # The test's power: with paper 001's realised denominators the same
    # noise draw is scaled by w_p / N_p^t = r / (r N_p^t + N_np^t), which
    # moves by 1.3% from N_p^t = 36 to 37; an observer estimates the stddev
    # of 40,000 coordinates to 1 / sqrt(2 d) = 0.35%.
    stds = [self._round(count, None, key=(9, 9))[0].std()
            for count in (36.0, 37.0)]
    np.testing.assert_allclose(stds[1] / stds[0], 7.6 / 7.7, rtol=1e-5)
    assert abs(stds[1] / stds[0] - 1) > 3 / math.sqrt(2 * self._D)

  def test_non_private_group_keeps_its_realised_mean(self):
    # No guarantee is claimed for opt-outs: their mean divides by N_np^t.
    groups = pg.build_groups(algorithms.FedHdp(ratio=1.0),
                             noise_multipliers=[0.0])
    est = ga.clip_estimator(1.0, 0.5, 0.0)
    sums = [[tf.constant([0.0])], [tf.constant([6.0])]]
    delta, _, _, _, _ = ga.server_aggregate(
        groups, est, 0.0, tf.constant(1.0), tf.constant([1, 2], tf.int64),
        ga.Totals(sums, tf.constant([2.0, 3.0]), tf.constant(0.0)),
        expected_counts=(1.0, 1.0))
    # w = (1/2, 1/2) from the expected counts; the opt-outs' mean is 6 / 3.
    np.testing.assert_allclose(delta[0].numpy(), [0.5 * 6.0 / 3.0])
