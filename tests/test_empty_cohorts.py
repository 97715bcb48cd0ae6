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
"""Every round is released as it is accounted (issue 60), on every backend.

A round whose cohort is empty runs the same release as any other: FedHDP's
and UDP-Alg's servers add the accounted Gaussian noise to zero sums over
the fixed denominators and publish the same measurement keys (a missing
key, or an unchanged model, would say "nobody took part" and release less
than the ledger charges). Robust-HDP's noise is the clients' own (local
DP): with nobody in the round nothing is released, the model stays and no
client is charged, with the same measurement keys.

Tiny populations at small q force empty rounds (which ones is recomputed
here from the run's mechanism seed); the noise scale and the epsilon are
computed here, independently of the package (TFF's noise split, McMahan et
al.'s fixed denominator, dp_accounting's RDP accountant).
"""

import dataclasses
import math

import dp_accounting
import numpy as np
import pytest

from tests import backends
from tests import conftest
from tff_hdp import datasets
from tff_hdp import distributed
from tff_hdp import round_loop
from tff_hdp import templates
from tff_hdp.privacy import mechanism_key
from tff_hdp.robust_hdp import executors as robust_executors

BACKENDS = backends.BACKENDS
MECHANISM_SEED = 5


def _cohorts(num_clients, rate, rounds):
  """The Poisson cohorts the runs draw, recomputed from the seed."""
  return [conftest.poisson_cohort(MECHANISM_SEED, num_clients, rate, t)
          for t in range(rounds)]


def _rdp_epsilon(rate, z, rounds, delta):
  accountant = dp_accounting.rdp.RdpAccountant()
  accountant.compose(dp_accounting.PoissonSampledDpEvent(
      rate, dp_accounting.GaussianDpEvent(z)), rounds)
  return accountant.get_epsilon(delta)


class _Steps(round_loop.Observer):
  """Each round's change of the model's weights (flat) and its entry."""

  def __init__(self, weights_of):
    self._weights_of = weights_of
    self.before, self.deltas, self.entries = None, [], []
    self.states, self.after = [], []

  def before_round(self, round_num, state):
    self.before = self._weights_of(state)
    self.states.append(state)

  def after_round(self, round_num, state, entry):
    self.deltas.append(self._weights_of(state) - self.before)
    self.after.append(state)
    self.entries.append(dict(entry))


def _flat(weights):
  return np.concatenate([np.asarray(w, np.float64).ravel() for w in weights])


def _check_noise(deltas, scales):
  """The empty rounds' changes are N(0, scale^2) per coordinate: their
  pooled standardized stddev is 1 within 5 standard errors (seeded)."""
  z = np.concatenate([d / s for d, s in zip(deltas, scales)])
  assert abs(np.mean(z)) < 5 / math.sqrt(z.size)
  assert abs(np.std(z) - 1.0) < 5 / math.sqrt(2 * z.size)


# FedHDP (paper 001): DP-FedAvg's one private group, Poisson at q = 0.03 on
# 20 clients, so that most rounds are empty.
FEDHDP_ROUNDS, FEDHDP_RATE, FEDHDP_Z, FEDHDP_ZB = 8, 0.03, 1.0, 1.0


@pytest.fixture(scope='module')
def fedhdp_data():
  return datasets.load_fedhdp_data('digits', num_clients=20, seed=0)


@pytest.mark.parametrize('backend', BACKENDS)
def test_fedhdp_empty_cohort_takes_the_noised_step(request, fedhdp_data,
                                                   backend):
  from tff_hdp.fedhdp import config as config_lib  # pylint: disable=g-import-not-at-top
  from tff_hdp.fedhdp import training  # pylint: disable=g-import-not-at-top
  config = backends.on_backend(config_lib.FedHdpConfig(
      model='fc', algorithm='dp_fedavg', rounds=FEDHDP_ROUNDS,
      clients_per_round=1, sampling_rate=FEDHDP_RATE, local_epochs=1,
      batch_size=5, learning_rate=0.1, personal_learning_rate=0.1,
      initial_clip=0.5, noise_multiplier=FEDHDP_Z,
      clipped_count_stddev=FEDHDP_ZB, optout_fraction=0.0, eval_every=1,
      lambda_p=0.1, lambda_np=0.1, seed=1,
      mechanism_seed=MECHANISM_SEED), backend, request)
  n = fedhdp_data.num_clients
  cohorts = _cohorts(n, FEDHDP_RATE, FEDHDP_ROUNDS)
  empty = [t for t, c in enumerate(cohorts) if not len(c)]
  assert 3 <= len(empty) < FEDHDP_ROUNDS  # Both kinds of round.
  experiment = training.prepare(config, fedhdp_data)
  steps = _Steps(lambda s: _flat(templates.global_weights(s)))
  run = round_loop.run_rounds(experiment, observers=[steps])
  # The same keys every round, empty or not.
  assert len({tuple(sorted(e)) for e in steps.entries}) == 1
  assert {'clip_norm', 'unclipped_fraction'} <= set(steps.entries[0])
  # The value noise of TFF's split of z_eff between the sums and the clip
  # count, (z_eff^-2 - (2 z_b)^-2)^-1/2, times S^t over the fixed
  # denominator q N (every client is private).
  z = (FEDHDP_Z**-2 - (2 * FEDHDP_ZB)**-2)**-0.5
  scales = [z * float(steps.states[t]['aggregator']['clip_norm']) /
            (FEDHDP_RATE * n) for t in empty]
  _check_noise([steps.deltas[t] for t in empty], scales)
  # The clip moves in the empty rounds too (its count is noised).
  def clip(state):
    return float(state['aggregator']['clip_norm'])
  for t in empty:
    assert clip(steps.after[t]) != clip(steps.states[t])
  assert run.ledger.get_epsilon('private', config.delta) == pytest.approx(
      _rdp_epsilon(FEDHDP_RATE, FEDHDP_Z, FEDHDP_ROUNDS, config.delta),
      rel=1e-9)


