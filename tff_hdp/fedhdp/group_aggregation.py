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
"""Server-side maths of paper 001, Algorithm 2, in plain TensorFlow.

For each privacy group i, with n_i the group's denominator:

    Delta_i = (1/n_i) sum_j Clip(Delta_j, S^t) + N(0, (z_i S^t / n_i)^2 I),

then Delta^t = sum_i w_i Delta_i with w_i = r_i n_i / sum_k r_k n_k, and the
clip norm moves by Andrew et al. (2019)'s geometric quantile update

    S^{t+1} = S^t exp(-eta_b ((1/n) sum_j b_j + N(0, z_b^2 / n^2) - kappa)).

Two choices of denominators (`expected_counts`): *fixed* (the package's
default, as McMahan et al. 2018 and TFF's DP aggregators), n_i = q N_i and
n = sum_i q N_i, so a private group's release depends on who took part only
through their clipped contributions, as Poisson accounting assumes (a
non-private group still divides by its realised count); or *realised*
(`expected_counts=None`, Algorithm 2 as printed), n_i = N_i^t and n = N^t:
public for a fixed cohort (accounted under replace-one neighbours,
`tff_hdp.privacy.accounting`), revealing who took part under Poisson
sampling, where no bound covers the release.

The mechanisms are TF Privacy's DP queries: a private group is a
`GaussianSumQuery(l2_norm_clip=S^t, stddev=z_i S^t)`, FedHDP's non-private
group the same query with stddev 0 (clipped, not noised), the Non-Private
baseline's group a `NoPrivacySumQuery` (a null mechanism); the clip update
is TF Privacy's `QuantileEstimatorQuery`. The Gaussian is drawn at the
query's stddev by `tf.random.stateless_normal` from the state's `noise_key`
(secret unless a `mechanism_seed` is given), not TF's stateful RNG, so a
resumed run repeats it. The measurements hold only what the mechanism
released, never a realised count (why, and the threat model: docs/privacy.md).
"""

import collections
from typing import NamedTuple, Sequence

import tensorflow as tf
import tensorflow_privacy as tfp

from tff_hdp.fedhdp import privacy_groups
from tff_hdp.privacy import mechanism_key


def value_query(group: privacy_groups.PrivacyGroup,
                clip_norm: tf.Tensor) -> tfp.DPQuery:
  """The sum query of one privacy group at clip norm S^t."""
  if not group.clip:
    return tfp.NoPrivacySumQuery()
  z = group.noise_multiplier or 0.0
  return tfp.GaussianSumQuery(l2_norm_clip=clip_norm, stddev=z * clip_norm)


def noise_stddev(query: tfp.DPQuery, global_state) -> tf.Tensor:
  """The stddev of the noise `query` adds to its sum (0 for a null query)."""
  if isinstance(query, tfp.GaussianSumQuery):
    return global_state.stddev
  return tf.constant(0.0)


def clip_record(query: tfp.DPQuery, record: Sequence[tf.Tensor]):
  """Clip(Delta_j, S^t) by the query's own record preprocessing."""
  global_state = query.initial_global_state()
  params = query.derive_sample_params(global_state)
  return query.preprocess_record(params, list(record))


def global_norm(record: Sequence[tf.Tensor]) -> tf.Tensor:
  return tf.linalg.global_norm(list(record))


def combination_weights(counts: tf.Tensor, ratios: tf.Tensor) -> tf.Tensor:
  """w_i = r_i n_i / sum_k r_k n_k; all zero if the denominator is zero.

  `counts` are the groups' denominators n_i (expected or realised, see the
  module docstring). With realised counts a group with no sampled client gets
  weight 0, and if every sampled client is in a group of ratio 0 (e.g. FedHDP
  with r = 0 and no opt-out client sampled), the round makes no update.
  """
  counts = tf.cast(counts, tf.float32)
  scores = tf.cast(ratios, tf.float32) * counts
  return tf.math.divide_no_nan(scores, tf.reduce_sum(scores))


def stateless_gaussian_like(values: Sequence[tf.Tensor], stddev: tf.Tensor,
                            key: tf.Tensor) -> list[tf.Tensor]:
  """Independent N(0, stddev^2) draws shaped like `values`, from `key`."""
  out = []
  for k, v in enumerate(values):
    seed = mechanism_key.fold_in(key, k)
    out.append(
        tf.random.stateless_normal(tf.shape(v), seed=seed, stddev=stddev,
                                   dtype=v.dtype))
  return out


