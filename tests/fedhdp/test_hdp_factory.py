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
"""The heterogeneous-DP aggregator, run through TFF."""

import collections
import math

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp.fedhdp import algorithms
from tff_hdp.fedhdp import hdp_factory
from tff_hdp.fedhdp import privacy_groups as pg

VALUE_TYPE = tff.types.to_type([(np.float32, (2,)), (np.float32, ())])


def _factory(algorithm=None, z=0.0, r=0.5, **kwargs):
  groups = pg.build_groups(algorithm or algorithms.FedHdp(ratio=r),
                           noise_multipliers=[z])
  kwargs.setdefault('initial_clip', 10.0)
  kwargs.setdefault('clipped_count_stddev', 1.0 if z else 0.0)
  return hdp_factory.HeterogeneousDPFactory(groups, **kwargs)


def _value(a, b):
  return [np.array([a, a], np.float32), np.float32(b)]


def test_hand_computed_round(tff_runtime):
  del tff_runtime
  process = _factory(r=0.5).create(VALUE_TYPE, tff.TensorType(np.int32))
  out = process.next(process.initialize(),
                     [_value(1, 1), _value(3, 3), _value(5, 0)], [0, 0, 1])
  # Private mean (2, 2, 2), non-private (5, 5, 0); w_p = 0.5*2/(0.5*2+1).
  np.testing.assert_allclose(out.result[0], [3.5, 3.5], rtol=1e-6)
  assert float(out.result[1]) == pytest.approx(1.0)
  m = out.measurements
  # Published: no realised count of any group (it would reveal who took
  # part); the weights here are of realised counts, the paper's Alg. 2.
  assert not [k for k in m if k.endswith('count')]
  assert m['private/weight'] == pytest.approx(0.5)
  # Every norm is below S = 10: unclipped fraction 1, S <- 10 e^{-0.2*0.5}.
  assert float(out.state['clip_norm']) == pytest.approx(10 * math.exp(-0.1),
                                                        rel=1e-6)


def test_hand_computed_round_with_fixed_denominators(tff_runtime):
  del tff_runtime
  # Expected counts: 4 private and 2 non-private clients per round.
  process = _factory(r=0.5, expected_counts=(4.0, 2.0)).create(
      VALUE_TYPE, tff.TensorType(np.int32))
  out = process.next(process.initialize(),
                     [_value(1, 1), _value(3, 3), _value(5, 0)], [0, 0, 1])
  # Private sum (4, 4, 4) / 4; non-private (realised) mean (5, 5, 0);
  # w_p = 0.5 * 4 / (0.5 * 4 + 2) = 0.5 from the expected counts.
  np.testing.assert_allclose(out.result[0], [3.0, 3.0], rtol=1e-6)
  assert float(out.result[1]) == pytest.approx(0.5)
  assert out.measurements['private/weight'] == pytest.approx(0.5)
  # Clip update over the expected cohort of 6: (3 - 3 x 1/2)/6 + 1/2 below.
  assert float(out.measurements['unclipped_fraction']) == pytest.approx(
      3 * 0.5 / 6 + 0.5)


def test_clipped_count_stddev_defaults_to_tff_share_of_expected_cohort():
  groups = pg.build_groups(algorithms.FedHdp(ratio=0.1),
                           noise_multipliers=[1.0])
  factory = hdp_factory.HeterogeneousDPFactory(
      groups, initial_clip=1.0, expected_counts=(36.0, 4.0))
  assert factory.clipped_count_stddev == pytest.approx(0.05 * 40)
  with pytest.raises(ValueError, match='clipped_count_stddev is needed'):
    hdp_factory.HeterogeneousDPFactory(groups, initial_clip=1.0)
  with pytest.raises(ValueError, match='one count >= 0 per group'):
    hdp_factory.HeterogeneousDPFactory(groups, initial_clip=1.0,
                                       expected_counts=(1.0,))


