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
"""Heterogeneous-DP aggregation of paper 001 as a `tff.aggregators` factory.

`HeterogeneousDPFactory` aggregates client updates group by group, each with
its own mechanism (TF Privacy queries, `group_aggregation`), combines the
group averages with the ratios r_i and adapts one shared clip norm S^t:

    Delta_i = (1/n_i) sum_{j in C_i^t} Clip(Delta_j, S^t)
              + N(0, (z_i S^t / n_i)^2 I)
    Delta^t = sum_i w_i Delta_i,   w_i = r_i n_i / sum_k r_k n_k
    S^{t+1} = S^t exp(-eta_b ((1/n) sum_j b_j + N(0, z_b^2/n^2) - kappa))

with n_i = q N_i, n = sum_i q N_i when `expected_counts` is given (the
package's runs), else Algorithm 2's realised N_i^t, N^t (`group_aggregation`).

It is a `WeightedAggregationFactory` whose per-client *weight* carries the
client's privacy-group index g(j) in {0, ..., l-1}: groups of different
sizes cannot be separate CLIENTS arguments of one call ("conflicting
cardinalities"), so every client submits its update masked into its group's
slot. Inside `tff.learning.templates.compose_learning_process` the client
work must emit that index as its update weight (TFF 0.87's stock client
works emit 1.0 or the example count, which `create` refuses;
tests/fedhdp/test_hdp_factory.py shows the composition).

Privacy: each private group's sum has L2 sensitivity S^t (add/remove one
client) and noise stddev z_i S^t; the clip count has sensitivity 1/2 per
client (TF Privacy centres it) and noise stddev z_b, so a private group's
accountant uses z_eff = (z_i^-2 + (2 z_b)^-2)^-1/2 (`clip_noise`): with
fixed denominators the whole release of a Poisson-sampled round. With
realised ones the counts must be public: a fixed cohort, accounted under
replace-one neighbours, where both sensitivities double (docs/privacy.md).
"""

import collections
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp.fedhdp import clip_noise
from tff_hdp.fedhdp import group_aggregation
from tff_hdp.fedhdp import privacy_groups
from tff_hdp.privacy import mechanism_key


AggregationParts = collections.namedtuple(
    'AggregationParts', ['initial_state', 'client_records', 'server_update'])
AggregationParts.__doc__ = """The TFF computations of one aggregation.

Attributes:
  initial_state: () -> OrderedDict(clip_norm, noise_key), at the server.
  client_records: (value, group, clip_norm) -> OrderedDict(sums, counts,
    below): a client's update clipped by its group's query and masked into its
    group's slot, its one-hot group, and its centred clip-count record.
  server_update: (state, summed records) -> (new state, Delta^t,
    measurements): noise, group means, combination and the clip update.
"""


def _check_clip(initial_clip: float, target_quantile: float,
                clip_learning_rate: float) -> None:
  """Refuses, in one line, adaptive clipping's S^0, kappa or eta_b."""
  if not initial_clip > 0:
    raise ValueError(f'initial_clip must be > 0, got {initial_clip}')
  if not 0.0 <= target_quantile <= 1.0:
    raise ValueError(
        f'target_quantile must be in [0, 1], got {target_quantile}')
  if not clip_learning_rate >= 0:
    raise ValueError(
        f'clip_learning_rate must be >= 0, got {clip_learning_rate}')


def _checked_expected_counts(expected_counts: Optional[Sequence[float]],
                             num_groups: int
                             ) -> Optional[tuple[float, ...]]:
  """`expected_counts` as floats, one >= 0 per group, or None."""
  if expected_counts is None:
    return None
  expected_counts = tuple(float(c) for c in expected_counts)
  if len(expected_counts) != num_groups or not all(
      c >= 0 for c in expected_counts):
    raise ValueError(f'expected_counts must give one count >= 0 per '
                     f'group ({num_groups}), got {expected_counts}')
  return expected_counts


def _clipped_count_stddev(given: Optional[float],
                          expected_counts: Optional[tuple[float, ...]], *,
                          adapts_noised_clip: bool) -> float:
  """z_b: `given`, or TFF's default 0.05 x the expected cohort, or 0 when
  nothing needs it; refused in one line where a group adds noise and the
  clip norm adapts (`adapts_noised_clip`) without a z_b > 0."""
  if given is None:
    if expected_counts is not None and sum(expected_counts) > 0:
      given = clip_noise.default_clipped_count_stddev(sum(expected_counts))
    elif adapts_noised_clip:
      raise ValueError('clipped_count_stddev is needed when a group adds '
                       'noise, the clip norm adapts and no expected_counts '
                       'give its default (0.05 x expected cohort)')
    else:
      given = 0.0
  if not given >= 0:
    raise ValueError(f'clipped_count_stddev must be >= 0, got {given}')
  if adapts_noised_clip and given == 0:
    raise ValueError('clipped_count_stddev must be > 0 when a group adds '
                     'noise and the clip norm adapts (it privatises the '
                     'clip count)')
  return float(given)


