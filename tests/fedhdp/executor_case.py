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
"""FedHDP's tiny round on each backend, for tests/test_round_executors.py.

Six clients of 3 to 11 random 8 x 8 examples, a small FC model, FedHDP
(r = 0.5) with a noised private group and a non-private one, adaptive
clipping and Ditto on (so `RoundOutput.clients`, the trained personal
models, are compared too): a cohort of four clients of both groups, with
personal models of their own and a partial last batch, then the empty one.
"""

import collections

import numpy as np

from tests import backends
from tff_hdp import models
from tff_hdp.fedhdp import algorithms
from tff_hdp.fedhdp import executors
from tff_hdp.fedhdp import hdp_factory
from tff_hdp.fedhdp import privacy_groups
from tff_hdp.fedhdp import tff_backend

# The backends sum the clipped updates in other orders (stacked, per
# client, per worker) and TFF's graph optimiser may fuse the clients'
# float32 steps differently.
TOLERANCE = 1e-5

SIZES = (3, 11, 6, 9, 5, 8)
SPEC = models.fc_model((8, 8), num_classes=10, hidden=12)


def _factory_and_settings():
  groups = privacy_groups.build_groups(
      algorithms.FedHdp(ratio=0.5), noise_multipliers=[0.8], lambda_p=0.2,
      lambda_np=0.1)
  factory = hdp_factory.HeterogeneousDPFactory(
      groups, initial_clip=0.3, clipped_count_stddev=0.5, mechanism_seed=5)
  settings = tff_backend.ClientSettings(
      ditto_lambdas=tuple(g.ditto_lambda for g in groups), local_epochs=2,
      batch_size=4, learning_rate=0.2, personal_learning_rate=0.15,
      ditto=True, seed=3)
  return factory, settings


def executor(backend, request):
  """FedHDP's round on `backend` (one of `round_executor.BACKENDS`)."""
  workers = backends.executor_workers(backend, request)
  factory, settings = _factory_and_settings()
  return executors.build_executor(backend, SPEC, SPEC.init(1), factory,
                                  settings=settings, workers=workers)


def cohorts():
  """Clients 4, 1, 2 and 5 (groups private, non-private, private,
  non-private), each with its own Ditto model; then nobody."""
  rng = np.random.default_rng(0)
  data = [(rng.normal(size=(n, 8, 8)).astype(np.float32),
           rng.integers(0, 10, n).astype(np.int32)) for n in SIZES]
  theta = SPEC.init(1)
  which = (4, 1, 2, 5)
  info = [collections.OrderedDict(group=np.int32(c % 2), client_id=np.int32(c))
          for c in which]
  personal = [[np.float32(1 + 0.1 * c) * w for w in theta] for c in which]
  return [executors.Cohort([data[c] for c in which], info, personal),
          executors.Cohort([], [], [])]