def test_clipping_applies_to_every_group_of_fedhdp(tff_runtime):
  del tff_runtime
  process = _factory(r=1.0, initial_clip=1.0).create(VALUE_TYPE,
                                                     tff.TensorType(np.int32))
  out = process.next(process.initialize(), [_value(3, 0), _value(0, 4)], [0, 1])
  # Each update has norm > 1 and is clipped to norm 1 before averaging.
  np.testing.assert_allclose(out.result[0], [0.5 * 3 / math.sqrt(18)] * 2,
                             rtol=1e-5)
  assert float(out.result[1]) == pytest.approx(0.5)


def test_non_private_baseline_does_not_clip(tff_runtime):
  del tff_runtime
  process = _factory(algorithms.NonPrivate(), initial_clip=0.1).create(
      VALUE_TYPE, tff.TensorType(np.int32))
  out = process.next(process.initialize(), [_value(3, 0), _value(1, 4)], [0, 0])
  np.testing.assert_allclose(out.result[0], [2.0, 2.0], rtol=1e-6)
  assert float(out.result[1]) == pytest.approx(2.0)


def test_private_noise_has_configured_stddev_and_non_private_none(tff_runtime):
  del tff_runtime
  d, z, s = 20_000, 1.5, 2.0
  value_type = tff.types.to_type([(np.float32, (d,))])
  groups = pg.build_groups(algorithms.FedHdp(ratio=1.0),
                           noise_multipliers=[z])
  factory = hdp_factory.HeterogeneousDPFactory(
      groups, initial_clip=s, clipped_count_stddev=1.0, mechanism_seed=11)
  process = factory.create(value_type, tff.TensorType(np.int32))
  zeros = [np.zeros(d, np.float32)]
  ones = [np.full(d, 1e-3, np.float32)]
  # Three private clients sending zeros, one non-private sending 1e-3.
  out = process.next(process.initialize(), [zeros, zeros, zeros, ones],
                     [0, 0, 0, 1])
  w_p = 3 / 4  # r = 1: weights are the counts' shares.
  result = np.asarray(out.result[0])
  # result = w_p * N(0, (z S / 3)^2) + w_np * 1e-3, coordinate-wise.
  noise = (result - 0.25 * 1e-3) / w_p
  sigma = z * s / 3
  assert abs(noise.std() - sigma) < 5 * sigma / math.sqrt(2 * d)
  # A round with only the non-private client: its update, with no noise
  # (to float32 rounding: its clip factor S / max(S, ||u||) is 1 up to it).
  out = process.next(out.state, [ones], [1])
  np.testing.assert_allclose(out.result[0], ones[0], rtol=1e-6, atol=0)


def test_same_mechanism_seed_same_noise(tff_runtime):
  del tff_runtime
  runs = []
  for seed in (3, 3, 4):
    process = _factory(z=1.0, mechanism_seed=seed).create(
        VALUE_TYPE, tff.TensorType(np.int32))
    out = process.next(process.initialize(), [_value(1, 1)], [0])
    runs.append(np.asarray(out.result[0]))
  np.testing.assert_array_equal(runs[0], runs[1])
  assert not np.allclose(runs[0], runs[2])


def test_without_a_mechanism_seed_the_noise_is_fresh_and_no_key_is_kept(
    tff_runtime):
  del tff_runtime
  results = []
  for factory in (_factory(z=1.0), _factory(z=1.0)):
    process = factory.create(VALUE_TYPE, tff.TensorType(np.int32))
    state = process.initialize()
    assert list(state) == ['clip_norm']  # Nothing secret in the state.
    for _ in range(2):  # Two runs of one process, and of two processes.
      results.append(np.asarray(process.next(state, [_value(1, 1)],
                                             [0]).result[0]))
  for i in range(4):
    for j in range(i):
      assert not np.allclose(results[i], results[j])
  seeded = _factory(z=1.0, mechanism_seed=3)
  assert seeded.key_in_state
  assert list(seeded.create(VALUE_TYPE, tff.TensorType(np.int32))
              .initialize()) == ['clip_norm', 'noise_key']


