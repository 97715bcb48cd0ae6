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
"""The public API (docs/api.md) of FedHDP and Robust-HDP, as a TFF user runs it.

A user's Keras model (through `functional_model_from_keras`) trains to the
same weights as the package's own model; `ClientData` input is the
package's data; the processes keep TFF's `LearningProcess` contract (they
run under `tff.learning.programs.train_model` in
tests/test_api_first_week.py); `process.epsilon` equals
`tff_hdp.privacy.accounting` called directly. UDP-Alg's are in
tests/udp/test_learning_process.py.
"""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import models
from tff_hdp import templates
from tff_hdp.data import client_data
from tff_hdp.fedhdp import config as fedhdp_config
from tff_hdp.fedhdp import training as fedhdp_training
from tff_hdp.privacy import accounting
from tff_hdp.robust_hdp import privacy_preferences
import tff_hdp.fedhdp
import tff_hdp.robust_hdp
import tff_hdp.udp
from tff_hdp.privacy.preferences import Preferences
from tests import process_contract
from tests import user_code

SHAPE = user_code.SHAPE
PACKAGE = user_code.PACKAGE
NUM_CLIENTS = 6
_keras_functional = user_code.keras_functional


def _client_data():
  return user_code.client_data([10 + i for i in range(NUM_CLIENTS)], 'user')


def _fedhdp(model, privacy_levels=(0, 0, None, 0, None, 0), **fields):
  config = tff_hdp.fedhdp.FedHdpConfig(**{
      **dict(noise_multiplier=0.25, sampling_rate=0.5, local_epochs=1,
             batch_size=4, seed=1, mechanism_seed=1), **fields})
  return tff_hdp.fedhdp.build_fedhdp_process(model,
                                             Preferences(levels=privacy_levels),
                                             config=config)


def _robust(model, rule='robust_hdp'):
  sizes = [10 + i for i in range(NUM_CLIENTS)]
  config = tff_hdp.robust_hdp.RobustHdpConfig(
      algorithm=rule, epsilons=(2.0, 4.0, 8.0, 2.0, 4.0, 8.0),
      batch_sizes=(4,) * NUM_CLIENTS, rounds=5, rpca_method='ialm', seed=1,
      mechanism_seed=1)
  return tff_hdp.robust_hdp.build_robust_hdp_process(
      model,
      Preferences(epsilons=config.epsilons,
                  batch_sizes=config.batch_sizes,
                  num_examples=sizes),
      config=config)


def _build(system, model):
  if system == 'fedhdp':
    return _fedhdp(model)
  return _robust(model)


def _source(system, process, data):
  if system == 'fedhdp':
    return tff_hdp.fedhdp.build_data_source(process, data, mechanism_seed=1)
  return tff_hdp.robust_hdp.build_data_source(process, data)


@pytest.mark.parametrize('system', ['fedhdp', 'robust_hdp'])
def test_keras_model_trains_as_the_package_model(tff_runtime, system):
  del tff_runtime
  weights = PACKAGE.init(0)
  data = _client_data()
  spec = models.as_model_spec(_keras_functional(weights))
  mine = _build(system, spec)
  ours = _build(system, models.ModelSpec(
      name=PACKAGE.name, input_shape=PACKAGE.input_shape,
      num_classes=PACKAGE.num_classes, shapes=PACKAGE.shapes,
      forward=PACKAGE.forward, initial_weights=tuple(weights)))
  a = process_contract.run_rounds(mine, _source(system, mine, data), 2)
  b = process_contract.run_rounds(ours, _source(system, ours, data), 2)
  for x, y, w0 in zip(mine.get_model_weights(a).trainable,
                      ours.get_model_weights(b).trainable, weights):
    np.testing.assert_allclose(x, y, atol=1e-6)
    assert not np.allclose(x, w0)  # Two rounds moved the model.


