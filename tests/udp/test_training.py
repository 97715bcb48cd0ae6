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
"""The UDP-Alg driver, its data and its binary: epsilon against the
accountant, determinism, exact resume, weights and batches, the user split,
bad flags."""

import dataclasses
import json

import dp_accounting
import numpy as np
import pytest

from tests import binaries
from tff_hdp.data import federated_data
from tests.udp import conftest
from tff_hdp.udp import training


TINY = conftest.TINY


def test_split_by_classes_gives_two_labels_and_uneven_sizes():
  rng = np.random.default_rng(0)
  y = np.repeat(np.arange(10), 100)
  x = rng.normal(size=(1000, 3)).astype(np.float32)
  d = federated_data.split_by_classes(x, y, num_clients=20, seed=1,
                                      name='t')
  labels = [set(tr[1]) | set(te[1]) for tr, te in zip(d.train, d.test)]
  assert all(len(l) == 2 for l in labels)
  assert set().union(*labels) == set(range(10))
  sizes = [len(tr[1]) + len(te[1]) for tr, te in zip(d.train, d.test)]
  assert sum(sizes) == 1000  # Every example is used once.
  assert max(sizes) > 1.5 * min(sizes)
  assert all(len(te[1]) >= 1 for te in d.test)


def test_user_weights_and_local_batches(data):
  sizes = np.array([len(y) for _, y in data.train])
  np.testing.assert_allclose(training.user_weights(data, 20.0),
                             np.minimum(sizes / 20.0, 1.0))
  small = int(np.argmin(sizes))
  users = np.array([small, int(np.argmax(sizes))])
  x, y, indices, mask = training.local_batches(
      data, users, 3, int(sizes[small]) + 1, np.random.default_rng(0))
  assert x.shape[:2] == (2, sizes.max()) and indices.shape == (
      3, 2, sizes[small] + 1)
  # The small user uses all its examples each step, the last one masked.
  np.testing.assert_array_equal(mask[:, 0].sum(1), sizes[small])
  np.testing.assert_array_equal(mask[:, 1], 1.0)
  for k in range(3):  # The large user's batch: distinct examples.
    assert len(set(indices[k, 1])) == indices.shape[2]
  np.testing.assert_array_equal(y[1, :sizes.max()], data.train[users[1]][1])


def test_epsilon_is_the_accountants_and_runs_are_seeded(data):
  a = training.train(TINY, data)
  # An accountant built here from dp_accounting's own events.
  rdp = dp_accounting.rdp.RdpAccountant()
  rdp.compose(dp_accounting.PoissonSampledDpEvent(
      0.3, dp_accounting.GaussianDpEvent(1.0)), 3)
  assert a['epsilon'] == pytest.approx(rdp.get_epsilon(1e-5), rel=1e-6)
  w = np.minimum(np.array([len(y) for _, y in data.train]) / 20.0, 1.0)
  assert a['setup']['noise_stddev'] == pytest.approx(
      1.0 * w.max() * 0.1 / (0.3 * w.sum()), rel=1e-6)
  # Another public seed, other runs. (The same mechanism seed repeats a run
  # bit for bit, and without one two runs differ: the binary's
  # test_secret_by_default_reproducible_only_with_the_flag[run_udp.py] in
  # tests/test_secret_randomness.py.)
  c = training.train(dataclasses.replace(TINY, seed=2), data)
  assert c['history'] != a['history']
  assert a['privacy']['is_bound'] is False  # Reproducible: mechanism_seed.
  # Published: the released noise's stddev and evaluations, no count.
  assert set().union(*a['history']) == {'round', 'noise_stddev', 'loss',
                                        'accuracy', 'epsilon'}
  # The fixed denominator q W (McMahan et al. 2018), not the realised
  # cohort's weight: every round's noise has the same stddev, whichever
  # users (and how many) took part.
  assert a['setup']['denominator'] == pytest.approx(0.3 * w.sum(), rel=1e-6)
  sampled = [len(conftest.sampled_users(TINY, data.num_clients, t))
             for t in range(TINY.rounds)]
  for h, count in zip(a['history'], sampled):
    if count:
      assert h['noise_stddev'] == pytest.approx(
          a['setup']['noise_stddev'], rel=1e-6)
  assert sum(sampled) > 0
  assert 'accuracy' in a['history'][1] and 'accuracy' in a['history'][2]
  assert a['history'][1]['loss'] > 0
  assert len(a['metrics']['user_accuracy']) == 12


def test_clip_only_is_udp_alg_with_no_noise(data):
  # The same users, clip and weights as UDP-Alg, noise stddev 0: the same
  # round as UDP-Alg's mechanism with z = 0, and nothing accounted.
  clip_only = training.train(dataclasses.replace(TINY, algorithm='clip_only'),
                             data)
  no_noise = training.train(dataclasses.replace(TINY, noise_multiplier=0.0),
                            data)
  assert clip_only['metrics'] == no_noise['metrics']
  assert clip_only['epsilon'] is None
  noiseless = training.train(dataclasses.replace(TINY, algorithm='noiseless'),
                             data)
  assert noiseless['metrics'] != clip_only['metrics']  # Clipping binds.