class HeterogeneousDPFactory(tff.aggregators.WeightedAggregationFactory):
  """Group-wise DP averaging with ratio weighting and adaptive clipping."""

  def __init__(self,
               groups: Sequence[privacy_groups.PrivacyGroup],
               *,
               initial_clip: float,
               target_quantile: float = 0.5,
               clip_learning_rate: float = 0.2,
               expected_counts: Optional[Sequence[float]] = None,
               clipped_count_stddev: Optional[float] = None,
               mechanism_seed: Optional[int] = None,
               key_in_state: Optional[bool] = None):
    """Initializes the factory.

    Args:
      groups: The privacy groups; a client's weight is its index here.
      initial_clip: S^0 > 0.
      target_quantile: kappa in [0, 1] (Table 7: 0.5).
      clip_learning_rate: eta_b >= 0 (Table 7: 0.2); 0 keeps S fixed.
      expected_counts: Expected clients of each group per round, q N_i (>= 0,
        one per group): the private groups' means, the combination weights
        and the clip update divide by these fixed denominators
        (`group_aggregation`), which Poisson-sampled accounting needs. None:
        the realised counts of each round (paper 001's Algorithm 2; a bound
        then needs a fixed cohort, see `tff_hdp.privacy.accounting`).
      clipped_count_stddev: z_b >= 0, stddev of the noise on the clip count
        sum. Default (None): TFF's 0.05 x the expected cohort,
        sum(expected_counts) (`clip_noise.default_clipped_count_stddev`);
        without `expected_counts` it must then be given when a group adds
        noise and the clip adapts. Must be > 0 in that case.
      mechanism_seed: None (the default): every round draws fresh secret
        noise (`tff_hdp.privacy.mechanism_key.key_tensor`), as TF Privacy's
        and TFF's DP aggregators do, and the state holds no key, so no
        output, saved state or released "model" lets anyone regenerate the
        noise. An integer: the noise comes from the key derived from it,
        kept in the state (`noise_key`) and split every round, for
        bit-reproducible research runs only; whoever knows the integer can
        subtract the noise, so epsilon is then not a guarantee for the
        outputs.
      key_in_state: Keep the noise key in the state (`noise_key`: from
        `mechanism_seed`, or fresh at `initialize` without one) and draw
        every round's noise from it; default: only with a
        `mechanism_seed`. The drivers set it, to put their run's secret key
        there and resume a checkpoint exactly.
    """
    if not groups:
      raise ValueError('groups must name at least one privacy group')
    _check_clip(initial_clip, target_quantile, clip_learning_rate)
    expected_counts = _checked_expected_counts(expected_counts, len(groups))
    self._groups = tuple(groups)
    self._initial_clip = float(initial_clip)
    self._target_quantile = float(target_quantile)
    self._clip_learning_rate = float(clip_learning_rate)
    self._clipped_count_stddev = _clipped_count_stddev(
        clipped_count_stddev, expected_counts,
        adapts_noised_clip=(any(g.noise_multiplier for g in groups) and
                            clip_learning_rate > 0))
    self._expected_counts = expected_counts
    self._mechanism_seed = mechanism_key.check_mechanism_seed(mechanism_seed)
    self._key_in_state = (mechanism_seed is not None if key_in_state is None
                          else bool(key_in_state))

  @property
  def groups(self) -> tuple[privacy_groups.PrivacyGroup, ...]:
    return self._groups

  @property
  def initial_clip(self) -> float:
    return self._initial_clip

  @property
  def target_quantile(self) -> float:
    return self._target_quantile

  @property
  def clip_learning_rate(self) -> float:
    return self._clip_learning_rate

  @property
  def expected_counts(self) -> Optional[tuple[float, ...]]:
    """Per group, the fixed denominator q N_i; None for realised counts."""
    return self._expected_counts

  @property
  def clipped_count_stddev(self) -> float:
    return self._clipped_count_stddev

  @property
  def mechanism_seed(self) -> Optional[int]:
    """None (fresh secret noise) or the reproducible key's published seed."""
    return self._mechanism_seed

  @property
  def key_in_state(self) -> bool:
    """Whether the state holds the noise key (`noise_key`)."""
    return self._key_in_state

  def _estimator(self):
    return group_aggregation.clip_estimator(self._initial_clip,
                                            self._target_quantile,
                                            self._clip_learning_rate)

  def create_parts(self, value_type, weight_type) -> AggregationParts:
    """The aggregation's TFF computations, before federated orchestration.

    `create` composes them into an `AggregationProcess`; a runtime that splits
    a round differently (e.g. `distributed`, which merges partial sums of
    several workers before the server update) composes them itself.

    Raises:
      TypeError: if `weight_type` is not a scalar integer (the client's
        privacy-group index), e.g. the float weight of TFF's stock builders.
    """
    weight_type = check_group_weight_type(weight_type, len(self._groups))
    value_type = tff.types.to_type(value_type)
    groups = self._groups
    estimator = self._estimator()
    count_stddev = self._clipped_count_stddev

    key_in_state = self._key_in_state

    @tff.tensorflow.computation
    def initial_state():
      state = collections.OrderedDict(
          clip_norm=tf.constant(self._initial_clip, tf.float32))
      if key_in_state:
        state['noise_key'] = mechanism_key.key_tensor(self._mechanism_seed)
      return state

    state_type = initial_state.type_signature.result

    @tff.tensorflow.computation(value_type, weight_type, np.float32)
    def client_records(value, group, clip_norm):
      group = checked_group_index(group, len(groups))
      sums, counts, below = group_aggregation.client_record(
          groups, estimator, clip_norm, tf.nest.flatten(value), group)
      return collections.OrderedDict(
          sums=[tf.nest.pack_sequence_as(value, s) for s in sums],
          counts=counts,
          below=below)

    @tff.tensorflow.computation(state_type, client_records.type_signature.result)
    def server_update(state, totals):
      noise_key = (state['noise_key'] if key_in_state else
                   mechanism_key.key_tensor(None))  # Fresh every round.
      out = group_aggregation.server_aggregate(
          groups, estimator, count_stddev, state['clip_norm'], noise_key,
          group_aggregation.Totals(
              [tf.nest.flatten(s) for s in totals['sums']], totals['counts'],
              totals['below']),
          expected_counts=self._expected_counts)
      new_state = collections.OrderedDict(clip_norm=out.clip_norm)
      if key_in_state:
        new_state['noise_key'] = out.noise_key
      result = tf.nest.pack_sequence_as(totals['sums'][0], out.delta)
      return new_state, result, out.measurements

    return AggregationParts(initial_state, client_records, server_update)

  def create(self, value_type, weight_type) -> tff.templates.AggregationProcess:
    parts = self.create_parts(value_type, weight_type)
    value_type = tff.types.to_type(value_type)
    state_type = parts.initial_state.type_signature.result

    @tff.federated_computation
    def init_fn():
      return tff.federated_eval(parts.initial_state, tff.SERVER)

    @tff.federated_computation(
        init_fn.type_signature.result,
        tff.FederatedType(value_type, tff.CLIENTS),
        tff.FederatedType(weight_type, tff.CLIENTS))
    def next_fn(state, value, weight):
      clip_norm = tff.federated_broadcast(
          tff.federated_map(select_clip_norm(state_type), state))
      records = tff.federated_map(parts.client_records,
                                  (value, weight, clip_norm))
      totals = tff.federated_sum(records)
      output = tff.federated_map(parts.server_update, (state, totals))
      return tff.templates.MeasuredProcessOutput(
          state=output[0], result=output[1], measurements=output[2])

    return tff.templates.AggregationProcess(init_fn, next_fn)


