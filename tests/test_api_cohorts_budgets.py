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
"""Partial and empty cohorts, budgets and declared sizes (issue 39, 1-3).

Robust-HDP's process over any subset of its clients aggregates only theirs
and charges only them; a round past a client's budget is refused in one
line; a client whose data is not its declared size fails the round in one
line; a non-private client (epsilon None) trains. Tiny model (the FC NN of
tests/user_code.py), 5 clients, 2-4 rounds.
"""

import asyncio
import dataclasses

import dp_accounting
import numpy as np
import pytest
import tensorflow_federated as tff

from tff_hdp.privacy import round_privacy
from tff_hdp.data import client_data
from tff_hdp.fedhdp import hdp_factory
from tff_hdp.robust_hdp import process as robust_process
from tff_hdp.robust_hdp import rule as robust_rule
import tff_hdp.fedhdp
import tff_hdp.robust_hdp
import tff_hdp.udp
from tff_hdp.robust_hdp import executors as robust_executors
from tff_hdp.privacy.preferences import Preferences
from tests import user_code

MODEL = user_code.PACKAGE
SIZES = (8, 9, 10, 11, 12)
EPSILONS = (1.0, 3.0, 8.0, 3.0, 8.0)


def _robust(rounds=3, epsilons=EPSILONS, num_examples=SIZES,
            rule='robust_hdp'):
  config = tff_hdp.robust_hdp.RobustHdpConfig(
      algorithm=rule, epsilons=epsilons, batch_sizes=(4,) * len(epsilons),
      rounds=rounds, rpca_method='ialm', seed=1, mechanism_seed=1)
  return tff_hdp.robust_hdp.build_robust_hdp_process(
      MODEL,
      Preferences(epsilons=config.epsilons,
                  batch_sizes=config.batch_sizes,
                  num_examples=num_examples),
      config=config)


def _clients(process, sizes=SIZES, which=None):
  data = user_code.client_data(sizes, 'c')
  elements = tff_hdp.robust_hdp.build_data_source(process, data).iterator(
  ).select()
  return elements if which is None else [elements[i] for i in which]


@pytest.fixture(scope='module')
def runtime():
  """`tff_runtime` for this module's fixtures: our TFF context."""
  from tff_hdp import runtime as tff_hdp_runtime  # pylint: disable=g-import-not-at-top
  tff_hdp_runtime.install_local_cpp_context()
  return tff_hdp_runtime


@pytest.fixture(scope='module')
def robust(runtime):
  del runtime
  process = _robust()
  return process, _clients(process)


def _weights(process, state):
  return process.get_model_weights(state).trainable


def test_partial_cohort_aggregates_and_charges_only_its_clients(robust):
  process, clients = robust
  state = process.initialize()
  output = process.next(state, [clients[i] for i in (0, 2, 4)])
  weights = np.asarray(output.metrics['aggregator']['weights'])
  assert np.all(np.isfinite(weights))
  assert weights[[1, 3]].tolist() == [0.0, 0.0]
  assert weights.sum() == pytest.approx(1.0, rel=1e-6)
  assert all(np.all(np.isfinite(w)) for w in _weights(process, output.state))
  epsilon = process.epsilon(output.state)
  assert epsilon['client_1'] == epsilon['client_3'] == 0.0
  assert min(epsilon['client_0'], epsilon['client_2'],
             epsilon['client_4']) > 0
  assert process.participation(output.state) == {
      'client_0': 1, 'client_1': 0, 'client_2': 1, 'client_3': 0,
      'client_4': 1}


def test_empty_cohort_leaves_the_model_and_the_ledger(robust):
  process, clients = robust
  state = process.next(process.initialize(), clients[:2]).state
  output = process.next(state, [])
  for before, after in zip(_weights(process, state),
                           _weights(process, output.state)):
    np.testing.assert_array_equal(before, after)
  assert process.epsilon(output.state) == process.epsilon(state)
  assert process.round_num(output.state) == 2