def noised_group_sum(clipped_sum: Sequence[tf.Tensor], stddev: tf.Tensor,
                     key: tf.Tensor) -> list[tf.Tensor]:
  """sum + N(0, stddev^2 I): the group's release before the division by the
  (public) count."""
  noise = stateless_gaussian_like(clipped_sum, stddev, key)
  return [s + n for s, n in zip(clipped_sum, noise)]


def group_mean(release: Sequence[tf.Tensor],
               count: tf.Tensor) -> list[tf.Tensor]:
  """The noised sum over the group's denominator n_i; zeros if n_i = 0."""
  denominator = tf.cast(count, tf.float32)
  return [tf.math.divide_no_nan(s, denominator) for s in release]


def noised_group_mean(clipped_sum: Sequence[tf.Tensor], count: tf.Tensor,
                      stddev: tf.Tensor, key: tf.Tensor) -> list[tf.Tensor]:
  """(sum + N(0, stddev^2 I)) / n_i, as `server_aggregate` computes it."""
  return group_mean(noised_group_sum(clipped_sum, stddev, key), count)


def combine(group_means: Sequence[Sequence[tf.Tensor]],
            weights: tf.Tensor) -> list[tf.Tensor]:
  """Delta^t = sum_i w_i Delta_i."""
  return [
      tf.add_n([weights[i] * means[k] for i, means in enumerate(group_means)])
      for k in range(len(group_means[0]))
  ]


def clip_estimator(initial_clip: float, target_quantile: float,
                   learning_rate: float) -> tfp.QuantileEstimatorQuery:
  """Andrew et al. (2019) geometric quantile estimator of TF Privacy.

  Its below-estimate noise is set to 0 here: the noise N(0, z_b^2) is added to
  the clip-count sum by `update_clip_norm` with a stateless draw (see the
  module docstring), which is the same mechanism.
  """
  return tfp.QuantileEstimatorQuery(
      initial_estimate=initial_clip,
      target_quantile=target_quantile,
      learning_rate=learning_rate,
      below_estimate_stddev=0.0,
      expected_num_records=1.0,
      geometric_update=True)


def _estimator_state(estimator: tfp.QuantileEstimatorQuery,
                     clip_norm: tf.Tensor):
  return estimator.initial_global_state()._replace(
      current_estimate=tf.cast(clip_norm, tf.float32))


def below_record(estimator: tfp.QuantileEstimatorQuery, clip_norm: tf.Tensor,
                 norm: tf.Tensor) -> tf.Tensor:
  """A client's centred clip-count record b_j - 1/2, b_j = 1[norm <= S^t]."""
  state = _estimator_state(estimator, clip_norm)
  params = estimator.derive_sample_params(state)
  return estimator.preprocess_record(params, norm)


def update_clip_norm(estimator: tfp.QuantileEstimatorQuery,
                     clip_norm: tf.Tensor, below_sum: tf.Tensor,
                     count: tf.Tensor, clipped_count_stddev: tf.Tensor,
                     key: tf.Tensor):
  """S^{t+1} from the summed centred counts sum_j (b_j - 1/2) of the cohort.

  Args:
    estimator: From `clip_estimator` (holds kappa and eta_b).
    clip_norm: S^t.
    below_sum: Sum over the sampled clients of `below_record`.
    count: The denominator n: the expected cohort sum_i q N_i (fixed
      denominators) or the realised N^t (the paper's).
    clipped_count_stddev: z_b, stddev of the noise on the count sum.
    key: Stateless RNG key of this draw.

  Returns:
    (S^{t+1}, noised unclipped fraction). S stays put in a round with no
    client.
  """
  noise = tf.random.stateless_normal([], seed=key,
                                     stddev=clipped_count_stddev)
  noised_sum = tf.cast(below_sum, tf.float32) + noise
  count = tf.cast(count, tf.float32)
  state = _estimator_state(estimator, clip_norm)
  # Divide by n: the estimator's below-estimate query is a NormalizedQuery
  # whose denominator lives in its global state.
  state = state._replace(
      below_estimate_state=state.below_estimate_state._replace(
          denominator=tf.maximum(count, 1.0)))
  new_clip = estimator.get_noised_result(noised_sum, state)[0]
  new_clip = tf.where(count > 0, new_clip, state.current_estimate)
  unclipped_fraction = tf.math.divide_no_nan(noised_sum, count) + 0.5
  return new_clip, unclipped_fraction


