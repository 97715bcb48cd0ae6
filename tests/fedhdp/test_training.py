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
"""Short end-to-end runs of every algorithm on tiny data."""

import dataclasses

import numpy as np
import pytest

from tff_hdp import datasets
from tff_hdp.privacy import accounting
from tff_hdp.fedhdp import config
from tff_hdp.fedhdp import table_rows
from tff_hdp.fedhdp import training

# On the direct backend: the driver's records are the same on TFF's, whose
# rounds the direct backend's match (tests/fedhdp/test_direct_backend.py;
# every backend: tests/test_round_conformance.py), at a few seconds of
# tracing a run.
TINY = config.FedHdpConfig(
    model='fc', rounds=2, clients_per_round=8, sampling_rate=0.2,
    local_epochs=1, batch_size=5, learning_rate=0.1,
    personal_learning_rate=0.1, initial_clip=0.5, noise_multiplier=1.0,
    clipped_count_stddev=1.0, optout_fraction=0.25, eval_every=1,
    lambda_p=0.1, lambda_np=0.1, seed=1, backend='direct')


@pytest.fixture(scope='module')
def data():
  return datasets.load_fedhdp_data('digits', num_clients=40, seed=0)


# Every algorithm with Ditto, and without it once: what a run without Ditto
# reports (no local columns, no personal models) does not depend on the
# algorithm, whose groups the runs with Ditto check.
@pytest.mark.parametrize('algorithm,ratio,ditto', [('non_private', 1.0, True),
                                                   ('dp_fedavg', 1.0, True),
                                                   ('hdp_fedavg', 1.0, True),
                                                   ('fedhdp', 0.1, True),
                                                   ('dp_fedavg', 1.0, False)])
def test_each_algorithm_runs(data, algorithm, ratio, ditto):
  run = dataclasses.replace(TINY, algorithm=algorithm, ratio=ratio,
                            ditto=ditto)
  result = training.train(run, data)
  m = result['metrics']
  assert 0.0 <= m['acc_g'] <= 100.0
  assert len(result['history']) == 2
  assert 'accuracy' in result['history'][-1]
  assert 'clip_norm' in result['history'][-1]
  if algorithm == 'non_private':
    assert m['acc_g_p'] is None and m['acc_g_np'] is not None
    assert result['epsilon'] == {}
  elif algorithm == 'dp_fedavg':
    assert m['acc_g_np'] is None and m['acc_g_p'] is not None
  else:
    assert m['delta_g'] == pytest.approx(m['acc_g_np'] - m['acc_g_p'])
  if algorithm != 'non_private':
    # Every run reports epsilon per private group, from the RDP accountant.
    assert result['epsilon']['private'] == pytest.approx(
        accounting.compute_epsilon(8 / 40, 1.0, 2, 1e-4), rel=1e-9)
  if not ditto:
    assert m['acc_l_p'] is None and m['acc_l_np'] is None
    assert 'personal_models' not in result
  else:
    # One digit a client: the Ditto models on their digit's held-out images.
    pools = result['personal_models']
    for group in ('p', 'np'):
      trained = m[f'acc_l_{group}'] is not None
      assert (pools[f'acc_l_pool_{group}'] is not None) == trained
      if trained:
        assert 0.0 <= pools[f'acc_l_pool_{group}'] <= 100.0


def test_secret_by_default_reproducible_only_when_asked(data):
  # That two runs of one configuration differ under secret keys and agree
  # bit for bit under one mechanism seed, from the binary, is
  # tests/test_secret_randomness.py's
  # test_secret_by_default_reproducible_only_with_the_flag[run_fedhdp.py];
  # here: another public seed gives another run, and the seeded record
  # says what the mechanism seed costs.
  seeded = dataclasses.replace(TINY, mechanism_seed=7)
  c = training.train(seeded, data)
  e = training.train(dataclasses.replace(seeded, seed=2), data)
  assert c['history'] != e['history']
  assert c['privacy']['is_bound'] is False
  assert 'mechanism_seed=7' in c['privacy']['not_bound_because']
  assert 'not a guarantee' in c['privacy']['guarantee']['private']


def test_profile_records_each_round_of_the_direct_backend(data):
  profile = []
  run = TINY
  experiment = training.prepare(run, data)
  training.run_rounds(experiment, observers=[
      training.ProfileObserver(experiment.executor, profile)])
  assert len(profile) == run.rounds
  for entry in profile:
    assert entry['seconds']['client_work'] > 0
    work = entry['work']
    assert 0 < work['examples'] <= work['computed'] <= work[
        'padded_to_largest']


def test_r_zero_never_uses_private_clients(data):
  run = dataclasses.replace(TINY, algorithm='fedhdp', ratio=0.0, rounds=3)
  result = training.train(run, data)
  # No private client trained: their personal model is the global model.
  m = result['metrics']
  assert m['acc_l_p'] == pytest.approx(m['acc_g_p'])
  assert result['epsilon']['private'] == 0.0
  # Scored on their digit's held-out images, with the global model too.
  pools = result['personal_models']
  assert pools['acc_l_pool_p'] is not None
  assert pools['acc_l_pool_np'] is not None


