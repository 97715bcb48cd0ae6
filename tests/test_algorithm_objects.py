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
"""Algorithms as objects, and TFF's datasets into `next` (issues 61, 62).

A FedHDP algorithm and a UDP-Alg variant defined in this file, each one
class and nothing else in the package, run through the Python API (as
objects) and, registered, through the driver the binaries run; every
system's `next` takes the batched (x, y) datasets of TFF's tutorials keyed
by client index, and runs the same round as with its own elements.
"""

import dataclasses
import math

import numpy as np
import pytest
import tensorflow as tf

import tff_hdp
from tff_hdp import bench
from tff_hdp import datasets
from tff_hdp.bench import benchmark
from tff_hdp.bench import registry as bench_registry
from tff_hdp.fedhdp import algorithm as fedhdp_algorithm
from tff_hdp.fedhdp import algorithm_registry as fedhdp_registry
from tff_hdp.fedhdp import training as fedhdp_training
from tff_hdp.privacy.preferences import Preferences
from tff_hdp.udp import algorithm as udp_algorithm
from tff_hdp.udp import algorithm_registry as udp_registry
from tff_hdp.udp import training as udp_training
from tests import user_code

PACKAGE = user_code.PACKAGE
SIZES = (12, 9, 16, 10, 14, 11)


@dataclasses.dataclass(frozen=True)
class InverseVariance(fedhdp_algorithm.Algorithm):
  """FedHDP with r_i = scale (z_min / z_i)^2: each level weighed by the
  inverse of its noise variance, relative to the least noisy level."""
  name = 'inverse_variance_of_this_test'
  label = 'Inverse variance'
  role = 'ours'
  scale: float = 1.0

  def combine(self, private, non_private):
    z_min = min(g.noise_multiplier for g in private)
    return tuple(dataclasses.replace(
        g, ratio=self.scale * (z_min / g.noise_multiplier) ** 2)
                 for g in private) + (non_private,)


@dataclasses.dataclass(frozen=True)
class ClippedUnnoised(udp_algorithm.Algorithm):
  """Algorithm 1's clip and weights without its noise (clip_only's twin)."""
  name = 'clipped_unnoised_of_this_test'
  label = 'Clipped, unnoised'
  role = 'ours'
  clips = True


@pytest.fixture
def registered():
  fedhdp_registry.register(InverseVariance())
  yield
  fedhdp_registry.unregister(InverseVariance.name)
  bench_registry.unregister(InverseVariance.name)
  udp_registry.unregister(ClippedUnnoised.name)


def _fedhdp_config(**fields):
  return tff_hdp.fedhdp.FedHdpConfig(**{
      **dict(noise_multiplier=(2.0, 1.0), sampling_rate=0.5,
             clipped_count_stddev=2.0, local_epochs=1, batch_size=4, seed=1,
             mechanism_seed=1, ditto=False), **fields})


def test_a_fedhdp_algorithm_of_this_file_runs_as_an_object(tff_runtime):
  del tff_runtime
  process = tff_hdp.fedhdp.build_fedhdp_process(
      PACKAGE, Preferences(levels=(0, 1, None, 0, 1, None)),
      algorithm=InverseVariance(scale=0.5), config=_fedhdp_config())
  assert process.config.algorithm == InverseVariance.name
  z_1, z_2 = (g.noise_multiplier for g in process.groups[:2])
  assert [g.ratio for g in process.groups] == [0.5 * (z_2 / z_1) ** 2, 0.5,
                                               1.0]
  clients = tff_hdp.fedhdp.build_data_source(
      process, user_code.client_data(SIZES, 'c'),
      mechanism_seed=1).iterator().select()
  state = process.next(process.initialize(), clients).state
  assert set(process.epsilon(state)) == {'private_1', 'private_2'}


def test_a_registered_fedhdp_algorithm_runs_in_the_driver(registered):
  del registered
  config = tff_hdp.fedhdp.FedHdpConfig(
      algorithm=InverseVariance.name, noise_multiplier=(2.0, 1.0),
      level_fractions=(0.3,), rounds=2, clients_per_round=3,
      sampling_rate=0.5, local_epochs=1, batch_size=4, optout_fraction=0.2,
      clipped_count_stddev=2.0, eval_every=1, backend='direct',
      mechanism_seed=0, ditto=False)
  record = fedhdp_training.train(config, user_code.client_data(
      (12, 9, 16, 10, 14, 11, 13, 8, 15, 10), 'c'))
  assert record['config']['algorithm'] == InverseVariance.name
  assert record['history'][-1]['accuracy'] > 0
  assert set(record['epsilon']) == {'private_1', 'private_2'}


def test_a_registered_fedhdp_algorithm_is_a_method_of_the_bench(registered):
  del registered
  (method,) = bench.get([InverseVariance.name])
  assert method.guarantee == bench.CLIENT_LEVEL
  data = datasets.load_fedhdp_data('digits', num_clients=20)
  setting = bench.Setting(data=data, rounds=2, model='fc',
                          sampling_rate=0.5)
  preferences = bench.Preferences(
      'levels', (1.0, 4.0, bench.OPT_OUT, 2.0) * 5)
  (result,) = benchmark.run(setting, [preferences], [method], seeds=[0],
                            mechanism_seed=0)
  assert result.method == InverseVariance.name
  assert 0 <= result.accuracy <= 100
  # Each private client spends at most what it asked (its level's
  # strictest epsilon), the opt-outs nothing.
  assert all(s <= a * (1 + 1e-9) for s, a in zip(result.spent, result.asked)
             if math.isfinite(a))