def test_rule_refuses_a_cohort_too_small_in_one_line(robust):
  process, clients = robust
  with pytest.raises(ValueError) as error:
    process.next(process.initialize(), clients[:1])
  message = str(error.value)
  assert '\n' not in message
  assert 'rule robust_hdp needs at least 2 clients' in message, message


def test_direct_round_is_the_tff_round_on_a_partial_cohort(tff_runtime):
  del tff_runtime
  process = _robust(rule='dpfedavg')
  factory = robust_process.build_aggregator(
      process.config, process.clients, [1.0] * len(SIZES))
  settings = robust_process.dp_sgd_settings(process.config)
  data = client_data.to_federated_data(
      user_code.client_data(SIZES, 'c')).train
  info = [dict(index=np.int32(i), batch_size=np.int32(c.batch_size),
               noise_multiplier=np.float32(c.noise_multiplier))
          for i, c in enumerate(process.clients)]
  which = (1, 3, 4)
  cohort = robust_executors.Cohort([data[i] for i in which],
                                   [info[i] for i in which])
  states = []
  for backend in ('tff', 'direct'):
    executor = robust_executors.build_executor(
        backend, MODEL, MODEL.init(1), factory, settings=settings)
    state = executor.initialize(np.array([3, -5], np.int64))
    for _ in range(2):
      state = executor.next(state, cohort).state
    states.append(state)
  tff_state, direct_state = states
  np.testing.assert_array_equal(tff_state['aggregator']['participation'],
                                [0, 2, 0, 2, 2])
  np.testing.assert_array_equal(direct_state['aggregator']['participation'],
                                [0, 2, 0, 2, 2])
  for a, b in zip(tff_state['global_weights'],
                  direct_state['global_weights']):
    np.testing.assert_allclose(a, b, atol=1e-6)


@pytest.fixture(scope='module')
def fixed_rule(runtime):
  """A rule of fixed weights (no RPCA, fast), calibrated for 3 rounds, and
  its state after those 3 rounds of clients 0-3."""
  del runtime
  process = _robust(rule='dpfedavg')
  clients = _clients(process)
  state = process.initialize()
  for _ in range(3):
    state = process.next(state, clients[:4]).state
  return process, clients, state


def test_round_past_the_calibrated_rounds_is_refused(fixed_rule):
  process, clients, state = fixed_rule
  for i in range(4):
    assert process.epsilon(state)[f'client_{i}'] == pytest.approx(
        EPSILONS[i], rel=1e-3)
    assert process.epsilon(state)[f'client_{i}'] <= EPSILONS[i] * (1 + 1e-6)
  with pytest.raises(ValueError) as error:
    process.next(state, clients)
  message = str(error.value)
  assert '\n' not in message
  assert message.startswith('round 4 refused: client_0 would spend epsilon')
  assert 'over its budget 1' in message
  assert 'calibrated for 3 rounds' in message


def test_client_under_its_budget_still_takes_part(fixed_rule):
  process, clients, state = fixed_rule
  output = process.next(state, clients[4:])  # Client 4 sat out until now.
  assert process.participation(output.state)['client_4'] == 1
  assert process.epsilon(output.state)['client_0'] == (
      process.epsilon(state)['client_0'])


def test_train_model_stops_at_the_budget(fixed_rule, tff_runtime):
  process, _, _ = fixed_rule
  source = tff_hdp.robust_hdp.build_data_source(
      process, user_code.client_data(SIZES, 'c'))
  tff_runtime.install_local_cpp_context(asynchronous=True)
  try:
    with pytest.raises(ValueError, match='round 4 refused: client_0 would '
                       r'spend .* calibrated for 3 rounds'):
      asyncio.run(tff.learning.programs.train_model(
          train_process=process, train_data_source=source,
          train_per_round_clients=len(SIZES), train_total_rounds=4,
          program_state_manager=user_code.MemoryState(),
          model_output_manager=tff.program.MemoryReleaseManager(),
          train_metrics_manager=None, evaluation_manager=None,
          evaluation_periodicity=1))
  finally:
    tff_runtime.install_local_cpp_context()


