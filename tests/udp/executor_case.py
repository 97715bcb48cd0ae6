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
"""UDP-Alg's case of tests/test_round_executors.py: a tiny round (12
digits users, a hypernetwork of one hidden block of 16, the FC target, K =
2) on each backend, with three users and then with nobody."""

import dataclasses
import functools

import numpy as np

from tests import backends
from tests.udp import conftest
from tff_hdp import datasets
from tff_hdp import round_executor
from tff_hdp.udp import executors
from tff_hdp.udp import training

# The backends regroup the users' float32 sums (TFF by its clients, the
# distributed round by worker); the noise is the same draw.
TOLERANCE = 1e-6

CONFIG = dataclasses.replace(conftest.TINY, hidden=16, hidden_layers=1)
USERS = (1, 4, 7)


@functools.lru_cache(maxsize=None)
def _experiment() -> training.Experiment:
  return training.prepare(
      CONFIG, datasets.load_udp_data('digits', num_users=12, seed=0))


def executor(backend: str, request) -> round_executor.RoundExecutor:
  """The tiny round on `backend`."""
  experiment = _experiment()
  workers = backends.executor_workers(backend, request)
  return executors.build_executor(backend, experiment.net, experiment.config,
                                  experiment.constants,
                                  experiment.data.num_clients,
                                  workers=workers)


def cohorts() -> list[executors.Cohort]:
  """[round 0: users 1, 4 and 7 with their weights and batches, round 1:
  nobody]."""
  experiment = _experiment()
  users = np.array(USERS, np.int64)
  batches = training.local_batches(experiment.data, users, CONFIG.local_steps,
                                   CONFIG.batch_size,
                                   np.random.default_rng(0))
  weights = experiment.user_weights[users].astype(np.float32)
  return [executors.Cohort(0, users, weights, batches),
          executors.Cohort.empty(1)]
