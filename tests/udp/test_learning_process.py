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
"""UDP-Alg's public learning process (`build_udp_process`), as a TFF user
runs it.

It keeps TFF's `LearningProcess` contract (phi as the model weights); a
Keras target network (through `functional_model_from_keras`) trains to the
same phi as the package's own; fed by `build_data_source`, it runs the
driver's rounds; it runs under `tff.learning.programs.train_model`;
`process.epsilon` equals `tff_hdp.privacy.accounting` called directly; bad
arguments are refused in one line.
"""

import asyncio
import collections
import dataclasses

import numpy as np
import pytest
import tensorflow_federated as tff

from tests import process_contract
from tests import user_code
from tests.udp import conftest
from tff_hdp import models
from tff_hdp import runtime
from tff_hdp import templates
from tff_hdp.privacy import accounting
from tff_hdp.udp import config as config_lib
from tff_hdp.udp import process as process_lib
from tff_hdp.udp import training
from tff_hdp.privacy.preferences import Preferences

SHAPE = user_code.SHAPE
PACKAGE = user_code.PACKAGE
NUM_USERS = 6
SIZES = [10 + i for i in range(NUM_USERS)]
SETTINGS = dict(sampling_rate=0.5, noise_multiplier=1.0,
                clip=0.1, sample_cap=12.0, local_steps=2, batch_size=4,
                local_learning_rate=0.05, hyper_learning_rate=0.1,
                embedding_learning_rate=0.1, hidden=16, hidden_layers=1,
                delta=1e-5, seed=1, mechanism_seed=1)


_keras_functional = user_code.keras_functional


def _client_data():
  return user_code.client_data(SIZES, 'user')


def _build(model=PACKAGE, num_examples=SIZES, max_cohort=None, **fields):
  return process_lib.build_udp_process(model,
                                       Preferences(num_examples=num_examples),
                                       max_cohort=max_cohort,
                                       config=config_lib.UdpConfig(**{
                                           **SETTINGS,
                                           **fields
                                       }))


def test_learning_process_contract(tff_runtime):
  del tff_runtime
  process = _build()
  assert isinstance(process, tff.learning.templates.LearningProcess)
  assert isinstance(process, templates.PrivateLearningProcess)
  net = process.hypernetwork
  phi_type = tff.types.to_type(tff.learning.models.ModelWeights(
      trainable=[(np.float32, s) for s in net.shapes], non_trainable=[]))
  assert process.get_model_weights.type_signature.result.is_equivalent_to(
      phi_type)
  assert process.set_model_weights.type_signature.parameter[
      1].is_equivalent_to(phi_type)
  result_type = process.next.type_signature.result
  assert result_type.metrics.placement == tff.SERVER
  assert result_type.metrics.member.is_equivalent_to(tff.types.to_type(
      collections.OrderedDict(
          noise_stddev=np.float32,
          client_work=collections.OrderedDict(train=collections.OrderedDict())
      )))

  state = process.initialize()
  assert process.round_num(state) == 0
  moved_state = process_contract.assert_model_weights_round_trip(
      process, state, net.init(1))
  np.testing.assert_array_equal(moved_state['embeddings'],
                                state['embeddings'])

  clients = process_lib.build_data_source(
      process, _client_data(), mechanism_seed=1).iterator().select()
  elements = [c.get_single_element() for c in clients]
  assert list(elements[0]) == ['x', 'y', 'indices', 'mask', 'user', 'weight',
                               'row']
  assert [int(e['row']) for e in elements] == list(range(len(clients)))
  output = process.next(state, clients)
  assert isinstance(output, tff.learning.templates.LearningProcessOutput)
  assert process.round_num(output.state) == 1
  assert list(output.metrics) == ['noise_stddev', 'client_work']
  w = np.minimum(np.array(SIZES) / 12.0, 1.0)
  assert output.metrics['noise_stddev'] == pytest.approx(
      1.0 * w.max() * 0.1 / (0.5 * w.sum()), rel=1e-6)
  # Only the sampled users' embeddings moved.
  users = [int(e['user']) for e in elements]
  moved_rows = np.flatnonzero(np.any(
      output.state['embeddings'] != state['embeddings'], axis=1))
  assert list(moved_rows) == users