def test_declared_size_differing_from_the_data_fails_in_one_line(fixed_rule):
  process, _, _ = fixed_rule
  declared = _robust(rule='dpfedavg', num_examples=(600,) + SIZES[1:])
  clients = _clients(declared)
  with pytest.raises(ValueError) as error:
    declared.next(declared.initialize(), clients[:2])
  message = str(error.value)
  assert '\n' not in message
  assert message.startswith('Robust-HDP: client 0 was declared num_examples '
                            '600 but its data holds 8 examples'), message
  del process


def test_non_private_client_epsilon_none_trains(tff_runtime):
  del tff_runtime
  process = _robust(epsilons=(None, 3.0, 8.0, 3.0, 8.0), rule='dpfedavg')
  output = process.next(process.initialize(), _clients(process))
  assert 'client_0' not in process.epsilon(output.state)
  assert process.epsilon(output.state)['client_1'] > 0
  assert all(np.all(np.isfinite(w))
             for w in _weights(process, output.state))


def test_round_privacy_ledger_takes_per_unit_rounds():
  privacy = round_privacy.RoundPrivacy(
      'example-level', {'a': (0.1, 1.0, 2), 'b': (0.1, 1.0, 2)}, delta=1e-5)
  per_unit = privacy.epsilons({'a': 3, 'b': 0})
  assert per_unit['b'] == 0.0
  assert per_unit['a'] == privacy.epsilons(3)['a']
  budgeted = privacy.budgeted_for(3)
  budgeted.check_budgets({'a': 3, 'b': 3}, 3)
  with pytest.raises(ValueError, match='round 4 refused: a would spend'):
    budgeted.check_budgets({'a': 4, 'b': 0}, 4)


# FedHDP and UDP-Alg: these two tests depend on the one-line call-site
# change in tff_hdp/fedhdp/process.py and tff_hdp/udp/process.py (their
# RoundPrivacy `.budgeted_for(config.rounds)`), not made by this change.
def test_fedhdp_round_past_the_calibrated_rounds_is_refused(tff_runtime):
  del tff_runtime
  config = tff_hdp.fedhdp.FedHdpConfig(
      noise_multiplier=1.0, clipped_count_stddev=2.0, sampling_rate=1.0,
      local_epochs=1, batch_size=4, rounds=1, seed=1, mechanism_seed=1)
  process = tff_hdp.fedhdp.build_fedhdp_process(MODEL,
                                                Preferences(levels=(0, 0, 0, 0,
                                                                    0)),
                                                config=config)
  _assert_second_round_refused(process, tff_hdp.fedhdp)


def test_udp_round_past_the_calibrated_rounds_is_refused(tff_runtime):
  del tff_runtime
  config = tff_hdp.udp.UdpConfig(rounds=1, sampling_rate=1.0, seed=1,
                                 mechanism_seed=1)
  process = tff_hdp.udp.build_udp_process(MODEL,
                                          Preferences(num_examples=SIZES),
                                          config=config)
  _assert_second_round_refused(process, tff_hdp.udp)


def _assert_second_round_refused(process, system):
  """A process calibrated for 1 round runs one and refuses the second."""
  source = system.build_data_source(
      process, user_code.client_data(SIZES, 'c'), mechanism_seed=1)
  iterator = source.iterator()
  state = process.next(process.initialize(), iterator.select()).state
  with pytest.raises(ValueError, match='round 2 refused: .* calibrated for '
                     '1 rounds'):
    process.next(state, iterator.select())