def client_record(groups: Sequence[privacy_groups.PrivacyGroup],
                  estimator: tfp.QuantileEstimatorQuery, clip_norm: tf.Tensor,
                  update: Sequence[tf.Tensor], group: tf.Tensor):
  """What one client contributes to the sums of Algorithm 2's server step.

  Args:
    groups: The privacy groups.
    estimator: From `clip_estimator`.
    clip_norm: S^t.
    update: The client's unclipped Delta_j, one tensor per weight.
    group: The client's group index g(j).

  Returns:
    (sums, counts, below): per group, the update clipped by that group's query
    if the client is in it and zeros otherwise; the one-hot group [l]; and
    the centred clip-count record b_j - 1/2.
  """
  group = tf.cast(group, tf.int32)
  sums, counts = [], []
  for i, g in enumerate(groups):
    mask = tf.cast(tf.equal(group, i), tf.float32)
    clipped = clip_record(value_query(g, clip_norm), update)
    sums.append([mask * c for c in clipped])
    counts.append(mask)
  below = below_record(estimator, clip_norm, global_norm(update))
  return sums, tf.stack(counts), below


def denominators(groups: Sequence[privacy_groups.PrivacyGroup],
                 counts: tf.Tensor, expected_counts=None):
  """(n_i per group, n for the clip count) of one round.

  Realised counts when `expected_counts` is None; otherwise each private
  group's expected count, each non-private group's realised count (for its
  own mean only), and expected counts for the clip count.
  """
  counts = tf.cast(counts, tf.float32)
  if expected_counts is None:
    return counts, tf.reduce_sum(counts)
  expected = tf.constant(expected_counts, tf.float32)
  private = tf.constant([g.is_private for g in groups])
  return tf.where(private, expected, counts), tf.reduce_sum(expected)


class ServerUpdate(NamedTuple):
  """Algorithm 2's server step: what `server_aggregate` returns."""
  delta: list  # Delta^t, per weight tensor.
  clip_norm: tf.Tensor  # S^{t+1}.
  noise_key: tf.Tensor  # The next round's noise key.
  measurements: collections.OrderedDict
  # Per group, its release: the noised sum of its clipped updates, per
  # weight tensor (what a privacy audit observes, `tff_hdp.fedhdp.audit`).
  releases: list


class Totals(NamedTuple):
  """The cohort's `client_record`s, summed: what `server_aggregate` takes."""
  sums: list  # Per group, the summed clipped updates (lists of tensors).
  counts: tf.Tensor  # [l] clients per group, N_i^t.
  below_sum: tf.Tensor  # Summed centred clip-count records.


def server_aggregate(groups: Sequence[privacy_groups.PrivacyGroup],
                     estimator: tfp.QuantileEstimatorQuery,
                     clipped_count_stddev: float, clip_norm: tf.Tensor,
                     noise_key: tf.Tensor, totals: Totals, *,
                     expected_counts=None) -> 'ServerUpdate':
  """Algorithm 2's server step on the summed client records.

  Noise keys: `stateless_split(noise_key, l + 2)`; group i's noise comes from
  key i, the clip count's from key l, and key l + 1 is the next round's key.

  Args:
    groups: The privacy groups (their ratios r_i weight the combination).
    estimator: From `clip_estimator`.
    clipped_count_stddev: z_b.
    clip_norm: S^t.
    noise_key: This round's int64 [2] key.
    totals: The summed clipped updates per group, the clients per group
      N_i^t and the summed centred clip-count records (`Totals`).
    expected_counts: [l] expected clients per group per round (q N_i): the
      fixed denominators of the module docstring. None: the realised counts.

  Returns:
    A `ServerUpdate`.
  """
  sums, counts, below_sum = totals
  num_groups = len(groups)
  ratios = tf.constant([g.ratio for g in groups], tf.float32)
  keys = tf.random.experimental.stateless_split(noise_key, num=num_groups + 2)
  releases = []
  for i, g in enumerate(groups):
    query = value_query(g, clip_norm)
    stddev = noise_stddev(query, query.initial_global_state())
    releases.append(noised_group_sum(list(sums[i]), stddev, keys[i]))
  group_denominators, count_denominator = denominators(groups, counts,
                                                      expected_counts)
  means = [group_mean(release, group_denominators[i])
           for i, release in enumerate(releases)]
  weights = combination_weights(
      counts if expected_counts is None else expected_counts, ratios)
  delta = combine(means, weights)
  new_clip, unclipped_fraction = update_clip_norm(
      estimator, clip_norm, below_sum, count_denominator,
      clipped_count_stddev, keys[num_groups])
  measurements = collections.OrderedDict(clip_norm=clip_norm)
  measurements['unclipped_fraction'] = unclipped_fraction
  for i, g in enumerate(groups):
    measurements[f'{g.name}/weight'] = weights[i]
  return ServerUpdate(delta, new_clip, keys[num_groups + 1], measurements,
                      releases)