def test_a_udp_variant_of_this_file_runs_as_an_object(tff_runtime, registered):
  del tff_runtime, registered
  config = tff_hdp.udp.UdpConfig(sampling_rate=0.5, local_steps=2,
                                 batch_size=4, hidden=8, hidden_layers=1,
                                 mechanism_seed=1)
  process = tff_hdp.udp.build_udp_process(
      PACKAGE, Preferences(num_examples=SIZES), algorithm=ClippedUnnoised(),
      config=config)
  assert process.config.algorithm == ClippedUnnoised.name
  assert not process.config.private and process.config.clips
  source = tff_hdp.udp.build_data_source(
      process, user_code.client_data(SIZES, 'c'), mechanism_seed=1)
  output = process.next(process.initialize(), source.iterator().select())
  assert process.epsilon(output.state) == {'users': float('inf')}


def test_a_registered_udp_variant_runs_in_the_driver(registered):
  del registered
  udp_registry.register(ClippedUnnoised())
  run = tff_hdp.udp.UdpConfig(
      algorithm=ClippedUnnoised.name, target='fc', rounds=2,
      sampling_rate=0.5, clip=0.1, noise_multiplier=1.0, local_steps=2,
      batch_size=8, eval_every=2, mechanism_seed=1)
  record = udp_training.train(
      run, datasets.load_udp_data('digits', num_users=8, seed=0))
  assert record['config']['algorithm'] == ClippedUnnoised.name
  assert 0 <= record['metrics']['accuracy_mean'] <= 100


def _batched(sizes, batch=5, seed=0):
  """{client index: its examples as TFF's tutorials batch them}."""
  rng = np.random.default_rng(seed)
  out = {}
  for i, n in enumerate(sizes):
    x = rng.normal(size=(n,) + user_code.SHAPE).astype(np.float32)
    y = rng.integers(0, 10, n).astype(np.int32)
    out[i] = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)
  return out


def _unbatched(dataset):
  x, y = zip(*dataset.unbatch().as_numpy_iterator())
  return np.stack(x), np.array(y)


def test_next_takes_tff_tutorial_datasets_fedhdp(tff_runtime):
  del tff_runtime
  process = tff_hdp.fedhdp.build_fedhdp_process(
      PACKAGE, Preferences(levels=(0, 1, None, 0, 1, None)),
      config=_fedhdp_config())
  datasets = _batched(SIZES)
  cohort = {i: datasets[i] for i in (0, 2, 4)}
  ours = [tff_hdp.fedhdp.client_element(
      *_unbatched(cohort[i]), group=process.client_groups[i], client_id=i,
      batch_size=4) for i in cohort]
  state = process.initialize()
  a = process.next(state, cohort)
  b = process.next(state, ours)
  for x, y in zip(process.get_model_weights(a.state).trainable,
                  process.get_model_weights(b.state).trainable):
    np.testing.assert_array_equal(x, y)
  with pytest.raises(ValueError, match=r'next takes \{client index: '
                     r'dataset\}, each index an integer in \[0, 6\)'):
    process.next(state, {'c0': datasets[0]})


def test_next_takes_tff_tutorial_datasets_robust_hdp(tff_runtime):
  del tff_runtime
  process = tff_hdp.robust_hdp.build_robust_hdp_process(
      PACKAGE, Preferences(epsilons=(2.0, 4.0, 8.0, 2.0, 4.0, 8.0),
                           batch_sizes=(4,) * 6, num_examples=SIZES),
      rule=tff_hdp.robust_hdp.rules.DpFedAvg(),
      config=tff_hdp.robust_hdp.RobustHdpConfig(rounds=2, mechanism_seed=1))
  datasets = _batched(SIZES)
  ours = [tff_hdp.robust_hdp.client_element(
      *_unbatched(datasets[i]), index=i, batch_size=4,
      noise_multiplier=process.clients[i].noise_multiplier) for i in datasets]
  state = process.initialize()
  a = process.next(state, datasets)
  b = process.next(state, ours)
  for x, y in zip(process.get_model_weights(a.state).trainable,
                  process.get_model_weights(b.state).trainable):
    np.testing.assert_array_equal(x, y)


def test_next_takes_tff_tutorial_datasets_udp(tff_runtime):
  del tff_runtime
  config = tff_hdp.udp.UdpConfig(sampling_rate=0.5, local_steps=2,
                                 batch_size=4, hidden=8, hidden_layers=1,
                                 noise_multiplier=1.0, mechanism_seed=1)
  process = tff_hdp.udp.build_udp_process(
      PACKAGE, Preferences(num_examples=SIZES), config=config)
  datasets = _batched(SIZES)
  state = process.initialize()
  output = process.next(state, {i: datasets[i] for i in (1, 3)})
  assert process.participation(output.state) == {'users': 1}
  assert not np.array_equal(output.state['phi'][0], state['phi'][0])
  with pytest.raises(ValueError, match='user 1 has 10 examples, the '
                     'process was built for num_examples 9'):
    process.next(state, {1: _batched((10,))[0]})
  # Under the published mechanism seed the batches are drawn from it too: a
  # second process of the same config reproduces the round exactly.
  again = tff_hdp.udp.build_udp_process(
      PACKAGE, Preferences(num_examples=SIZES), config=config)
  replay = again.next(again.initialize(), {i: datasets[i] for i in (1, 3)})
  for x, y in zip(output.state['phi'], replay.state['phi']):
    np.testing.assert_array_equal(x, y)
