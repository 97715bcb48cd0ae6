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
"""Every system's round executor on every backend, held to one contract.

Each system supplies a tiny case (`tests/<system>/executor_case.py`):
  executor(backend, request) -> its `RoundExecutor` on that backend;
  cohorts() -> [a cohort with clients, the empty cohort], its Cohort type;
  TOLERANCE -> how far the backends may differ (they sum in other orders).
On every backend, from the same key, this checks that each round returns a
`RoundOutput` whose measurements have the same keys with and without
clients and on every backend, and that the three backends' states,
measurements and per-client results agree to the tolerance. Whole runs
(resume after a kill, the ledger) are tests/test_round_conformance.py's.
"""

import importlib

import numpy as np
import pytest
import tensorflow as tf

from tff_hdp import round_executor

SYSTEMS = ('fedhdp', 'robust_hdp', 'udp')
KEY = np.array([12, 34], np.int64)


def _case(system):
  return importlib.import_module(f'tests.{system}.executor_case')


def _flat(structure):
  return [np.asarray(v, np.float64) for v in tf.nest.flatten(structure)]


def _rounds(case, executor):
  """Two rounds from `KEY`: the cohort with clients, then the empty one."""
  state = executor.initialize(KEY)
  outputs = []
  for cohort in case.cohorts():
    output = executor.next(state, cohort)
    assert isinstance(output, round_executor.RoundOutput)
    outputs.append(output)
    state = output.state
  return outputs


@pytest.mark.parametrize('system', SYSTEMS)
def test_every_backend_keeps_the_contract(request, system):
  case = _case(system)
  results = {}
  for backend in round_executor.BACKENDS:
    executor = case.executor(backend, request)
    assert isinstance(executor, round_executor.RoundExecutor)
    assert executor.backend == backend
    results[backend] = _rounds(case, executor)
  reference = results[round_executor.DIRECT]
  keys = set(reference[0].measurements)
  assert keys, 'a round publishes its measurements'
  for backend, outputs in results.items():
    for output in outputs:
      assert set(output.measurements) == keys, (backend, output.measurements)
    for got, want in zip(outputs, reference):
      for part in ('state', 'measurements', 'clients'):
        a, b = _flat(getattr(got, part)), _flat(getattr(want, part))
        assert len(a) == len(b), (backend, part)
        for x, y in zip(a, b):
          np.testing.assert_allclose(x, y, rtol=case.TOLERANCE,
                                     atol=case.TOLERANCE,
                                     err_msg=f'{system} {backend} {part}')


@pytest.mark.parametrize('backend, workers, message', [
    ('gpu', (), r"^backend must be one of tff, direct, distributed, got 'gpu'$"),
    ('direct', ('127.0.0.1:1',),
     r"^workers are for backend 'distributed' only, got backend 'direct'$"),
    ('distributed', (), r"^backend 'distributed' needs workers"),
])
def test_a_backend_and_its_workers_are_checked_in_one_line(backend, workers,
                                                           message):
  with pytest.raises(ValueError, match=message):
    round_executor.check_backend(backend, workers)
  round_executor.check_backend('distributed', ('127.0.0.1:1',))
  for name in (round_executor.TFF, round_executor.DIRECT):
    round_executor.check_backend(name)
