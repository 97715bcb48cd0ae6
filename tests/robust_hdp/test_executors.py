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
"""The choice of backend and the cohort's checks (the rounds themselves:
tests/test_round_executors.py, tests/robust_hdp/test_process.py)."""


import numpy as np
import pytest

from tff_hdp import round_executor
from tff_hdp.robust_hdp import executors
from tests.robust_hdp import executor_case


def _build(backend, workers=()):
  return executors.build_executor(
      backend, executor_case.SPEC, executor_case.SPEC.init(0), None,
      settings=None, workers=workers)


@pytest.mark.parametrize('backend,workers,message', [
    ('gpu', (), r"^backend must be one of tff, direct, distributed, got "
     r"'gpu'$"),
    ('tff', ('127.0.0.1:1',), r"^workers are for backend 'distributed' "
     r"only, got backend 'tff'$"),
    ('distributed', (), r"^backend 'distributed' needs workers \(host:port "
     r'of each TFF worker\), got none$'),
])
def test_build_executor_refuses_in_one_line(backend, workers, message):
  with pytest.raises(ValueError, match=message):
    _build(backend, workers)


def test_the_cohort_is_checked_in_one_line():
  cohort, empty = executor_case.cohorts()
  for backend in round_executor.BACKENDS:
    cohort.check(backend)
    empty.check(backend)
  weighing = cohort._replace(weighing_info=cohort.info)
  weighing.check(round_executor.DIRECT)
  for backend in (round_executor.TFF, round_executor.DISTRIBUTED):
    with pytest.raises(ValueError, match=(
        r'^Cohort.weighing_info \(a clip-only run weighing the noised '
        rf"updates\) runs on backend 'direct' only, not '{backend}'; "
        r'allowed there: None$')):
      weighing.check(backend)
  with pytest.raises(ValueError, match=r"^Cohort: 3 clients' data but 2 "
                     r'infos; give one info per client$'):
    cohort._replace(info=cohort.info[:2]).check(round_executor.DIRECT)
  with pytest.raises(ValueError, match=r'^Cohort: 1 weighing infos for 3 '
                     r'clients; give one per client$'):
    cohort._replace(weighing_info=cohort.info[:1]).check(
        round_executor.DIRECT)


def test_the_direct_round_weighs_the_weighing_updates():
  """A clip-only cohort: the clients run without noise, the rule weighs
  the noised updates they would have sent; the model moves by the clipped
  ones."""
  executor = executor_case.executor(round_executor.DIRECT, None)
  cohort = executor_case.cohorts()[0]
  clipped = cohort._replace(info=[dict(i, noise_multiplier=np.float32(0))
                                  for i in cohort.info])
  key = np.array([1, 2], np.int64)
  state = executor.initialize(key)
  noised = executor.next(state, cohort)
  plain = executor.next(state, clipped)
  weighed = executor.next(state, clipped._replace(weighing_info=cohort.info))
  np.testing.assert_array_equal(weighed.measurements['weights'],
                                noised.measurements['weights'])
  assert not np.array_equal(weighed.measurements['weights'],
                            plain.measurements['weights'])
  # The model moves by the clipped updates, not by the noised ones.
  assert not all(np.array_equal(a, b) for a, b in zip(
      weighed.state['global_weights'], noised.state['global_weights']))
