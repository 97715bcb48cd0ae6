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
"""Our aggregation factories refuse the weights they cannot honour.

`HeterogeneousDPFactory` reads a client's weight as its privacy-group index
and `NoiseAwareAggregationFactory` as its row index. TFF's stock FedAvg
builders pass a float weight (1.0 or the example count): read as an index it
would put every client in group 1 (no noise) or drop them all, so `create`
refuses it; an integer index out of range, or a row sent twice, fails the
round. The package's own builders, which pass the indices, still run.
"""

import collections
import re

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import models
from tff_hdp import templates
from tff_hdp.privacy import round_privacy
from tff_hdp.fedhdp import algorithms
from tff_hdp.fedhdp import hdp_factory
from tff_hdp.fedhdp import process as fedhdp_process
from tff_hdp.fedhdp import privacy_groups as pg
from tff_hdp.privacy import mechanism_key
from tff_hdp.robust_hdp import aggregator as aggregator_lib
from tff_hdp.robust_hdp import dp_sgd
from tff_hdp.robust_hdp import rule_registry
from tff_hdp.robust_hdp import tff_backend as robust_tff_backend
from tff_hdp.robust_hdp import direct_backend as robust_direct_backend
from tff_hdp.robust_hdp import executors as robust_executors

VALUE_TYPE = tff.types.to_type([(np.float32, (2,))])
# A tiny model (4 inputs, 3 hidden units, 2 classes) for the package builders.
SPEC = models.fc_model(input_shape=(4,), num_classes=2, hidden=3)


def _hdp_factory():
  groups = pg.build_groups(algorithms.FedHdp(ratio=0.5),
                           noise_multipliers=[1.0])
  return hdp_factory.HeterogeneousDPFactory(groups, initial_clip=1.0,
                                            clipped_count_stddev=1.0)


def _robust_factory(num_clients=2):
  return aggregator_lib.NoiseAwareAggregationFactory(
      rule_registry.get('dpfedavg'), num_clients,
      told={'weights': [1.0 / num_clients] * num_clients})


FACTORIES = {
    'fedhdp': (_hdp_factory, 'privacy-group index, an integer in [0, 2)',
               'tff_hdp.fedhdp.build_fedhdp_process'),
    'robust_hdp': (_robust_factory,
                   'row index, an integer in [0, 2) unique per client',
                   'tff_hdp.robust_hdp.build_robust_hdp_process'),
}


def _keras_model_fn():
  keras_model = tf.keras.Sequential(
      [tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(2)])
  return tff.learning.models.from_keras_model(
      keras_model,
      input_spec=(tf.TensorSpec([None, 4], tf.float32),
                  tf.TensorSpec([None], tf.int32)),
      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))


def _client_data(seed, n=4):
  rng = np.random.default_rng(seed)
  return (rng.random((n, 4)).astype(np.float32),
          rng.integers(0, 2, n).astype(np.int32))


@pytest.mark.parametrize('factory', sorted(FACTORIES))
@pytest.mark.parametrize('weighting', [tff.learning.ClientWeighting.UNIFORM,
                                       tff.learning.ClientWeighting.NUM_EXAMPLES])
def test_stock_weighted_fed_avg_is_refused(factory, weighting):
  make, needs, builder = FACTORIES[factory]
  with pytest.raises(TypeError) as raised:
    tff.learning.algorithms.build_weighted_fed_avg(
        _keras_model_fn, tff.learning.optimizers.build_sgdm(0.1),
        client_weighting=weighting, model_aggregator=make())
  message = str(raised.value)
  assert '\n' not in message
  assert "each client's weight to be its " + needs in message
  assert 'got weight type float32' in message
  assert f'build the round with {builder}, which passes it' in message
  assert ('stock build_weighted_fed_avg / build_unweighted_fed_avg pass a '
          'float weight (1.0 or the example count) and cannot carry it'
          in message)


@pytest.mark.parametrize('factory', sorted(FACTORIES))
def test_stock_unweighted_fed_avg_is_refused(factory):
  # TFF's own type check refuses a weighted factory before `create`, so its
  # message, not ours, names what is wrong (no process is built). Ours could
  # be reached only by making the factories claim to be unweighted ones too,
  # which would misroute TFF's isinstance dispatch (e.g. `add_measurements`).
  make = FACTORIES[factory][0]
  with pytest.raises(TypeError, match=(
      r'^Expected \S*UnweightedAggregationFactory, found \S*'
      r'(HeterogeneousDPFactory|NoiseAwareAggregationFactory)\.$')):
    tff.learning.algorithms.build_unweighted_fed_avg(
        _keras_model_fn, tff.learning.optimizers.build_sgdm(0.1),
        model_aggregator=make())


