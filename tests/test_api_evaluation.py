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
"""The evaluation paths of docs/api_systems.md, each against numpy.

TFF's `build_fed_eval` on FedHDP's and Robust-HDP's global model, UDP-Alg's
generated personal models and FedHDP's Ditto models
(`tff_hdp.evaluation`): after one round on a user's Keras model, each
evaluated loss and accuracy equals a numpy forward pass of the same weights
on the same test data.
"""

import collections

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import evaluation
import tff_hdp.fedhdp
import tff_hdp.robust_hdp
import tff_hdp.udp
from tff_hdp.privacy.preferences import Preferences
from tests import process_contract
from tests import user_code

SHAPE = user_code.SHAPE
NUM_CLIENTS = 6
SIZES = [10 + i for i in range(NUM_CLIENTS)]


def _user_model() -> tff.learning.models.FunctionalModel:
  """The user's Keras model (as user_code's), with metrics for evaluation."""
  keras_model = tf.keras.Sequential([
      tf.keras.layers.InputLayer(SHAPE), tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(16, activation='relu'),
      tf.keras.layers.Dense(10)])
  keras_model.set_weights(user_code.PACKAGE.init(0))
  return tff.learning.models.functional_model_from_keras(
      keras_model,
      tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      (tf.TensorSpec((None,) + SHAPE, tf.float32),
       tf.TensorSpec((None,), tf.int32)),
      metrics_constructor=lambda: collections.OrderedDict(
          loss=tf.keras.metrics.SparseCategoricalCrossentropy(
              from_logits=True),
          accuracy=tf.keras.metrics.SparseCategoricalAccuracy()))


def _arrays(data):
  """Per client of a ClientData, its (x, y) numpy arrays."""
  out = []
  for c in data.client_ids:
    elements = list(data.create_tf_dataset_for_client(c).as_numpy_iterator())
    out.append((np.stack([e['x'] for e in elements]),
                np.stack([e['y'] for e in elements])))
  return out


def _numpy_logits(weights, x):
  kernel1, bias1, kernel2, bias2 = weights
  hidden = np.maximum(x.reshape(len(x), -1) @ kernel1 + bias1, 0.0)
  return hidden @ kernel2 + bias2


def _numpy_loss_and_accuracy(weights, x, y):
  logits = _numpy_logits([np.asarray(w, np.float64) for w in weights], x)
  shifted = logits - logits.max(axis=-1, keepdims=True)
  log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
  return (-np.mean(log_p[np.arange(len(y)), y]),
          np.mean(np.argmax(logits, axis=-1) == y))


def _numpy_generate(phi, embeddings, hidden_layers):
  """pFedHN's h(phi, v) (tff_hdp/udp/hypernetwork.py's docstring) in numpy."""
  phi = [np.asarray(p, np.float64) for p in phi]
  features = embeddings @ phi[0] + phi[1]
  for i in range(hidden_layers):
    features = np.maximum(features, 0.0) @ phi[2 + 2 * i] + phi[3 + 2 * i]
  heads = phi[2 + 2 * hidden_layers:]
  return [(features @ kernel + bias).reshape((len(embeddings),) + shape)
          for kernel, bias, shape in zip(heads[::2], heads[1::2],
                                         user_code.PACKAGE.shapes)]


@pytest.fixture(scope='module')
def data():
  """(train, test) ClientData of the same six clients."""
  return (user_code.client_data(SIZES, 'user'),
          user_code.client_data([3, 4, 5, 6, 7, 8], 'user'))


@pytest.fixture(scope='module')
def fedhdp_run(data):
  """A FedHDP process after one round with Ditto: (process, state,
  personal models by client index)."""
  from tff_hdp import runtime  # pylint: disable=g-import-not-at-top
  runtime.install_local_cpp_context()  # As the tff_runtime fixture.
  config = tff_hdp.fedhdp.FedHdpConfig(
      noise_multiplier=0.25, sampling_rate=0.5, clipped_count_stddev=1.0,
      local_epochs=1, batch_size=4, seed=1, mechanism_seed=1)
  process = tff_hdp.fedhdp.build_fedhdp_process(
      _user_model(),
      Preferences(levels=[0, 0, None, 0, None, 0]),
      config=config)
  clients = tff_hdp.fedhdp.build_data_source(
      process, data[0], mechanism_seed=1).iterator().select()
  ids = [int(c.take(1).get_single_element()['client_id']) for c in clients]
  state = process.initialize()
  theta = process.get_model_weights(state).trainable
  personal = dict(zip(ids, process.ditto_step(state, clients,
                                              [theta] * len(ids))))
  return process, process.next(state, clients).state, personal


