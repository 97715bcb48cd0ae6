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
"""A dataset is one file in one registry (issue 61): the toy dataset below,
declared and registered from this file alone, loads through each system's
loader as its binary calls it, trains in the FedHDP and UDP-Alg drivers and
in Robust-HDP's (through its binary), runs in HDP-Bench by name, and is a
value of a binary's --dataset; the registry and the loaders refuse what they
cannot take in one line."""

import dataclasses
import json
from typing import Optional

import numpy as np
import pytest

from tests import binaries
from tff_hdp import datasets
from tff_hdp.data import federated_data
from tff_hdp.datasets import dataset
from tff_hdp.datasets import dataset_registry

NAME = 'toy_random_8x8'


def _pooled(data_dir: Optional[str]) -> tuple[np.ndarray, np.ndarray]:
  """200 random 8 x 8 images in [0, 1], 20 of each of 10 labels."""
  del data_dir
  rng = np.random.default_rng(0)
  return (rng.uniform(size=(200, 8, 8)).astype(np.float32),
          np.arange(200, dtype=np.int32) % 10)


def _one_label_per_client(*, data_dir: Optional[str],
                          num_clients: Optional[int],
                          seed: int) -> federated_data.FederatedData:
  x, y = _pooled(data_dir)
  return federated_data.split_one_label_per_client(
      (x[:150], y[:150]), (x[150:], y[150:]), num_clients or 10, seed,
      name=NAME)


TOY = dataset.Dataset(
    name=NAME, label='200 random 8x8 images, 10 labels (a test\'s)',
    file='none (random)', fedhdp=_one_label_per_client, robust_hdp=_pooled,
    udp=dataset.users_by_classes(_pooled, NAME))


def register_toy() -> None:
  """Registers the toy dataset (for the binary's process too)."""
  datasets.register(TOY)


@pytest.fixture
def toy():
  register_toy()
  yield NAME
  datasets.unregister(NAME)


def test_it_is_listed_after_the_packages_for_every_system(toy):
  for system in dataset.SYSTEMS:
    names = datasets.names(system)
    assert names[0] == 'mnist5k' and names[-1] == toy
  assert datasets.names()[:9] == (
      'mnist5k', 'digits', 'mnist', 'skewed_mnist', 'fashion_mnist',
      'cifar10', 'fmnist', 'femnist', 'celeba')


def test_fedhdp_driver_trains_on_it(toy):
  from tff_hdp.fedhdp import config  # pylint: disable=g-import-not-at-top
  from tff_hdp.fedhdp import training  # pylint: disable=g-import-not-at-top
  # The call of run_fedhdp.py's load_data (fedhdp_flags), flags' defaults.
  data = datasets.load_fedhdp_data(toy, data_dir=None, num_clients=None,
                                   seed=0, draw='disjoint',
                                   examples_per_client=None)
  assert (data.name, data.num_clients, data.input_shape) == (toy, 10, (8, 8))
  run = config.FedHdpConfig(
      algorithm='fedhdp', model='fc', rounds=2, clients_per_round=4,
      sampling_rate=0.4, local_epochs=1, batch_size=5, learning_rate=0.1,
      noise_multiplier=1.0, clipped_count_stddev=1.0, optout_fraction=0.2,
      eval_every=1, seed=1, mechanism_seed=1, backend='direct', ditto=False)
  result = training.train(run, data)
  assert result['dataset'] == toy and len(result['history']) == 2
  assert 0.0 <= result['metrics']['acc_g'] <= 100.0


def test_robust_hdp_loader_splits_it(toy):
  # The call of run_robust_hdp.py's load_data (robust_hdp_flags). Robust-HDP's
  # driver trains on it in test_a_binary_takes_it_as_dataset's run.
  data = datasets.load_robust_hdp_data(
      toy, num_clients=4, data_dir=None, examples_per_client=None,
      shards_per_client=2, seed=0)
  # 200 images for 4 clients: 50 each (40 train / 10 test), 2 shards each.
  assert [len(y) for _, y in data.train] == [40] * 4


def test_udp_driver_trains_on_it(toy):
  from tff_hdp.udp import config  # pylint: disable=g-import-not-at-top
  from tff_hdp.udp import training  # pylint: disable=g-import-not-at-top
  data = datasets.load_udp_data(toy, num_users=6, data_dir=None, seed=0)
  assert data.num_clients == 6
  run = config.UdpConfig(
      target='fc', rounds=2, sampling_rate=0.5, clip=0.1,
      noise_multiplier=1.0, sample_cap=20, local_steps=2, batch_size=8,
      local_learning_rate=0.05, hyper_learning_rate=0.1,
      embedding_learning_rate=0.1, eval_every=1, seed=1, mechanism_seed=1)
  result = training.train(run, data)
  assert result['dataset'] == toy