def test_pld_accountant_reports_the_same_rounds_tighter(data):
  run = dataclasses.replace(TINY, algorithm='dp_fedavg', ditto=False)
  rdp = training.train(run, data)['epsilon']['private']
  pld = training.train(dataclasses.replace(run, accountant='pld'),
                       data)['epsilon']['private']
  z_eff = 1.0  # TINY's; the ledger steps z_eff every round.
  assert rdp == accounting.compute_epsilon(0.2, z_eff, 2, 1e-4)
  assert pld == accounting.compute_epsilon(0.2, z_eff, 2, 1e-4,
                                           accountant='pld')
  assert pld < rdp


@pytest.mark.parametrize('poisson,denominators,relation,is_bound', [
    (True, 'expected', accounting.ADD_OR_REMOVE_ONE, True),
    (False, 'realised', accounting.REPLACE_ONE, True),
    (False, 'expected', accounting.REPLACE_ONE, True),
    (True, 'realised', accounting.ADD_OR_REMOVE_ONE, False)])
def test_epsilon_is_accounted_for_the_runs_sampling(data, poisson,
                                                    denominators, relation,
                                                    is_bound):
  run = dataclasses.replace(TINY, algorithm='dp_fedavg', ditto=False,
                            poisson_sampling=poisson,
                            denominators=denominators)
  record = training.train(run, data)
  population = None if poisson else data.num_clients
  # 8 of 40 = 0.2 = q: the same rate, accounted for how the cohort was drawn.
  expected = accounting.compute_epsilon(0.2, 1.0, 2, run.delta,
                                        population=population)
  assert record['epsilon']['private'] == pytest.approx(expected, rel=1e-9)
  assert record['privacy']['is_bound'] is is_bound
  assert ('replace-one' in record['privacy']['guarantee']['private']) is (
      relation == accounting.REPLACE_ONE)
  row = table_rows.run_row(record)
  assert row[-1].startswith('~') is (not is_bound)
  line = table_rows.epsilon_line([record])
  assert ('NOT a bound' in line) is (not is_bound)


def test_opt_out_set_is_shared_by_all_algorithms(data):
  setups = [config.resolve(dataclasses.replace(TINY, algorithm=a), data)
            for a in ('non_private', 'dp_fedavg', 'hdp_fedavg', 'fedhdp')]
  for s in setups[1:]:
    np.testing.assert_array_equal(s.opted_out, setups[0].opted_out)
  assert setups[0].opted_out.sum() == 10


def test_noise_split_like_tff(data):
  # z from z_eff and z_b as TFF's gaussian_adaptive: (z_eff^-2-(2z_b)^-2)^-1/2
  setup = config.resolve(
      dataclasses.replace(TINY, noise_multiplier=1.5,
                          clipped_count_stddev=None, clients_per_round=20),
      data)
  z_b = 0.05 * 20
  assert setup.clipped_count_stddev == pytest.approx(z_b)
  assert setup.value_noise_multipliers[0] == pytest.approx(
      (1.5**-2 - (2 * z_b)**-2)**-0.5)


@pytest.mark.parametrize('field,value,message', [
    ('ratio', 1.5, 'r must be in'),
    ('lambda_p', -1.0, 'lambda_p must be >= 0'),
    ('learning_rate', -0.1, 'learning_rate must be > 0'),
    ('optout_fraction', 1.0, 'optout_fraction must be in'),
    ('delta', 1.0, 'delta must be in'),
    ('clients_per_round', 41, 'clients_per_round must be in'),
    ('accountant', 'prv', 'accountant must be one of rdp, pld'),
    ('denominators', 'observed', 'denominators must be one of expected, '
     'realised'),
    ('ditto_init', 'zero', 'ditto_init must be one of first_round, initial'),
])
def test_config_validation(data, field, value, message):
  with pytest.raises(ValueError, match=message):
    config.resolve(dataclasses.replace(TINY, **{field: value}), data)


def test_pld_refuses_a_fixed_cohort(data):
  run = dataclasses.replace(TINY, poisson_sampling=False, accountant='pld')
  with pytest.raises(ValueError, match='accountant pld needs poisson_sampling'):
    run.validate(data.num_clients)


def test_validate_without_the_population():
  # Without N, clients_per_round is only checked to be >= 1.
  dataclasses.replace(TINY, clients_per_round=41).validate()
  with pytest.raises(ValueError,
                     match=r'^clients_per_round must be >= 1, got 0$'):
    dataclasses.replace(TINY, clients_per_round=0).validate()
  with pytest.raises(ValueError, match=r'must be in \[1, 40\] \(the popul'):
    dataclasses.replace(TINY, clients_per_round=41).validate(40)


@pytest.mark.parametrize('ditto_init', ['first_round', 'initial'])
def test_where_a_clients_ditto_model_starts(data, ditto_init):
  # eta_p = 0: a Ditto model stays where it started. Round 1's theta^t is
  # theta^0; a client first in round 2 or 3 starts from theta^1 or theta^2
  # at its first round, from theta^0 under 'initial'.
  run = dataclasses.replace(TINY, algorithm='non_private', rounds=3,
                            personal_learning_rate=0.0,
                            ditto_init=ditto_init,
                            mechanism_seed=5)  # Fixed cohorts.
  experiment = training.prepare(run, data)
  training.run_rounds(experiment)
  theta0 = experiment.initial_weights
  trained = np.flatnonzero(experiment.store.initialized)
  at_theta0 = [all(np.array_equal(w, w0) for w, w0 in
                   zip(experiment.store.get(c), theta0)) for c in trained]
  assert len(trained) > 8  # More than round 1's clients took part.
  if ditto_init == 'initial':
    assert all(at_theta0)
  else:
    assert 0 < sum(at_theta0) < len(trained)
