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
"""UDP-Alg's learning process in the driver (backend 'tff'): the same
rounds as the direct path, for the variants without an executor case
(noiseless, pFedHN). UDP-Alg's own rounds, an empty one included, are
compared on every backend by tests/test_round_executors.py (a round) and
tests/test_round_conformance.py (the driver's run)."""

import dataclasses

import numpy as np
import pytest

from tests.udp import conftest
from tff_hdp.udp import process
from tff_hdp.udp import training

TINY = dataclasses.replace(conftest.TINY, eval_every=1)


@pytest.mark.parametrize('algorithm', ['noiseless', 'pfedhn'])
def test_tff_process_runs_the_direct_rounds(tff_runtime, data, algorithm):
  del tff_runtime
  run = dataclasses.replace(TINY, algorithm=algorithm)
  direct = training.train(run, data)
  on_tff = training.train(dataclasses.replace(run, backend='tff'), data)
  _assert_same_run(on_tff, direct)


def _assert_same_run(on_tff, direct):
  assert on_tff['epsilon'] == direct['epsilon']
  for a, b in zip(on_tff['history'], direct['history']):
    assert a.keys() <= b.keys()
    for key in a:
      assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-5), key
  np.testing.assert_allclose(on_tff['metrics']['user_accuracy'],
                             direct['metrics']['user_accuracy'], atol=1e-3)


def test_client_elements_and_the_cohort_bound():
  x = np.arange(2 * 5 * 3, dtype=np.float32).reshape(2, 5, 3)
  y = np.zeros((2, 5), np.int32)
  indices = np.zeros((4, 2, 2), np.int32)
  mask = np.ones((4, 2, 2), np.float32)
  clients = [c.get_single_element() for c in process.client_elements(
      np.array([3, 9]), np.array([0.5, 1.0]), x, y, indices, mask, 4)]
  assert [(int(c['user']), float(c['weight']), int(c['row']))
          for c in clients] == [(3, 0.5, 0), (9, 1.0, 1)]
  assert clients[1]['indices'].shape == (4, 2)
  np.testing.assert_array_equal(clients[1]['x'], x[1])
  with pytest.raises(ValueError, match='more than max_cohort 1'):
    process.client_elements(np.array([3, 9]), np.ones(2), x, y, indices,
                            mask, 1)
  # qN + 6 sd of the Poisson cohort: 10 + 6 * 3 = 28, plus one.
  assert training.max_cohort(100, 0.1) == 29
  assert training.max_cohort(10, 0.9) == 10