def test_keras_target_trains_as_the_package_model(tff_runtime):
  del tff_runtime
  weights = PACKAGE.init(0)
  data = _client_data()
  mine = _build(_keras_functional(weights))
  ours = _build(PACKAGE)
  a = process_contract.run_rounds(
      mine, process_lib.build_data_source(mine, data, mechanism_seed=1), 2)
  b = process_contract.run_rounds(
      ours, process_lib.build_data_source(ours, data, mechanism_seed=1), 2)
  assert mine.round_num(a) == ours.round_num(b) == 2
  for x, y, p0 in zip(mine.get_model_weights(a).trainable,
                      ours.get_model_weights(b).trainable,
                      ours.hypernetwork.init(1)):
    np.testing.assert_allclose(x, y, atol=1e-6)
    assert not np.allclose(x, p0)  # Two rounds moved phi.
  np.testing.assert_allclose(a['embeddings'], b['embeddings'], atol=1e-6)


def test_data_source_runs_the_drivers_rounds(tff_runtime, data):
  del tff_runtime
  run = dataclasses.replace(conftest.TINY, rounds=2)
  driver = training.train(run, data)  # Backend 'direct'.
  # The driver's own configuration builds the process.
  process = process_lib.build_udp_process(
      models.build_model(run.target, data.input_shape, data.num_classes),
      Preferences(num_examples=[len(y) for _, y in data.train]),
      config=run)
  source = process_lib.build_data_source(
      process, data, mechanism_seed=run.mechanism_seed)
  state = process.initialize()
  iterator = source.iterator()
  for t, entry in enumerate(driver['history']):
    clients = iterator.select()
    assert len(clients) == len(conftest.sampled_users(run, data.num_clients,
                                                      t))
    output = process.next(state, clients)
    state = output.state
    if clients:
      assert output.metrics['noise_stddev'] == pytest.approx(
          entry['noise_stddev'], rel=1e-6)
  losses, accuracies = training.user_evaluation(
      process.hypernetwork, state['phi'], state['embeddings'], data)
  last = driver['history'][-1]
  assert float(np.nanmean(losses)) == pytest.approx(last['loss'], rel=1e-4)
  assert float(np.nanmean(accuracies)) == pytest.approx(last['accuracy'],
                                                        abs=1e-3)
  assert process.epsilon(state)['users'] == pytest.approx(
      driver['epsilon'], rel=1e-12)


def test_train_model_runs_two_rounds(tff_runtime):
  del tff_runtime  # Its sync context runs `by_hand`; the program's is async.
  process = _build()
  source = process_lib.build_data_source(process, _client_data(),
                                         mechanism_seed=1)
  # The rounds of `next` called by hand on the source's cohorts.
  by_hand = process_contract.run_rounds(process, source, 2)
  state_manager = user_code.MemoryState()
  releases = tff.program.MemoryReleaseManager()
  with runtime.local_cpp_context(asynchronous=True):
    asyncio.run(tff.learning.programs.train_model(
        train_process=process, train_data_source=source,
        train_per_round_clients=None, train_total_rounds=2,
        program_state_manager=state_manager, model_output_manager=releases,
        # Our metrics are the released noise stddev, not TFF's
        # client_work/train that a metrics manager needs.
        train_metrics_manager=None,
        evaluation_manager=None, evaluation_periodicity=1))
  assert sorted(state_manager.saved) == [0, 1, 2]
  final = state_manager.saved[2]
  assert process.round_num(final.state) == 2
  assert list(releases.values().keys()) == ['training_checkpoint_round_2']
  for x, y in zip(final.state['phi'], by_hand['phi']):
    np.testing.assert_array_equal(x, y)