@pytest.mark.parametrize('factory', sorted(FACTORIES))
@pytest.mark.parametrize('weight_type', [
    tff.TensorType(np.float32), tff.TensorType(np.int32, (1,)),
    tff.TensorType(np.bool_)])
def test_create_refuses_non_integer_or_non_scalar_weight(factory, weight_type):
  make, needs, _ = FACTORIES[factory]
  with pytest.raises(TypeError, match=re.escape(needs)):
    make().create(VALUE_TYPE, weight_type)


def test_create_parts_refuses_float_weight():
  with pytest.raises(TypeError, match='privacy-group index'):
    _hdp_factory().create_parts(VALUE_TYPE, tff.TensorType(np.float32))


@pytest.mark.parametrize('dtype', [np.int32, np.int64])
def test_integer_weights_are_accepted(dtype):
  _hdp_factory().create(VALUE_TYPE, tff.TensorType(dtype))
  _robust_factory().create(VALUE_TYPE, tff.TensorType(dtype))


def _value(a):
  return [np.full(2, a, np.float32)]


@pytest.mark.parametrize('indices', [[0, 2], [-1, 0]])
@pytest.mark.parametrize('factory,message', [
    (_hdp_factory, r'HeterogeneousDPFactory: the weight of each client must '
     r'be its privacy-group index, an integer in \[0, 2\)'),
    (_robust_factory, r'NoiseAwareAggregationFactory: the weight of each '
     r'client must be its row index, an integer in \[0, 2\)')])
def test_index_out_of_range_fails_the_round(tff_runtime, factory, message,
                                            indices):
  del tff_runtime
  process = factory().create(VALUE_TYPE, tff.TensorType(np.int32))
  with pytest.raises(Exception, match=message):
    process.next(process.initialize(), [_value(1), _value(2)], indices)


def _robust_round(aggregator, indices):
  process = robust_tff_backend.TffRound(
      SPEC, SPEC.init(0), aggregator, settings=dp_sgd.DpSgdSettings())
  data = [robust_direct_backend.client_dataset(*_client_data(i))
          for i in range(len(indices))]
  info = [collections.OrderedDict(index=i, batch_size=2, noise_multiplier=1.0)
          for i in indices]
  return process.next(process.initialize(mechanism_key.new_key(0)),
                      robust_executors.Cohort(data, info))


def test_duplicated_row_index_fails_the_round(tff_runtime):
  del tff_runtime
  with pytest.raises(Exception, match=(
      r'NoiseAwareAggregationFactory: two or more clients sent the same row '
      r'index')):
    _robust_round(_robust_factory(3), [0, 2, 0])


def test_robust_build_process_runs_with_row_indices(tff_runtime):
  del tff_runtime
  state, measurements, _ = _robust_round(_robust_factory(3), [2, 0, 1])
  assert int(state['round_num']) == 1
  np.testing.assert_allclose(measurements['weights'], [1 / 3] * 3, rtol=1e-6)
  assert not np.allclose(templates.global_weights(state)[0],
                         SPEC.init(0)[0])


def test_fedhdp_learning_process_runs_with_group_indices(tff_runtime):
  del tff_runtime
  factory = _hdp_factory()
  settings = fedhdp_process.ClientSettings(
      ditto_lambdas=(0.0, 0.0), local_epochs=1, batch_size=2,
      learning_rate=0.1, personal_learning_rate=0.1)
  process = fedhdp_process.compose_fedhdp_process(
      SPEC, SPEC.init(0), factory, settings,
      round_privacy.RoundPrivacy('client-level', {}, delta=1e-5))
  initial = SPEC.init(0)
  clients = [fedhdp_process.client_element(*_client_data(i), group=g,
                                            client_id=i, batch_size=2)
             for i, g in enumerate([0, 1, 1])]
  output = process.next(process.initialize(), clients)
  measurements = output.metrics['aggregator']
  # Realised denominators: w_p = r N_p / (r N_p + N_np) = 0.5 / 2.5.
  assert measurements['private/weight'] == pytest.approx(0.2)
  assert templates.client_work_round(output.state) == 1
  state = output.state
  assert not np.allclose(templates.global_weights(state)[0], initial[0])