def test_noise_differs_between_rounds(tff_runtime):
  del tff_runtime
  process = _factory(z=1.0, clip_learning_rate=0.0).create(
      VALUE_TYPE, tff.TensorType(np.int32))
  state = process.initialize()
  first = process.next(state, [_value(0, 0)], [0])
  second = process.next(first.state, [_value(0, 0)], [0])
  assert not np.allclose(first.result[0], second.result[0])


def test_validation_messages():
  with pytest.raises(ValueError, match='initial_clip must be > 0'):
    _factory(initial_clip=0.0)
  with pytest.raises(ValueError, match='target_quantile must be in'):
    _factory(target_quantile=1.5)
  with pytest.raises(ValueError, match='clipped_count_stddev must be > 0'):
    _factory(z=1.0, clipped_count_stddev=0.0)


def test_usable_inside_tff_learning(tff_runtime):
  """Composes with stock tff.learning building blocks and runs a round.

  TFF's stock client works emit a float weight (1.0 or the example count),
  which the factory refuses (tests/test_factory_misuse.py). Here the client
  work is the stock one with its weight replaced by the client's group
  index, which each client's data carries.
  """
  del tff_runtime

  def model_fn():
    keras_model = tf.keras.Sequential(
        [tf.keras.layers.Dense(2, input_shape=(3,))])
    return tff.learning.models.from_keras_model(
        keras_model,
        input_spec=(tf.TensorSpec([None, 3], tf.float32),
                    tf.TensorSpec([None], tf.int32)),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))

  @tff.tensorflow.computation
  def initial_weights():
    return tff.learning.models.ModelWeights.from_model(model_fn())

  weights_type = initial_weights.type_signature.result
  stock = tff.learning.templates.build_model_delta_client_work(
      model_fn, tff.learning.optimizers.build_sgdm(0.1),
      client_weighting=tff.learning.ClientWeighting.UNIFORM)
  state_type, model_type, data_type = stock.next.type_signature.parameter
  group_type = tff.SequenceType(np.int32)

  @tff.tensorflow.computation(stock.next.type_signature.result.result.member,
                              group_type)
  def weigh_by_group(result, group):
    return tff.learning.templates.ClientResult(
        update=result.update,
        update_weight=group.reduce(np.int32(0), lambda _, g: g))

  @tff.federated_computation(
      state_type, model_type,
      tff.FederatedType(
          collections.OrderedDict(data=data_type.member, group=group_type),
          tff.CLIENTS))
  def next_fn(state, model, client_data):
    out = stock.next(state, model, client_data.data)
    return tff.templates.MeasuredProcessOutput(
        state=out.state,
        result=tff.federated_map(weigh_by_group,
                                 (out.result, client_data.group)),
        measurements=out.measurements)

  client_work = tff.learning.templates.ClientWorkProcess(stock.initialize,
                                                         next_fn)
  aggregator = _factory(z=1.0, r=0.5).create(weights_type.trainable,
                                            tff.TensorType(np.int32))
  process = tff.learning.templates.compose_learning_process(
      initial_weights,
      tff.learning.templates.build_broadcast_process(weights_type),
      client_work,
      aggregator,
      tff.learning.templates.build_apply_optimizer_finalizer(
          tff.learning.optimizers.build_sgdm(1.0), weights_type))
  data = tf.data.Dataset.from_tensor_slices(
      (np.ones((4, 3), np.float32), np.array([0, 1, 0, 1], np.int32))).batch(2)
  clients = [
      collections.OrderedDict(data=data,
                              group=tf.data.Dataset.from_tensors(np.int32(g)))
      for g in (0, 1, 1)
  ]
  output = process.next(process.initialize(), clients)
  aggregation = output.metrics['aggregator']
  assert set(aggregation) == {'clip_norm', 'unclipped_fraction',
                              'private/weight', 'non_private/weight'}