def test_baselines_account_nothing(data):
  for algorithm in ('noiseless', 'pfedhn'):
    record = training.train(dataclasses.replace(TINY, algorithm=algorithm),
                            data)
    assert record['epsilon'] is None
    assert record['setup']['noise_stddev'] == 0.0


def test_config_validation_names_the_field():
  with pytest.raises(ValueError, match='sampling_rate must be in'):
    dataclasses.replace(TINY, sampling_rate=0.0).validate()
  with pytest.raises(ValueError, match='algorithm must be one of'):
    dataclasses.replace(TINY, algorithm='dpsgd').validate()
  with pytest.raises(ValueError, match='accountant must be one of rdp, pld'):
    dataclasses.replace(TINY, accountant='prv').validate()


# The binary's runs of the tests below, by name: their flags (each run also
# gets --noprogress and an --output_dir of its name).
BINARY_RUNS = {
    'every_algorithm': ['--num_users=12', '--rounds=2', '--local_steps=2',
                        '--eval_every=1'],
    'sigma': ['--num_users=12', '--rounds=1', '--local_steps=1',
              '--algorithm=udp', '--clip=0.2', '--noise_stddev=0.05',
              '--sample_cap=20'],
    'udp_tff': ['--num_users=12', '--rounds=1', '--local_steps=2',
                '--algorithm=udp', '--backend=tff'],
}


@pytest.fixture(scope='module')
def binary_runs(tmp_path_factory):
  """{name: (result, output_dir)} of `BINARY_RUNS`, run one after the other
  in one process (`binaries.run_in_one_process`: one start-up of
  TensorFlow for all; each parses its own flags)."""
  root = tmp_path_factory.mktemp('run_udp')
  results = binaries.run_in_one_process('run_udp.py', [
      (args + ['--noprogress', f'--output_dir={root / name}'], None)
      for name, args in BINARY_RUNS.items()])
  return {name: (result, root / name)
          for name, result in zip(BINARY_RUNS, results)}


@pytest.mark.parametrize('args,message', [
    (['--algorithm=dp'], '--algorithm=dp: give all, or distinct names'),
    (['--clip=0'], '--clip must be > 0'),
    (['--sampling_rate=1.5'], '--sampling_rate must be in (0, 1]'),
    (['--noise_multiplier=1', '--target_epsilon=2'],
     'give one of --noise_multiplier, --target_epsilon, --noise_stddev'),
    (['--noise_stddev=-1'], '--noise_stddev must be >= 0'),
    (['--target_epsilon=-1'], '--target_epsilon must be > 0'),
    (['--dataset=cifar10', '--data_dir=/nonexistent'],
     '/nonexistent/cifar-10-python.tar.gz'),
    (['--dataset=celeba', '--data_dir=/nonexistent'],
     '/nonexistent/celeba.sqlite not found'),
    (['--num_users=1'], '--num_users must be >= 2'),
    (['--dataset=digits', '--target=lenet'],
     '--target=lenet needs images of at least 16 x 16'),
    (['--local_steps=0'], '--local_steps must be >= 1'),
])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, args,
                                                      message):
  binaries.assert_refused('run_udp.py', args, message, tmp_path / 'out')


def test_binary_runs_every_algorithm(binary_runs):
  result, out = binary_runs['every_algorithm']
  assert result.returncode == 0, result.stderr
  record = json.loads((out / 'results.json').read_text())
  assert [r['config']['algorithm'] for r in record['runs']] == [
      'udp', 'clip_only', 'noiseless', 'pfedhn']
  udp, clip_only = record['runs'][:2]
  assert udp['epsilon'] > 0
  # The clip-only run: clipped (every user here), not noised, not accounted.
  assert clip_only['epsilon'] is None
  assert clip_only['setup']['noise_stddev'] == 0.0
  assert all(h['noise_stddev'] == 0.0 for h in clip_only['history'])
  # pFedHN takes round(q N) = 2 one-user steps per round.
  assert record['runs'][3]['config']['rounds'] == 2 * round(0.2 * 12)
  table = (out / 'table.txt').read_text()
  assert 'udp' in table and 'clip_only' in table
  assert table.splitlines()[-1].startswith('UDP-Alg at epsilon <= 8')
  # The accuracy-against-epsilon curve: epsilon at every evaluation.
  assert [h['epsilon'] > 0 for h in udp['history']] == [True, True]


def test_noise_stddev_sets_z_from_the_weights(binary_runs):
  result, out = binary_runs['sigma']
  assert result.returncode == 0, result.stderr
  run = json.loads((out / 'results.json').read_text())['runs'][0]
  assert run['setup']['noise_stddev'] == pytest.approx(0.05, rel=1e-6)


def test_binary_on_tffs_runtime(binary_runs):
  result, out = binary_runs['udp_tff']
  assert result.returncode == 0, result.stderr
  record = json.loads((out / 'results.json').read_text())
  assert record['runs'][0]['config']['backend'] == 'tff'