def test_hdp_bench_runs_a_population_of_it_by_name(toy):
  from tff_hdp import bench  # pylint: disable=g-import-not-at-top
  from tff_hdp.bench import benchmark  # pylint: disable=g-import-not-at-top
  from tff_hdp.bench import population  # pylint: disable=g-import-not-at-top
  tiny = population.Population(
      name='toy', split='shards', dataset=toy, num_clients=4, model='fc',
      rounds=2, sampling_rate=1.0, local_epochs=1, learning_rate=0.1,
      batch_size=8)
  data = tiny.load()
  assert data.name == toy and data.num_clients == 4
  setting = tiny.setting(data, delta=1e-4, accountant='rdp')
  preferences = bench.Preferences('equal', (2.0,) * 4, (8,) * 4)
  (result,) = benchmark.run(setting, [preferences], bench.get(['dpfedavg']),
                            seeds=[0], mechanism_seed=0)
  assert result.population == 'toy' and 0 <= result.accuracy <= 100
  one_label = dataclasses.replace(tiny, split='one_label', num_clients=10)
  assert one_label.load().client_labels.tolist() == list(range(10))


def test_a_binary_takes_it_as_dataset(tmp_path):
  """run_robust_hdp.py in a process that registered the toy dataset first:
  its --dataset takes the registry's names, and Robust-HDP's driver trains
  on it (DP-FedAvg, two rounds)."""
  script = binaries.script_path('run_robust_hdp.py')
  argv = [script, f'--dataset={NAME}', '--num_clients=4',
          '--shards_per_client=2', '--model=fc', '--rounds=2',
          '--eval_every=1', '--algorithm=dpfedavg', '--epsilons=2,2,2,2',
          '--batch_sizes=8,8,8,8', '--backend=direct', '--mechanism_seed=1',
          '--noprogress', f'--output_dir={tmp_path}']
  code = ('import runpy, sys\n'
          'from tests import test_dataset_registry\n'
          'test_dataset_registry.register_toy()\n'
          f'sys.argv = {argv!r}\n'
          f'runpy.run_path({script!r}, run_name="__main__")\n')
  result = binaries.run_python(['-c', code])
  assert result.returncode == 0, result.stderr[-3000:]
  (run,) = json.loads((tmp_path / 'results.json').read_text())['runs']
  assert run['dataset'] == NAME and len(run['history']) == 2


def test_the_loaders_refuse_a_name_they_cannot_load_in_one_line(toy):
  only_shards = dataclasses.replace(TOY, name='toy_shards_only', fedhdp=None,
                                    udp=None)
  datasets.register(only_shards)
  try:
    with pytest.raises(ValueError, match=r"^unknown dataset "
                       r"'toy_shards_only'; allowed: mnist5k, digits, mnist, "
                       rf'skewed_mnist, fmnist, femnist, {toy}$'):
      datasets.load_fedhdp_data('toy_shards_only')
    assert datasets.load_robust_hdp_data('toy_shards_only',
                                         num_clients=2).num_clients == 2
  finally:
    datasets.unregister('toy_shards_only')
  with pytest.raises(ValueError, match=r"^unknown dataset 'toy_shards_only'; "
                     r'allowed: mnist5k, digits, cifar10, femnist, celeba, '):
    datasets.load_udp_data('toy_shards_only', num_users=2)
  with pytest.raises(ValueError, match=r'^draw=.independent. is for mnist and '
                     rf'skewed_mnist only; {toy} takes the default, disjoint$'):
    datasets.load_fedhdp_data(toy, draw='independent')


def test_the_registry_refuses_in_one_line(toy):
  with pytest.raises(TypeError, match=r'^register takes a tff_hdp\.datasets\.'
                     r'dataset\.Dataset, got str$'):
    dataset_registry.register(toy)
  with pytest.raises(ValueError, match=rf"^a dataset named '{toy}' is "
                     'already registered'):
    datasets.register(dataclasses.replace(TOY, label='another'))
  datasets.register(TOY)  # The same declaration again: no change.
  with pytest.raises(TypeError, match=r'^Dataset\.label must be a non-empty '):
    dataset.Dataset(name='x', label='', file='none')
  with pytest.raises(ValueError, match=r'^unknown system .fedavg.; allowed: '
                     'fedhdp, robust_hdp, udp$'):
    datasets.names('fedavg')