def test_epsilon_is_the_accountants(tff_runtime):
  del tff_runtime
  assert _build(mechanism_seed=None).privacy.is_bound
  process = _build()  # Reproducible: epsilon is not a bound for the outputs.
  assert process.privacy.level == 'user-level'
  assert not process.privacy.is_bound
  assert 'mechanism_seed=1' in process.privacy.not_bound_because
  assert process.epsilon(process.initialize()) == {'users': 0.0}
  # Two rounds: the epsilon of the rounds run, not of one round.
  state = process_contract.run_rounds(process, process_lib.build_data_source(
      process, _client_data(), mechanism_seed=1), 2)
  assert process.round_num(state) == 2
  assert process.epsilon(state) == {
      'users': pytest.approx(accounting.compute_epsilon(0.5, 1.0, 2, 1e-5),
                             rel=1e-12)}
  pld = _build(accountant='pld')
  assert pld.privacy.ledger(3).get_epsilon('users', 1e-5, 'pld') == (
      pytest.approx(accounting.compute_epsilon(0.5, 1.0, 3, 1e-5,
                                               accountant='pld'), rel=1e-9))
  noiseless = _build(algorithm='noiseless')
  assert noiseless.privacy.mechanisms == {'users': (0.5, 0.0, 1)}


@pytest.mark.parametrize('kwargs, message', [
    (dict(num_examples=[]), 'num_examples must give every user'),
    (dict(num_examples=[10, 0]), 'num_examples must be integers >= 1, got 0'),
    (dict(sampling_rate=0.0), r'sampling_rate must be in \(0, 1\], got 0.0'),
    (dict(noise_multiplier=-1.0), 'noise_multiplier must be >= 0, got -1.0'),
    (dict(clip=0.0), 'clip must be > 0, got 0.0'),
    (dict(sample_cap=0.0), r'sample_cap must be > 0, or None \(the median '
     r"user's training size\), got 0.0"),
    (dict(local_steps=0), 'local_steps must be >= 1, got 0'),
    (dict(batch_size=0), 'batch_size must be >= 1, got 0'),
    (dict(hyper_learning_rate=0.0), 'hyper_learning_rate must be > 0'),
    (dict(embedding_dim=0), 'embedding_dim must be >= 1, got 0'),
    (dict(hidden=0), 'hidden must be >= 1, got 0'),
    (dict(hidden_layers=-1), 'hidden_layers must be >= 0, got -1'),
    (dict(max_cohort=7), r'max_cohort must be in \[1, 6\] \(the users\), '
     'got 7'),
    (dict(delta=1.0), r'delta must be in \(0, 1\), got 1.0'),
    (dict(accountant='moments'), 'accountant must be one of rdp, pld'),
])
def test_bad_arguments_are_refused(kwargs, message):
  with pytest.raises(ValueError, match=message):
    _build(**kwargs)


def test_bad_models_and_data_are_refused():
  with pytest.raises(TypeError, match='model must be a tff_hdp.models.'
                     'ModelSpec or a tff.learning.models.FunctionalModel'):
    process_lib.build_udp_process(object(), Preferences(num_examples=SIZES))
  process = _build()
  smaller = _build(num_examples=SIZES[:-1])
  with pytest.raises(ValueError, match='the data has 6 users, the process 5'):
    process_lib.build_data_source(smaller, _client_data())
  bigger = _build(num_examples=SIZES[:-1] + [99])
  with pytest.raises(ValueError, match='user 5 has 15 examples, the process '
                     'was built for num_examples 99'):
    process_lib.build_data_source(bigger, _client_data())
  iterator = process_lib.build_data_source(process, _client_data()).iterator()
  with pytest.raises(ValueError, match=r'select\(k\) takes k=None or 3'):
    iterator.select(4)
  with pytest.raises(ValueError, match='more than max_cohort 1'):
    process_lib.client_elements(
        np.array([0, 1]), np.ones(2), np.zeros((2, 3) + SHAPE),
        np.zeros((2, 3)), np.zeros((2, 2, 4)), np.ones((2, 2, 4)), 1)