# UDP-Alg (paper 004): 12 users at q = 0.1.
UDP_RATE = 0.1


@pytest.fixture(scope='module')
def udp_data():
  return datasets.load_udp_data('digits', num_users=12, seed=0)


@pytest.mark.parametrize('backend', BACKENDS)
def test_udp_empty_cohort_takes_the_noised_step(request, udp_data, backend):
  from tests.udp import conftest  # pylint: disable=g-import-not-at-top
  from tff_hdp.udp import training  # pylint: disable=g-import-not-at-top
  rounds = 10
  config = backends.on_backend(dataclasses.replace(
      conftest.TINY, rounds=rounds, sampling_rate=UDP_RATE, eval_every=1,
      mechanism_seed=MECHANISM_SEED), backend, request)
  cohorts = _cohorts(udp_data.num_clients, UDP_RATE, rounds)
  empty = [t for t, c in enumerate(cohorts) if not len(c)]
  assert 3 <= len(empty) < rounds
  experiment = training.prepare(config, udp_data)
  steps = _Steps(lambda s: _flat(s['phi']))
  run = round_loop.run_rounds(experiment, observers=[steps])
  assert len({tuple(sorted(e)) for e in steps.entries}) == 1
  assert 'noise_stddev' in steps.entries[0]
  # w_u = min(|D_u| / w_hat, 1); the noise z C max_u w_u over q W, then
  # phi's step of hyper_learning_rate.
  w = np.minimum(np.array([len(y) for _, y in udp_data.train]) /
                 config.sample_cap, 1.0)
  stddev = (config.noise_multiplier * config.clip * w.max() /
            (UDP_RATE * w.sum()))
  for entry in steps.entries:
    assert entry['noise_stddev'] == pytest.approx(stddev, rel=1e-6)
  _check_noise([steps.deltas[t] for t in empty],
               [config.hyper_learning_rate * stddev] * len(empty))
  assert run.ledger.get_epsilon(training.LEDGER_NAME,
                                config.delta) == pytest.approx(
      _rdp_epsilon(UDP_RATE, config.noise_multiplier, rounds, config.delta),
      rel=1e-9)


# Robust-HDP (paper 003): the round of a cohort, then of nobody.
ROBUST_EPSILONS = (1.0, 3.0, 8.0, 3.0, 8.0)


@pytest.mark.parametrize('backend', BACKENDS)
def test_robust_hdp_empty_cohort_releases_nothing_and_charges_nobody(
    request, backend):
  from tests import user_code  # pylint: disable=g-import-not-at-top
  from tff_hdp.data import client_data  # pylint: disable=g-import-not-at-top
  from tff_hdp.robust_hdp import config as config_lib  # pylint: disable=g-import-not-at-top
  from tff_hdp.robust_hdp import process  # pylint: disable=g-import-not-at-top
  sizes = (8, 9, 10, 11, 12)
  config = config_lib.RobustHdpConfig(
      algorithm='weiavg', epsilons=ROBUST_EPSILONS,
      batch_sizes=(4,) * len(sizes), rounds=2, seed=1, mechanism_seed=1)
  model = user_code.PACKAGE
  clients = process.client_privacy(config, list(sizes))
  factory = process.build_aggregator(config, clients, [1.0] * len(sizes))
  settings = process.dp_sgd_settings(config)
  data = client_data.to_federated_data(
      user_code.client_data(sizes, 'c')).train
  info = [dict(index=np.int32(i), batch_size=np.int32(c.batch_size),
               noise_multiplier=np.float32(c.noise_multiplier))
          for i, c in enumerate(clients)]
  workers = ()
  if backend != 'direct':
    request.getfixturevalue('tff_runtime')
  if backend == 'distributed':
    workers = distributed.local_addresses(
        request.getfixturevalue('two_workers'))
  executor = robust_executors.build_executor(
      backend, model, model.init(1), factory, settings=settings,
      workers=workers)
  cohort = (0, 2, 4)  # A partial cohort, then nobody.
  state = executor.initialize(mechanism_key.new_key(1))
  state, with_clients, _ = executor.next(state, robust_executors.Cohort(
      [data[i] for i in cohort], [info[i] for i in cohort]))
  after, nobody, _ = executor.next(state, robust_executors.Cohort([], []))
  assert set(nobody) == set(with_clients)
  for before, now in zip(state['global_weights'], after['global_weights']):
    np.testing.assert_array_equal(before, now)
  assert int(after['round_num']) == 2
  np.testing.assert_array_equal(
      after['aggregator']['participation'],
      [int(i in cohort) for i in range(len(sizes))])
  np.testing.assert_array_equal(nobody['weights'], np.zeros(len(sizes)))
  if backend == 'distributed':  # A client twice in one round is refused.
    with pytest.raises(Exception, match='same row index'):
      executor.next(state, robust_executors.Cohort([data[0], data[0]],
                                                   [info[0], info[0]]))
