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
"""UDP-Alg over two TFF workers on 127.0.0.1 against one machine."""

import dataclasses
import signal

import numpy as np
import pytest

from tests.udp import conftest
from tff_hdp import distributed
from tff_hdp import runtime
from tff_hdp.udp import training

TINY = dataclasses.replace(conftest.TINY, eval_every=1, backend='tff')


def _assert_same_run(a, b):
  assert a['epsilon'] == b['epsilon']
  assert len(a['history']) == len(b['history'])
  for x, y in zip(a['history'], b['history']):
    assert x.keys() == y.keys()
    for key in x:  # Users, noise stddev, loss, accuracy, epsilon.
      assert x[key] == pytest.approx(y[key], rel=1e-4, abs=1e-5), key
  np.testing.assert_allclose(a['metrics']['user_accuracy'],
                             b['metrics']['user_accuracy'], atol=1e-3)


@pytest.mark.parametrize('algorithm', ['udp', 'pfedhn'])
def test_two_workers_equal_one_machine(tff_runtime, two_workers, data,
                                      algorithm):
  """UDP-Alg: 3-5 users a round cut over two workers, the noise added once;
  pFedHN: one user a round (one worker's subround)."""
  del tff_runtime  # The single-machine process runs on it.
  run = dataclasses.replace(TINY, algorithm=algorithm)
  one = training.train(run, data)
  two = training.train(dataclasses.replace(
      run, tff_workers=tuple(distributed.local_addresses(two_workers))), data)
  if algorithm == 'udp':  # pFedHN takes one user a step by construction.
    assert max(len(conftest.sampled_users(run, data.num_clients, t))
               for t in range(run.rounds)) >= 2
  _assert_same_run(one, two)


def test_noise_is_drawn_once_after_the_merge(two_workers, data):
  """Noise only (lambda S-sized steps swamped): phi's change over a round is
  the one machine's draw, not one per worker."""
  run = dataclasses.replace(TINY, rounds=1, noise_multiplier=1e4,
                            tff_workers=tuple(
                                distributed.local_addresses(two_workers)))
  two = training.train(run, data)
  # Both workers ran users.
  assert len(conftest.sampled_users(run, data.num_clients, 0)) >= 2
  direct = training.train(dataclasses.replace(run, backend='direct',
                                              tff_workers=()), data)
  # The loss after one round of pure noise is the same noise's loss.
  assert two['history'][0]['loss'] == pytest.approx(
      direct['history'][0]['loss'], rel=1e-4)
  assert two['history'][0]['noise_stddev'] == pytest.approx(
      direct['history'][0]['noise_stddev'], rel=1e-6)


def test_lost_worker_stops_the_run_and_it_resumes(tff_runtime, data,
                                                  tmp_path):
  del tff_runtime
  # Mechanism seed 3 samples 4, 4 and 2 users: round 2 reaches both workers.
  run = dataclasses.replace(TINY, rounds=3, mechanism_seed=3)
  assert len(conftest.sampled_users(run, data.num_clients, 1)) >= 2
  full = training.train(run, data)
  started = distributed.start_local_workers(2)
  try:
    run = dataclasses.replace(run, tff_workers=tuple(
        distributed.local_addresses(started)))

    def kill_after_1(round_num, _):
      if round_num == 1:
        started[1].process.send_signal(signal.SIGKILL)
        started[1].process.wait()

    with pytest.raises(distributed.WorkerLostError) as e:
      training.train(run, data, checkpoint_dir=str(tmp_path),
                     checkpoint_every=1, on_round=kill_after_1)
    assert '\n' not in str(e.value)
    started[1].stop()
    started[1] = runtime.Worker(port=started[1].port)
    started[1].wait_ready()
    ran = []
    resumed = training.train(run, data, checkpoint_dir=str(tmp_path),
                             checkpoint_every=1,
                             on_round=lambda r, _: ran.append(r))
    assert ran == [2, 3]
  finally:
    for worker in started:
      worker.stop()
  _assert_same_run(full, resumed)
