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
"""Every system's round on every backend, held to one contract (issue 61).

For each of the three systems' drivers and each backend (TFF, direct, and
TFF over two local workers), one tiny run under a mechanism seed:
- every round publishes the same measurement keys (UDP-Alg's run samples
  at a small q, so that one of its cohorts is empty, checked below;
  FedHDP's cohorts at this seed are not: every system's empty rounds,
  their keys and noise, are tests/test_empty_cohorts.py's);
- a run resumed from the checkpoint the uninterrupted run wrote after
  round 2 (what a run killed then leaves: tests/test_checkpoint.py kills
  the rounds' loop, which every driver runs) ends exactly where the
  uninterrupted run ends;
- the three backends agree: the same history and metrics (to float
  rounding: the backends sum in other orders) and the same epsilon;
- Robust-HDP's and UDP-Alg's runs over two workers are the one machine's
  (TFF's), to the tolerances of `_assert_two_workers_are_one_machine`.
"""

import dataclasses
import shutil

import pytest

from tests import backends
from tests.robust_hdp import test_distributed as robust_hdp_distributed
from tests.udp import conftest as udp_conftest
from tests.udp import test_distributed as udp_distributed
from tff_hdp import datasets
from tff_hdp.data import federated_data

import numpy as np

SYSTEMS = ('fedhdp', 'robust_hdp', 'udp')
BACKENDS = backends.BACKENDS
ROUNDS = 4


def _robust_data():
  rng = np.random.default_rng(0)
  make = lambda k: (rng.random((k, 6, 6)).astype(np.float32),
                    rng.integers(0, 3, k).astype(np.int32))
  return federated_data.FederatedData(
      name='tiny', input_shape=(6, 6), num_classes=3,
      train=[make(24 + 2 * i) for i in range(5)],
      test=[make(8) for _ in range(5)], server_test=make(16))


def _system(name):
  """(training module, tiny config, data) of the system `name`."""
  if name == 'fedhdp':
    from tff_hdp.fedhdp import config  # pylint: disable=g-import-not-at-top
    from tff_hdp.fedhdp import training  # pylint: disable=g-import-not-at-top
    return training, config.FedHdpConfig(
        model='fc', algorithm='fedhdp', rounds=ROUNDS, clients_per_round=1,
        sampling_rate=0.1, local_epochs=1, batch_size=5, learning_rate=0.1,
        personal_learning_rate=0.1, initial_clip=0.5, noise_multiplier=1.0,
        clipped_count_stddev=1.0, optout_fraction=0.25, eval_every=1,
        lambda_p=0.1, lambda_np=0.1, seed=1, mechanism_seed=4), (
            datasets.load_fedhdp_data('digits', num_clients=20, seed=0))
  if name == 'udp':
    from tests.udp import conftest  # pylint: disable=g-import-not-at-top
    from tff_hdp.udp import training  # pylint: disable=g-import-not-at-top
    return training, dataclasses.replace(
        conftest.TINY, rounds=ROUNDS, sampling_rate=0.2, eval_every=1,
        mechanism_seed=4), datasets.load_udp_data('digits', num_users=12,
                                                  seed=0)
  from tff_hdp.robust_hdp import config  # pylint: disable=g-import-not-at-top
  from tff_hdp.robust_hdp import training  # pylint: disable=g-import-not-at-top
  return training, config.RobustHdpConfig(
      algorithm='robust_hdp', epsilons=(1.0, 2.0, 4.0, 8.0, 3.0),
      batch_sizes=(4, 8, 8, 16, 4), model='fc', rounds=ROUNDS, eval_every=1,
      learning_rate=0.1, rpca_max_iterations=200, mechanism_seed=4), (
          _robust_data())


def _epsilon(record):
  """The run's epsilon: per group (FedHDP), the users' (UDP-Alg), or per
  client (Robust-HDP's records give it client by client)."""
  if 'epsilon' in record:
    return record['epsilon']
  return [c['achieved_epsilon'] for c in record['clients']]


_RUNS = {}  # (system, backend): the uninterrupted run's record.


