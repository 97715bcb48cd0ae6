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
"""Rounds over two TFF workers on 127.0.0.1 against the single-machine run."""

import collections
import dataclasses
import math

import numpy as np
import pytest

from tff_hdp import datasets
from tff_hdp import distributed as runtime_lib
from tff_hdp.fedhdp import algorithms
from tff_hdp.fedhdp import distributed
from tff_hdp.fedhdp import executors
from tff_hdp.fedhdp import hdp_factory
from tff_hdp import models
from tff_hdp import templates
from tff_hdp.fedhdp import privacy_groups as pg
from tff_hdp.fedhdp import tff_backend
from tff_hdp.privacy import mechanism_key

NOISE_MULTIPLIER = 0.8
INITIAL_CLIP = 0.5
KEY = mechanism_key.new_key(3)  # One machine's and the workers' run.


@pytest.fixture(scope='module')
def context(two_workers):
  return runtime_lib.create_mergeable_context(
      runtime_lib.local_addresses(two_workers))


@pytest.fixture(scope='module')
def data():
  return datasets.load_fedhdp_data('digits', num_clients=20, seed=0)


@pytest.fixture(scope='module')
def setup(data):
  """FedHDP with a noised private group (0) and a non-private group (1)."""
  spec = models.build_model('fc', data.input_shape, data.num_classes)
  groups = pg.build_groups(algorithms.FedHdp(ratio=0.5),
                           noise_multipliers=[NOISE_MULTIPLIER], lambda_p=0.1,
                           lambda_np=0.3)
  factory = hdp_factory.HeterogeneousDPFactory(
      groups, initial_clip=INITIAL_CLIP, clipped_count_stddev=1.0,
      mechanism_seed=3)
  settings = tff_backend.ClientSettings(
      ditto_lambdas=(0.1, 0.3), local_epochs=1, batch_size=10,
      learning_rate=0.2, personal_learning_rate=0.2, seed=5)
  return spec, spec.init(0), factory, settings


@pytest.fixture(scope='module')
def backends(setup, context):
  """(single-machine, two-worker) backends of the same run."""
  local = tff_backend.TffRound(*setup)
  remote = distributed.DistributedRound(*setup, workers=(), context=context)
  return local, remote


def _info(clients, groups):
  return [
      collections.OrderedDict(group=np.int32(g), client_id=np.int32(c))
      for c, g in zip(clients, groups)
  ]


def _assert_states_close(a, b, atol):
  for x, y in zip(a['global_weights'], b['global_weights']):
    np.testing.assert_allclose(x, y, atol=atol, rtol=0)
  assert int(a['round_num']) == int(b['round_num'])
  np.testing.assert_allclose(a['aggregator']['clip_norm'],
                             b['aggregator']['clip_norm'], rtol=1e-5)
  np.testing.assert_array_equal(a['aggregator']['noise_key'],
                                b['aggregator']['noise_key'])


def test_rounds_match_single_machine(tff_runtime, backends, data):
  del tff_runtime  # The single-machine backend runs on it.
  local, remote = backends
  local_state, remote_state = local.initialize(KEY), remote.initialize(KEY)
  _assert_states_close(local_state, remote_state, atol=0)
  rng = np.random.default_rng(1)
  personal = {}
  # 7 clients cut over both workers; 1 client uses a single worker (no
  # empty subround).
  for size in (7, 1):
    cohort = rng.choice(data.num_clients, size, replace=False)
    theta = templates.global_weights(local_state)
    client_data = [data.train[c] for c in cohort]
    weights = [personal.get(c, theta) for c in cohort]
    clients = executors.Cohort(client_data,
                               _info(cohort, rng.integers(0, 2, size)),
                               weights)
    local_state, local_m, local_personal = local.next(local_state, clients)
    remote_state, remote_m, remote_personal = remote.next(remote_state,
                                                          clients)
    _assert_states_close(local_state, remote_state, atol=1e-5)
    assert remote_m == pytest.approx(local_m, rel=1e-5)
    assert len(remote_personal) == size
    for a, b in zip(local_personal, remote_personal):  # Same client order.
      for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, atol=1e-5, rtol=0)
    personal.update(zip(cohort, local_personal))
  # The run moved: the last round's personal model is not theta.
  assert not np.allclose(remote_personal[0][0], theta[0])


def test_noise_is_added_once_after_the_merge(tff_runtime, backends, data):
  """All-zero updates: the round's change is the private group's noise alone.

  With N private clients split over two workers, Delta^t = N(0, (z S)^2 I)/N
  drawn once. Noise per worker would give stddev sqrt(2) z S / N.
  """
  del tff_runtime
  local, remote = backends
  state = local.initialize(KEY)
  n = 6
  empty = (np.zeros((0,) + data.input_shape, np.float32),
           np.zeros((0,), np.int32))
  theta = templates.global_weights(state)
  cohort = executors.Cohort([empty] * n, _info(range(n), [0] * n),
                            [theta] * n)
  local_state = local.next(state, cohort).state
  remote_state, _, remote_personal = remote.next(state, cohort)
  delta = [r - t for r, t in zip(remote_state['global_weights'], theta)]
  local_delta = [r - t for r, t in zip(local_state['global_weights'], theta)]
  for d, e in zip(delta, local_delta):  # The same draw, bit for bit.
    np.testing.assert_array_equal(d, e)
  flat = np.concatenate([d.ravel() for d in delta]) * n
  expected = NOISE_MULTIPLIER * INITIAL_CLIP
  standard_error = expected / math.sqrt(2 * flat.size)
  assert abs(np.std(flat) - expected) < 5 * standard_error
  assert abs(np.mean(flat)) < 5 * expected / math.sqrt(flat.size)
  # No training happened: personal models are theta.
  for p in remote_personal:
    for x, t in zip(p, theta):
      np.testing.assert_array_equal(x, t)


def test_backend_needs_workers_or_context(setup, context):
  with pytest.raises(ValueError, match='either workers'):
    distributed.DistributedRound(*setup, workers=())
  with pytest.raises(ValueError, match='either workers'):
    distributed.DistributedRound(*setup, workers=['127.0.0.1:1'],
                                 context=context)
  spec, weights, factory, settings = setup
  with pytest.raises(ValueError, match='learning_rate must be > 0'):
    distributed.DistributedRound(
        spec, weights, factory,
        dataclasses.replace(settings, learning_rate=0.0), workers=(),
        context=context)
