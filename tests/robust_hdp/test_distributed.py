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
"""Robust-HDP over two TFF workers on 127.0.0.1 against one machine."""

import signal

import numpy as np
import pytest

from tff_hdp import distributed
from tff_hdp import runtime
from tff_hdp.data import federated_data
from tff_hdp.robust_hdp import config as config_lib
from tff_hdp.robust_hdp import training


@pytest.fixture(scope='module')
def data():
  rng = np.random.default_rng(0)
  make = lambda k: (rng.random((k, 6, 6)).astype(np.float32),
                    rng.integers(0, 3, k).astype(np.int32))
  return federated_data.FederatedData(
      name='tiny', input_shape=(6, 6), num_classes=3,
      train=[make(24 + 2 * i) for i in range(5)],
      test=[make(8) for _ in range(5)], server_test=make(16))


def _config(algorithm, **kw):
  defaults = dict(epsilons=(1.0, 2.0, 4.0, 8.0, 3.0),
                  batch_sizes=(4, 8, 8, 16, 4), model='fc', rounds=3,
                  eval_every=1, learning_rate=0.1, rpca_max_iterations=200,
                  backend='tff', mechanism_seed=0)
  defaults.update(kw)
  return config_lib.RobustHdpConfig(algorithm=algorithm, **defaults)


def assert_same_run(one, two):
  """`two`, a run over two workers, is `one`, the same run on one machine.

  The clients' rows are concatenated, not summed: the server step sees one
  machine's M bit for bit (RPCA's float64 sums may be regrouped by TFF's
  graph optimiser, as between the process and the direct runner).
  """
  for a, b in zip(one['history'], two['history']):
    np.testing.assert_allclose(a['weights'], b['weights'], rtol=1e-6)
    np.testing.assert_allclose(a['sigma_hat2'], b['sigma_hat2'], rtol=1e-6)
    assert a['accuracy'] == pytest.approx(b['accuracy'], abs=1e-9)
  assert one['clients'] == two['clients']  # z_i, b_i, the same epsilons.
  np.testing.assert_allclose(one['metrics']['client_accuracy'],
                             two['metrics']['client_accuracy'], atol=1e-9)


# Robust-HDP's own rule over two workers is tests/test_round_conformance.py's
# (`assert_same_run`); here a fixed-weight rule's.
@pytest.mark.parametrize('algorithm', ['weiavg'])
def test_two_workers_equal_one_machine(tff_runtime, two_workers, data,
                                      algorithm):
  """5 clients cut 3 + 2: the same updates, weights, sigma^2 and model."""
  del tff_runtime  # The single-machine process runs on it.
  addresses = tuple(distributed.local_addresses(two_workers))
  one = training.train(_config(algorithm), data)
  two = training.train(_config(algorithm, tff_workers=addresses), data)
  assert two['config']['tff_workers'] == list(addresses) or (
      two['config']['tff_workers'] == addresses)
  assert_same_run(one, two)


class _KillAfter:
  """on_round: kills one worker after `rounds` rounds."""

  def __init__(self, worker, rounds):
    self.worker, self.rounds = worker, rounds

  def __call__(self, round_num, entry):
    del entry
    if round_num == self.rounds:
      self.worker.process.send_signal(signal.SIGKILL)
      self.worker.process.wait()


def test_lost_worker_stops_the_run_and_it_resumes(tff_runtime, data,
                                                  tmp_path):
  """Worker 2 is killed after round 1 (checkpointed): round 2 ends in one
  line; with the worker back on its port the run resumes to the results of
  an uninterrupted one."""
  del tff_runtime
  full = training.train(_config('dpfedavg'), data)
  started = distributed.start_local_workers(2)
  try:
    addresses = tuple(distributed.local_addresses(started))
    config = _config('dpfedavg', tff_workers=addresses)
    directory = str(tmp_path / 'ckpt')
    with pytest.raises(distributed.WorkerLostError,
                       match=addresses[1]) as e:
      training.train(config, data, checkpoint_dir=directory,
                     checkpoint_every=1, on_round=_KillAfter(started[1], 1))
    assert '\n' not in str(e.value)
    started[1].stop()
    started[1] = runtime.Worker(port=started[1].port)
    started[1].wait_ready()
    ran = []
    resumed = training.train(config, data, checkpoint_dir=directory,
                             checkpoint_every=1,
                             on_round=lambda r, _: ran.append(r))
    assert ran == [2, 3]  # Round 1 came from the checkpoint.
  finally:
    for worker in started:
      worker.stop()
  for a, b in zip(full['history'], resumed['history']):
    np.testing.assert_allclose(a['weights'], b['weights'], rtol=1e-6)
    assert a['accuracy'] == pytest.approx(b['accuracy'], abs=1e-9)


def test_workers_need_the_tff_backend(data):
  with pytest.raises(ValueError, match='tff_workers needs backend tff'):
    training.train(_config('weiavg', backend='direct',
                           tff_workers=('127.0.0.1:1',)), data)