def _robust_hdp_state(data):
  config = tff_hdp.robust_hdp.RobustHdpConfig(
      algorithm='robust_hdp', epsilons=(2.0, 4.0, 8.0, 2.0, 4.0, 8.0),
      batch_sizes=(4,) * NUM_CLIENTS, rounds=5, rpca_method='ialm', seed=1,
      mechanism_seed=1)
  process = tff_hdp.robust_hdp.build_robust_hdp_process(
      _user_model(),
      Preferences(epsilons=config.epsilons,
                  batch_sizes=config.batch_sizes,
                  num_examples=SIZES),
      config=config)
  source = tff_hdp.robust_hdp.build_data_source(process, data[0])
  return process, process_contract.run_rounds(process, source, 1)


@pytest.fixture(scope='module')
def fed_eval():
  return tff.learning.algorithms.build_fed_eval(_user_model())


@pytest.mark.parametrize('system', ['fedhdp', 'robust_hdp'])
def test_build_fed_eval_evaluates_the_global_model(tff_runtime, data,
                                                   fedhdp_run, fed_eval,
                                                   system):
  del tff_runtime
  if system == 'fedhdp':
    process, state, _ = fedhdp_run
  else:
    process, state = _robust_hdp_state(data)
  weights = process.get_model_weights(state)
  assert not np.allclose(weights.trainable[0], user_code.PACKAGE.init(0)[0])
  eval_state = fed_eval.set_model_weights(fed_eval.initialize(), weights)
  test = data[1]
  datasets = [test.create_tf_dataset_for_client(c).map(
      lambda e: (e['x'], e['y'])).batch(4) for c in test.client_ids]
  metrics = fed_eval.next(eval_state, datasets).metrics['client_work'][
      'eval']['current_round_metrics']
  x, y = (np.concatenate(a) for a in zip(*_arrays(test)))  # Sum, divide.
  loss, accuracy = _numpy_loss_and_accuracy(weights.trainable, x, y)
  np.testing.assert_allclose(metrics['loss'], loss, rtol=1e-5)
  np.testing.assert_allclose(metrics['accuracy'], accuracy, rtol=1e-6)


def test_udp_personal_models(tff_runtime, data):
  del tff_runtime
  config = tff_hdp.udp.UdpConfig(
      sampling_rate=0.5, noise_multiplier=1.0, clip=0.1, local_steps=2,
      batch_size=4, local_learning_rate=0.05, hyper_learning_rate=0.1,
      hidden=16, hidden_layers=1, seed=1, mechanism_seed=1)
  process = tff_hdp.udp.build_udp_process(_user_model(),
                                          Preferences(num_examples=SIZES),
                                          config=config)
  state = process_contract.run_rounds(
      process, tff_hdp.udp.build_data_source(process, data[0],
                                             mechanism_seed=1), 1)
  result = evaluation.evaluate_udp_personal_models(process, state, data[1])
  thetas = _numpy_generate(state['phi'], state['embeddings'], 1)
  expected = np.array([
      _numpy_loss_and_accuracy([t[u] for t in thetas], x, y)
      for u, (x, y) in enumerate(_arrays(data[1]))])
  np.testing.assert_allclose(result.loss, expected[:, 0], rtol=1e-5)
  np.testing.assert_allclose(result.accuracy, expected[:, 1], rtol=1e-6)
  np.testing.assert_allclose(result.mean_accuracy, expected[:, 1].mean())
  np.testing.assert_allclose(result.mean_loss, expected[:, 0].mean(),
                             rtol=1e-5)
  with pytest.raises(ValueError, match='test_data has 5 users, the process 6'):
    evaluation.evaluate_udp_personal_models(
        process, state, user_code.client_data([3] * 5, 'user'))


def test_ditto_personal_models(tff_runtime, data, fedhdp_run):
  del tff_runtime
  process, state, personal = fedhdp_run
  assert 0 < len(personal) < NUM_CLIENTS  # Some clients fall back to theta.
  theta = process.get_model_weights(state).trainable
  result = evaluation.evaluate_ditto_personal_models(
      _user_model(), process.get_model_weights(state), personal, data[1])
  expected = []
  for i, (x, y) in enumerate(_arrays(data[1])):
    weights = personal.get(i, theta)
    assert i not in personal or not np.allclose(weights[0], theta[0])
    expected.append(_numpy_loss_and_accuracy(weights, x, y))
  expected = np.array(expected)
  np.testing.assert_allclose(result.loss, expected[:, 0], rtol=1e-5)
  np.testing.assert_allclose(result.accuracy, expected[:, 1], rtol=1e-6)
  np.testing.assert_allclose(result.mean_accuracy, expected[:, 1].mean())
  with pytest.raises(ValueError, match='personal has client 6; clients are'):
    evaluation.evaluate_ditto_personal_models(
        _user_model(), theta, {6: theta}, data[1])
  with pytest.raises(TypeError, match='test_data must be a'):
    evaluation.evaluate_ditto_personal_models(_user_model(), theta, {}, [])