def select_clip_norm(state_type):

  @tff.tensorflow.computation(state_type)
  def select(state):
    return state['clip_norm']

  return select


def is_integer_index_type(weight_type) -> bool:
  """Whether `weight_type` is a scalar int32/int64 tensor type."""
  try:
    weight_type = tff.types.to_type(weight_type)
  except (TypeError, ValueError):
    return False
  return (isinstance(weight_type, tff.TensorType) and
          weight_type.dtype in (np.int32, np.int64) and weight_type.shape == ())


def check_group_weight_type(weight_type, num_groups: int):
  """`weight_type` as a TFF type if it can carry a group index; else raises.

  TFF's stock builders (`tff.learning.algorithms.build_weighted_fed_avg`,
  `build_unweighted_fed_avg`) create the aggregator with a float32 weight,
  1.0 or the example count, that would be read as a group index: every client
  in group 1 or dropped, and no private group's noise.
  """
  if not is_integer_index_type(weight_type):
    raise TypeError(
        'HeterogeneousDPFactory needs each client\'s weight to be its '
        f'privacy-group index, an integer in [0, {num_groups}) (a scalar '
        f'int32 or int64), got weight type {weight_type}; build the round '
        'with tff_hdp.fedhdp.build_fedhdp_process, which passes it: '
        'TFF\'s stock build_weighted_fed_avg / build_unweighted_fed_avg pass '
        'a float weight (1.0 or the example count) and cannot carry it')
  return tff.types.to_type(weight_type)


def checked_group_index(group: tf.Tensor, num_groups: int) -> tf.Tensor:
  """`group` once asserted to be in [0, num_groups) (the round fails if not).

  The assertions are control dependencies of the returned tensor, so they run
  inside a TFF tensorflow computation (a graph), where an unused assertion
  would be pruned.
  """
  message = ('HeterogeneousDPFactory: the weight of each client must be its '
             f'privacy-group index, an integer in [0, {num_groups})')
  checks = [
      tf.debugging.assert_non_negative(group, message=message),
      tf.debugging.assert_less(group, tf.cast(num_groups, group.dtype),
                               message=message),
  ]
  with tf.control_dependencies([c for c in checks if c is not None]):
    return tf.identity(group)