class _Halves(robust_rule.FixedWeightRule):
  """A rule of this file, never registered: the first half of the clients
  weigh `heavy` times the others."""

  name = 'halves_of_this_test'
  label = 'Halves'
  server_knows = 'nothing'

  def __init__(self, heavy: float = 3.0):
    self.heavy = heavy

  def fixed_weights(self, side):
    n = len(side.num_examples)
    return [self.heavy if i < n // 2 else 1.0 for i in range(n)]


def test_a_rule_object_of_the_callers_is_passed_in(tff_runtime):
  """As TFF takes `model_aggregator=`: the builder takes a rule object with
  its own setting; the process names it, and its weights are the round's."""
  del tff_runtime
  config = tff_hdp.robust_hdp.RobustHdpConfig(
      algorithm='robust_hdp', epsilons=EPSILONS, batch_sizes=(4,) * 5,
      rounds=3, seed=1, mechanism_seed=1)
  process = tff_hdp.robust_hdp.build_robust_hdp_process(
      MODEL,
      Preferences(epsilons=config.epsilons,
                  batch_sizes=config.batch_sizes,
                  num_examples=SIZES),
      rule=_Halves(heavy=4.0),
      config=config)
  assert process.config.algorithm == 'halves_of_this_test'
  output = process.next(process.initialize(), _clients(process))
  weights = np.asarray(output.metrics['aggregator']['weights'])
  np.testing.assert_allclose(weights, np.array([4, 4, 1, 1, 1]) / 11.0,
                             rtol=1e-6)
  with pytest.raises(TypeError, match='rule must be a tff_hdp.robust_hdp.'
                     'rule.Rule, got str'):
    tff_hdp.robust_hdp.build_robust_hdp_process(
        MODEL,
        Preferences(epsilons=config.epsilons,
                    batch_sizes=config.batch_sizes,
                    num_examples=SIZES),
        rule='halves',
        config=config)


def test_a_mechanism_object_of_the_callers_is_passed_in(tff_runtime):
  """FedHDP takes its aggregation factory as TFF takes `model_aggregator=`;
  epsilon is accounted from the noise that factory adds (here z = 1 on the
  sums and z_b = 0.5 on the clip count: z_eff = 2^-1/2, by hand), and a
  factory whose epsilon could not be a bound is refused in one line."""
  del tff_runtime
  levels = (0, 0, None, 0, None, 0)
  config = tff_hdp.fedhdp.FedHdpConfig(
      noise_multiplier=0.25, sampling_rate=0.5, local_epochs=1, batch_size=4,
      seed=1, mechanism_seed=1)
  private, opted_out = tff_hdp.fedhdp.build_fedhdp_process(
      MODEL, Preferences(levels=levels), config=config).groups

  def factory(groups=(dataclasses.replace(private, noise_multiplier=1.0),
                      opted_out), **kw):
    return hdp_factory.HeterogeneousDPFactory(
        groups, **{**dict(initial_clip=config.initial_clip,
                          expected_counts=(2.0, 1.0),
                          clipped_count_stddev=0.5, mechanism_seed=1), **kw})

  process = tff_hdp.fedhdp.build_fedhdp_process(MODEL,
                                                Preferences(levels=levels),
                                                model_aggregator=factory(),
                                                config=config)
  clients = tff_hdp.fedhdp.build_data_source(
      process, user_code.client_data((8,) * 6, 'c'),
      mechanism_seed=1).iterator().select()
  state = process.next(process.initialize(), clients).state
  accountant = dp_accounting.rdp.RdpAccountant()
  accountant.compose(dp_accounting.PoissonSampledDpEvent(
      0.5, dp_accounting.GaussianDpEvent(2**-0.5)), 1)
  assert process.epsilon(state)['private'] == pytest.approx(
      accountant.get_epsilon(config.delta), rel=1e-9)
  for bad, message in [
      ('not a factory', 'model_aggregator must be a tff_hdp.fedhdp.'
       'hdp_factory.HeterogeneousDPFactory, got str'),
      (factory(groups=(dataclasses.replace(private, name='other'),
                       opted_out)), "must have the config's groups"),
      (factory(expected_counts=None), 'must divide by the expected counts'),
      (factory(mechanism_seed=None), "mechanism_seed (None) must be the "
       "config's (1)"),
      (factory(groups=(dataclasses.replace(private, noise_multiplier=0.0),
                       opted_out), clip_learning_rate=0.0),
       "private group 'private' adds no noise")]:
    with pytest.raises((TypeError, ValueError)) as error:
      tff_hdp.fedhdp.build_fedhdp_process(MODEL,
                                          Preferences(levels=levels),
                                          model_aggregator=bad,
                                          config=config)
    assert message in str(error.value) and '\n' not in str(error.value)