def test_keras_model_is_traced_in_place_in_a_graph():
  # In a graph (a TFF computation) the Keras body's ops are the graph's own,
  # not a function call, which TFF's runtime pays for client by client;
  # eagerly it is the wrapped function; both give the same logits.
  weights = PACKAGE.init(0)
  spec = models.as_model_spec(_keras_functional(weights))
  x = np.random.default_rng(0).random((3,) + PACKAGE.input_shape, np.float32)
  graph = tf.Graph()
  with graph.as_default():
    logits = spec.forward([tf.constant(w) for w in weights], tf.constant(x),
                          False, None)
    calls = [op.type for op in graph.get_operations() if 'Call' in op.type]
    with tf.compat.v1.Session() as session:
      in_graph = session.run(logits)
  assert not calls
  eager = spec.forward([tf.constant(w) for w in weights], tf.constant(x),
                       False, None)
  np.testing.assert_allclose(in_graph, eager.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize('system', ['fedhdp', 'robust_hdp'])
def test_client_data_is_the_package_data(tff_runtime, system):
  del tff_runtime
  cd = _client_data()
  data = client_data.to_federated_data(cd)
  for c, (x, y) in zip(cd.client_ids, data.train):
    element = list(cd.create_tf_dataset_for_client(c).as_numpy_iterator())
    np.testing.assert_array_equal(x, np.stack([e['x'] for e in element]))
    np.testing.assert_array_equal(y, np.stack([e['y'] for e in element]))
  process = _build(system, PACKAGE)
  a = process_contract.run_rounds(process, _source(system, process, cd), 2)
  b = process_contract.run_rounds(process, _source(system, process, data), 2)
  for x, y in zip(process.get_model_weights(a).trainable,
                  process.get_model_weights(b).trainable):
    np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize('system', ['fedhdp', 'robust_hdp'])
def test_learning_process_contract(tff_runtime, system):
  del tff_runtime
  process = _build(system, PACKAGE)
  assert isinstance(process, tff.learning.templates.LearningProcess)
  state = process_contract.assert_model_weights_round_trip(
      process, process.initialize(), PACKAGE.init(1))
  output = process.next(state, process_clients(system, process))
  assert isinstance(output, tff.learning.templates.LearningProcessOutput)
  assert process.round_num(output.state) == 1
  # FedHDP's clients 2 and 4 opt out, so report training metrics
  # (tests/test_api_training_metrics.py); Robust-HDP's are all private.
  assert list(output.metrics['client_work']['train']) == (
      ['loss', 'accuracy', 'num_examples'] if system == 'fedhdp' else [])


def process_clients(system, process):
  return _source(system, process, _client_data()).iterator().select()


def test_fedhdp_epsilon_is_the_accountants(tff_runtime):
  del tff_runtime
  process = _fedhdp(PACKAGE, privacy_levels=[0, 1, None, 0, 1, 0],
                    noise_multiplier=(0.25, 0.2))
  # Two rounds: the epsilon of the rounds run, not of one round.
  state = process_contract.run_rounds(process, tff_hdp.fedhdp.build_data_source(
      process, _client_data()), 2)
  epsilon = process.epsilon(state)
  z_effs = {g.name: g.effective_noise_multiplier for g in process.groups
            if g.is_private}
  assert set(epsilon) == {'private_1', 'private_2'}
  for name, z in z_effs.items():
    assert epsilon[name] == pytest.approx(
        accounting.compute_epsilon(0.5, z, 2, 1e-4), rel=1e-12)
  assert process.privacy.level == 'client-level'
  # Reproducible (mechanism_seed=1): the accountant's epsilon, not a bound on
  # what the process released; with a secret key, a bound.
  assert not process.privacy.is_bound
  assert _fedhdp(PACKAGE, mechanism_seed=None).privacy.is_bound
  assert process.epsilon(process.initialize()) == {
      'private_1': 0.0, 'private_2': 0.0}


def test_robust_hdp_epsilon_is_each_clients_dp_sgd(tff_runtime):
  del tff_runtime
  process = _robust(PACKAGE)
  state = process_contract.run_rounds(
      process, tff_hdp.robust_hdp.build_data_source(process, _client_data()),
      2)
  epsilon = process.epsilon(state)
  for i, c in enumerate(process.clients):
    steps = 2 * -(-c.num_examples // c.batch_size)
    assert epsilon[f'client_{i}'] == pytest.approx(
        accounting.compute_epsilon(c.sampling_rate, c.noise_multiplier,
                                   steps, 1e-4,
                                   orders=privacy_preferences.ORDERS),
        rel=1e-12)
  # After the rounds it was calibrated for, each client spends its own
  # epsilon_i (the calibration's tolerance).
  full = process.privacy.ledger(5)
  for i, c in enumerate(process.clients):
    assert full.get_epsilon(f'client_{i}', 1e-4) == pytest.approx(
        c.epsilon, rel=1e-3)


def test_a_model_with_another_loss_is_refused():
  keras_model = tf.keras.Sequential([
      tf.keras.layers.InputLayer(SHAPE), tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(10, activation='softmax')])
  model = tff.learning.models.functional_model_from_keras(
      keras_model, tf.keras.losses.SparseCategoricalCrossentropy(),
      (tf.TensorSpec((None,) + SHAPE, tf.float32),
       tf.TensorSpec((None,), tf.int32)))
  with pytest.raises(ValueError, match=r"the model's loss reads the output "
                     r"as probabilities \(from_logits=False\): it gives .* "
                     "where tff_hdp's loss"):
    models.as_model_spec(model)
  with pytest.raises(TypeError, match='model must be a tff_hdp.models.'
                     'ModelSpec or a tff.learning.models.FunctionalModel, got '
                     'Sequential'):
    tff_hdp.fedhdp.build_fedhdp_process(keras_model, Preferences(levels=[0]))
  with pytest.raises(TypeError, match='config must be a tff_hdp.fedhdp.'
                     'FedHdpConfig, got dict'):
    tff_hdp.fedhdp.build_fedhdp_process(PACKAGE,
                                        Preferences(levels=[0]),
                                        config={})


def test_r_zero_never_sends_private_clients_the_model(tff_runtime):
  del tff_runtime
  process = _fedhdp(PACKAGE, ratio=0.0)
  assert process.epsilon(process.initialize()) == {}  # Nothing accounted.
  iterator = tff_hdp.fedhdp.build_data_source(process,
                                               _client_data()).iterator()
  groups = [int(c.reduce(np.int32(-1), lambda _, e: e['group']))
            for _ in range(5) for c in iterator.select()]
  assert groups and set(groups) == {1}  # Only the opted-out clients.
  state = process.next(process.initialize(), iterator.select()).state
  assert process.epsilon(state) == {}


def test_bad_privacy_levels_are_refused():
  with pytest.raises(ValueError, match=r'privacy_levels must be None '
                     r'\(opt-out\) or a level in \[0, 1\)'):
    _fedhdp(PACKAGE, privacy_levels=[0, 1, None])
  with pytest.raises(ValueError, match=r'FedHDP needs preferences.levels '
                     r'\(one entry per client\)'):
    tff_hdp.fedhdp.build_fedhdp_process(PACKAGE, Preferences())
  with pytest.raises(ValueError, match='runs Poisson cohorts with expected '
                     'denominators'):
    _fedhdp(PACKAGE, poisson_sampling=False)


def test_drivers_take_client_data():
  cd = _client_data()
  config = fedhdp_config.FedHdpConfig(
      rounds=2, clients_per_round=3, sampling_rate=0.5, local_epochs=1,
      batch_size=4, noise_multiplier=0.25, optout_fraction=0.3,
      eval_every=1, backend='direct', mechanism_seed=0)
  a = fedhdp_training.train(config, cd)
  b = fedhdp_training.train(config, client_data.to_federated_data(cd))
  assert a['history'] == b['history'] and a['epsilon'] == b['epsilon']
  assert a['history'][-1]['accuracy'] > 0
  with pytest.raises(TypeError, match='data must be a tff_hdp FederatedData '
                     'or a tff.simulation.datasets.ClientData, got dict'):
    fedhdp_training.train(config, {})


def test_in_client_order():
  assert client_data.in_client_order(['a', 'b'], {'b': 2, 'a': 1},
                                     'epsilons') == [1, 2]
  with pytest.raises(ValueError, match="client 'b' has none"):
    client_data.in_client_order(['a', 'b'], {'a': 1}, 'epsilons')
  with pytest.raises(ValueError, match="names client 'c'"):
    client_data.in_client_order(['a'], {'a': 1, 'c': 3}, 'epsilons')


def test_public_names():
  assert tff_hdp.fedhdp.__all__ == [
      'FedHdpConfig', 'build_data_source', 'build_fedhdp_process',
      'client_element', 'algorithms']
  assert tff_hdp.robust_hdp.__all__ == [
      'RobustHdpConfig', 'build_data_source', 'build_robust_hdp_process',
      'client_element', 'rules']
  assert tff_hdp.udp.__all__ == [
      'UdpConfig', 'build_data_source', 'build_udp_process', 'algorithms']
  assert tff_hdp.privacy.__all__ == [
      'Accountant', 'Preferences', 'PrivacyLedger', 'compute_epsilon',
      'noise_multiplier_for_epsilon']
  for name in tff_hdp.fedhdp.__all__ + tff_hdp.robust_hdp.__all__:
    assert not name.startswith('_')
  # One name per concept: a process's model is get_model_weights's; the
  # drivers' helper for theirs and a process's state stays internal.
  assert not hasattr(tff_hdp.fedhdp, 'global_weights')
  weights = [np.ones((2,), np.float32)]
  assert templates.global_weights({'global_weights': weights})[0].tolist() == [
      1.0, 1.0]
  learning_state = tff.learning.templates.LearningAlgorithmState(
      global_model_weights=tff.learning.models.ModelWeights(
          trainable=weights, non_trainable=[]),
      distributor=(), client_work=(), aggregator=(), finalizer=())
  assert templates.global_weights(learning_state)[0].tolist() == [1.0, 1.0]
  assert isinstance(_fedhdp(PACKAGE), templates.PrivateLearningProcess)


def test_each_builder_refuses_a_preference_it_cannot_honour():
  """One declared type of preferences; each system reads what its
  mechanism honours and refuses the rest in one line."""
  with pytest.raises(ValueError, match=r'FedHDP cannot honour '
                     r'preferences.epsilons: .*choose a level'):
    tff_hdp.fedhdp.build_fedhdp_process(
        PACKAGE, Preferences(levels=[0, None], epsilons=[1.0, 2.0]))
  with pytest.raises(ValueError, match=r'Robust-HDP cannot honour '
                     r'preferences.levels'):
    tff_hdp.robust_hdp.build_robust_hdp_process(
        PACKAGE, Preferences(levels=[0, 0], epsilons=[1.0, 2.0],
                             batch_sizes=[4, 4], num_examples=[10, 10]))
  with pytest.raises(ValueError, match=r'Robust-HDP needs '
                     r'preferences.batch_sizes'):
    tff_hdp.robust_hdp.build_robust_hdp_process(
        PACKAGE, Preferences(epsilons=[1.0, 2.0], num_examples=[10, 10]))
  with pytest.raises(ValueError, match=r'UDP-Alg cannot honour '
                     r'preferences.epsilons: .*one user-level epsilon'):
    tff_hdp.udp.build_udp_process(
        PACKAGE, Preferences(epsilons=[1.0, 2.0], num_examples=[10, 10]))
  with pytest.raises(TypeError, match=r'preferences must be a '
                     r'tff_hdp.privacy.Preferences, got FedHdpConfig \(pass '
                     r'the config as config=\)'):
    tff_hdp.fedhdp.build_fedhdp_process(PACKAGE,
                                        tff_hdp.fedhdp.FedHdpConfig())
  with pytest.raises(ValueError, match='Preferences must give every client '
                     'one entry in each field'):
    Preferences(epsilons=[1.0], num_examples=[10, 10])
