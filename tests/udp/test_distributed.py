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
"""UDP-Alg's pFedHN over two TFF workers on 127.0.0.1 against one machine.

UDP-Alg's own rounds over two workers are tests/test_round_conformance.py's
(the run against one machine's, and its resume from a checkpoint) and
tests/test_round_executors.py's (a cohort cut over both workers, the round
the direct round's to 1e-6 with the noise on: drawn once, after the
merge). A lost worker ends a run in one line through `tff_hdp.distributed`,
which every system's workers share (tests/test_distributed.py,
tests/robust_hdp/test_distributed.py).
"""

import dataclasses

import numpy as np
import pytest

from tests.udp import conftest
from tff_hdp import distributed
from tff_hdp.udp import training

TINY = dataclasses.replace(conftest.TINY, eval_every=1, backend='tff')


def assert_same_run(a, b):
  """`b`, a run over two workers, is `a`, the same run on one machine."""
  assert a['epsilon'] == b['epsilon']
  assert len(a['history']) == len(b['history'])
  for x, y in zip(a['history'], b['history']):
    assert x.keys() == y.keys()
    for key in x:  # Users, noise stddev, loss, accuracy, epsilon.
      assert x[key] == pytest.approx(y[key], rel=1e-4, abs=1e-5), key
  np.testing.assert_allclose(a['metrics']['user_accuracy'],
                             b['metrics']['user_accuracy'], atol=1e-3)


@pytest.mark.parametrize('algorithm', ['pfedhn'])
def test_two_workers_equal_one_machine(tff_runtime, two_workers, data,
                                      algorithm):
  """pFedHN: one user a round (one worker's subround)."""
  del tff_runtime  # The single-machine process runs on it.
  run = dataclasses.replace(TINY, algorithm=algorithm)
  one = training.train(run, data)
  two = training.train(dataclasses.replace(
      run, tff_workers=tuple(distributed.local_addresses(two_workers))), data)
  assert_same_run(one, two)