@pytest.mark.parametrize('backend', BACKENDS)
@pytest.mark.parametrize('system', SYSTEMS)
def test_keys_every_round_and_resume_after_a_kill(request, tmp_path, system,
                                                  backend):
  training, config, data = _system(system)
  config = backends.on_backend(config, backend, request)
  killed = tmp_path / 'killed'

  def kill_after_2(round_num, _):
    if round_num == 2:  # Its checkpoint of round 2, as a kill leaves it.
      shutil.copytree(tmp_path / 'whole', killed)

  whole = training.train(config, data, checkpoint_dir=str(tmp_path / 'whole'),
                         checkpoint_every=1, on_round=kill_after_2)
  _RUNS[system, backend] = whole
  assert len(whole['history']) == ROUNDS
  assert len({tuple(sorted(entry)) for entry in whole['history']}) == 1
  ran = []
  resumed = training.train(config, data, checkpoint_dir=str(killed),
                           checkpoint_every=1,
                           on_round=lambda r, _: ran.append(r))
  assert ran == list(range(3, ROUNDS + 1))  # 1 and 2: the checkpoint's.
  assert resumed['history'] == whole['history']
  assert resumed['metrics'] == whole['metrics']
  assert _epsilon(resumed) == _epsilon(whole)


def _close(a, b, where, tolerance):
  if isinstance(a, dict):
    assert a.keys() == b.keys(), where
    for k in a:
      _close(a[k], b[k], f'{where}.{k}', tolerance)
  elif isinstance(a, (list, tuple)):
    assert len(a) == len(b), where
    for i, (x, y) in enumerate(zip(a, b)):
      _close(x, y, f'{where}[{i}]', tolerance)
  elif isinstance(a, float):
    assert a == pytest.approx(b, **tolerance), where
  else:
    assert a == b, where


# How far a backend's run may be from the direct backend's run
# (`pytest.approx`'s; abs alone: no relative tolerance). FedHDP's and
# UDP-Alg's are those at which their drivers' TFF runs were compared with
# direct ones (measured: within 3e-7 here).
TOLERANCE = {'fedhdp': dict(abs=1e-5), 'robust_hdp': dict(rel=1e-3, abs=1e-4),
             'udp': dict(rel=1e-4, abs=1e-5)}


def _assert_two_workers_are_one_machine(system, one, two, config, data):
  """`two`, the run over two workers, is `one`, TFF's on one machine.

  Robust-HDP: its 5 clients cut 3 + 2. UDP-Alg: a cohort of several users
  cut over both workers, its noise added once, after the merge. Each to its
  system's tests/<system>/test_distributed.py's `assert_same_run`.
  """
  if system == 'robust_hdp':
    robust_hdp_distributed.assert_same_run(one, two)
  elif system == 'udp':
    sizes = [len(udp_conftest.sampled_users(config, data.num_clients, t))
             for t in range(ROUNDS)]
    # A cohort cut over both workers; and an empty one (the docstring's).
    assert max(sizes) >= 2 and min(sizes) == 0, sizes
    udp_distributed.assert_same_run(one, two)


@pytest.mark.parametrize('system', SYSTEMS)
def test_the_backends_agree(request, system):
  """After the runs above: every backend's history, metrics and epsilon are
  the direct backend's, to float rounding (`TOLERANCE`), and the run over
  two workers is the one machine's."""
  training, config, data = _system(system)
  runs = {b: _RUNS.get((system, b)) for b in BACKENDS}
  if any(r is None for r in runs.values()):  # Run alone: make them here.
    runs = {b: training.train(backends.on_backend(config, b, request), data)
            for b in BACKENDS}
  for backend in ('tff', 'distributed'):
    for part in ('history', 'metrics'):
      _close(runs[backend][part], runs['direct'][part],
             f'{system} {backend} {part}', TOLERANCE[system])
    assert _epsilon(runs[backend]) == _epsilon(runs['direct'])
    if system == 'udp':  # Its users' accuracies (%): tighter than rel.
      np.testing.assert_allclose(runs[backend]['metrics']['user_accuracy'],
                                 runs['direct']['metrics']['user_accuracy'],
                                 atol=1e-3)
  assert not runs['tff']['config']['tff_workers']
  assert len(runs['distributed']['config']['tff_workers']) == 2
  _assert_two_workers_are_one_machine(system, runs['tff'],
                                      runs['distributed'], config, data)
