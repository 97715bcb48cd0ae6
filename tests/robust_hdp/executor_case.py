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
"""Robust-HDP's tiny round on each backend, for tests/test_round_executors.py.

Five clients of 6 x 6 examples, a small FC model, Robust-HDP's rule (RPCA
weights from the updates), z_i given rather than calibrated (the round does
not calibrate): a cohort of three clients, then the empty one.
"""

import numpy as np

from tests import backends
from tff_hdp import models
from tff_hdp.robust_hdp import config as config_lib
from tff_hdp.robust_hdp import executors
from tff_hdp.robust_hdp import privacy_preferences
from tff_hdp.robust_hdp import process

# The backends sum the server step's float64 RPCA in other orders, and the
# clients' float32 DP-SGD may be fused differently by TFF's graph optimiser.
TOLERANCE = 1e-6

SIZES = (10, 12, 14, 16, 18)
EPSILONS = (1.0, 2.0, 4.0, 8.0, 3.0)
BATCH_SIZES = (4, 4, 8, 8, 4)
NOISE_MULTIPLIERS = (2.0, 1.5, 1.2, 0.8, 1.3)
SPEC = models.fc_model((6, 6), 3, hidden=8)
CONFIG = config_lib.RobustHdpConfig(
    algorithm='robust_hdp', epsilons=EPSILONS, batch_sizes=BATCH_SIZES,
    model='fc', rounds=2, learning_rate=0.1, rpca_max_iterations=200)


def _data():
  rng = np.random.default_rng(0)
  return [(rng.random((n, 6, 6)).astype(np.float32),
           rng.integers(0, 3, n).astype(np.int32)) for n in SIZES]


def _info():
  return [dict(index=np.int32(i), batch_size=np.int32(b),
               noise_multiplier=np.float32(z))
          for i, (b, z) in enumerate(zip(BATCH_SIZES, NOISE_MULTIPLIERS))]


def executor(backend, request):
  """Robust-HDP's round on `backend` (one of `round_executor.BACKENDS`)."""
  workers = backends.executor_workers(backend, request)
  clients = [privacy_preferences.ClientPrivacy(e, b, n, 2 * -(-n // b), z)
             for e, b, n, z in zip(EPSILONS, BATCH_SIZES, SIZES,
                                   NOISE_MULTIPLIERS)]
  factory = process.build_aggregator(
      CONFIG, clients, process.true_variances(CONFIG, clients,
                                              SPEC.num_parameters))
  return executors.build_executor(
      backend, SPEC, SPEC.init(1), factory,
      settings=process.dp_sgd_settings(CONFIG), workers=workers)


def cohorts():
  """Clients 0, 2 and 4, then nobody."""
  data, info = _data(), _info()
  which = (0, 2, 4)
  return [executors.Cohort([data[i] for i in which],
                           [info[i] for i in which]),
          executors.Cohort([], [])]
