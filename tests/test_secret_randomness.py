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
"""The randomness every epsilon rests on is secret, in all three binaries.

A run's noise, cohorts and DP-SGD batches come from a key the operating
system draws (`tff_hdp.privacy.mechanism_key`), kept in the checkpoints only,
which a finished command deletes (no byte of its output folder holds the key)
unless `--keep_checkpoints`; `--mechanism_seed` makes them reproducible, and
then the run says its epsilon is not a guarantee. The attack below is why the label matters: from
a reproducible run's published record and its released models, the noise is
regenerated and subtracted, leaving the exact clipped mean.
"""

import dataclasses
import json
import os
import stat

import numpy as np
import pytest
import tensorflow as tf

from tests import binaries
from tff_hdp import datasets
from tff_hdp import templates
from tff_hdp.fedhdp import config as fedhdp_config
from tff_hdp.fedhdp import training as fedhdp_training
from tff_hdp.privacy import mechanism_key

# Tiny runs of each binary: one algorithm, two rounds, offline data, the
# direct backend (the key is drawn, kept and deleted by the driver and the
# checkpoints, the same on every backend; tests/test_round_conformance.py
# runs each backend).
# Robust-HDP's is robust_hdp, whose history holds robust PCA's estimate of
# each client's noise (a continuous function of the draw): two keys give
# other estimates. (Under DPFedAvg a tiny model could collapse to one class
# under either draw, and two histories of accuracies and fixed weights
# then coincided.) Four clients of two privacy choices (two noise
# multipliers to calibrate) and RPCA bounded at 100 iterations: the
# estimates still differ between keys.
RUNS = {
    'run_fedhdp.py': ['--preset=digits', '--num_clients=40',
                      '--clients_per_round=20', '--noise_multiplier=1.0',
                      '--local_epochs=1', '--rounds=2', '--eval_every=2',
                      '--algorithm=fedhdp', '--r=0.1', '--backend=direct'],
    'run_robust_hdp.py': ['--dataset=digits', '--model=fc', '--rounds=2',
                          '--eval_every=2', '--backend=direct',
                          '--algorithm=robust_hdp',
                          '--rpca_max_iterations=100', '--num_clients=4',
                          '--epsilons=1.5,3,1.5,3',
                          '--batch_sizes=16,32,16,32'],
    'run_udp.py': ['--num_users=12', '--rounds=2', '--local_steps=2',
                   '--eval_every=2', '--algorithm=udp'],
}
# What a history entry may publish, per binary: no realised count of a
# round's clients (num_clients, <group>/count, users_sampled), nothing
# computed from the clients before the noise.
PUBLISHED = {
    'run_fedhdp.py': {'round', 'clip_norm', 'unclipped_fraction',
                      'private/weight', 'non_private/weight', 'loss',
                      'accuracy'},
    'run_robust_hdp.py': {'round', 'weights', 'sigma_hat2', 'noise_power',
                          'accuracy'},
    'run_udp.py': {'round', 'noise_stddev', 'loss', 'accuracy', 'epsilon'},
}


def _runs(script, *runs):
  """`script`'s tiny run once per (output_dir, extra flags, mechanism key or
  None) of `runs`, one after the other in one process
  (`binaries.run_in_one_process`): each run's output and record."""
  results = binaries.run_in_one_process(script, [
      (RUNS[script] + ['--noprogress', f'--output_dir={output_dir}', *extra],
       key) for output_dir, extra, key in runs])
  records = []
  for result, (output_dir, _, _) in zip(results, runs):
    assert result.returncode == 0, result.stderr[-3000:]
    with open(os.path.join(output_dir, 'results.json')) as f:
      (record,) = json.load(f)['runs']
    records.append((result, record))
  return records


def _key_forms(key: np.ndarray) -> list[bytes]:
  """The ways a key could be written: raw bytes, each word in decimal and
  hex, signed and unsigned."""
  forms = [key.tobytes()]
  for word in list(key) + list(key.view(np.uint64)):
    forms += [str(int(word)).encode(), format(int(word) & (2**64 - 1),
                                              'x').encode()]
  return forms


def files_holding(output_dir, key) -> list[str]:
  """The files under `output_dir` (relative) any of whose bytes hold `key`
  in one of its forms (`_key_forms`)."""
  found = []
  for root, _, files in os.walk(output_dir):
    for name in files:
      path = os.path.join(root, name)
      with open(path, 'rb') as f:
        content = f.read()
      if any(form in content for form in _key_forms(key)):
        found.append(os.path.relpath(path, output_dir))
  return found


def assert_key_only_in_checkpoints(output_dir, key) -> None:
  """`key` is in files of `output_dir` under checkpoints/ and in no other,
  and those are the owner's only (0600 in 0700 folders)."""
  found = files_holding(output_dir, key)
  assert found and all(p.startswith('checkpoints' + os.sep) for p in found), (
      found)
  for root, _, files in os.walk(os.path.join(output_dir, 'checkpoints')):
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700, root
    for name in files:
      mode = stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode)
      assert mode == 0o600, (name, oct(mode))


# A finished default run's key, set by the test (a run's key is otherwise
# secret: `binaries.run_in_one_process` with a key). Fixed, so the search is reproducible.
_KEY = np.random.SeedSequence(50).generate_state(2, np.uint64).view(np.int64)


def _tensorboard_tags(output_dir) -> set[str]:
  tags = set()
  for root, _, files in os.walk(os.path.join(output_dir, 'tensorboard')):
    for name in files:
      for event in tf.compat.v1.train.summary_iterator(
          os.path.join(root, name)):
        tags.update(v.tag for v in event.summary.value)
  return tags


def _published(record) -> dict:
  """What two runs of one configuration should share, if reproducible."""
  return {k: v for k, v in record.items() if k != 'wall_clock_seconds'}


@pytest.mark.parametrize('script', sorted(RUNS))
def test_secret_by_default_reproducible_only_with_the_flag(tmp_path, script):
  # Two processes: each starts with a run under --mechanism_seed=3 (c, d:
  # two fresh processes, compared bit for bit below), then runs a default
  # run (a under the test's key `_KEY`, b under a key the operating system
  # draws), which must not reuse the seeded run's key.
  seed = ['--mechanism_seed=3']
  (out_c, c), (_, a) = _runs(script, (tmp_path / 'c', seed, None),
                             (tmp_path / 'a', [], _KEY))
  (_, d), (_, b) = _runs(script, (tmp_path / 'd', seed, None),
                         (tmp_path / 'b', ['--keep_checkpoints'], None))
  # The same public flags, two secret keys: other noise (and cohorts).
  assert a['history'] != b['history']
  assert b['history'] != d['history']  # Not the process's previous key.
  if script == 'run_robust_hdp.py':  # The noise robust PCA finds.
    assert a['history'][-1]['sigma_hat2'] != b['history'][-1]['sigma_hat2']
  for record in (a, b):
    assert record['privacy']['is_bound'] is True
    assert record['privacy']['mechanism_randomness'].startswith('secret')
    assert record['config']['mechanism_seed'] is None
  # A finished default run leaves its key nowhere: no byte of any file of
  # its output folder holds it, and its checkpoints are gone.
  assert not (tmp_path / 'a' / 'checkpoints').exists()
  assert files_holding(tmp_path / 'a', _KEY) == []
  # Kept on request: the key is in the checkpoint only (where the search
  # finds it), readable by its owner only.
  checkpoints = tmp_path / 'b' / 'checkpoints'
  (name,) = os.listdir(checkpoints)
  assert_key_only_in_checkpoints(tmp_path / 'b',
                                 binaries.saved_key(checkpoints / name))
  # Nothing published counts clients.
  assert set().union(*a['history']) <= PUBLISHED[script]
  assert _tensorboard_tags(tmp_path / 'a') <= PUBLISHED[script]

  assert _published(c) == _published(d)  # Bit for bit.
  assert c['history'] != a['history']
  assert c['privacy']['is_bound'] is False
  assert 'mechanism_seed=3' in c['privacy']['not_bound_because']
  assert c['privacy']['mechanism_randomness'] == (
      'reproducible from the published mechanism_seed=3')
  assert 'note: --mechanism_seed=3' in out_c.stdout
  table = (tmp_path / 'c' / 'table.txt').read_text().splitlines()
  claim = table[-1]
  assert "NOT a guarantee for these outputs" in claim
  assert 'mechanism_seed=3' in claim
  assert 'NOT a guarantee' not in (tmp_path / 'a' / 'table.txt').read_text()


# The attack, on FedHDP's DP-FedAvg: one private group, one round.
ATTACKED = fedhdp_config.FedHdpConfig(
    algorithm='dp_fedavg', ditto=False, model='fc', rounds=1,
    clients_per_round=20, sampling_rate=0.5, local_epochs=1, batch_size=5,
    learning_rate=0.1, initial_clip=0.3, clip_learning_rate=0.0,
    noise_multiplier=2.0, clipped_count_stddev=5.0, optout_fraction=0.0,
    eval_every=1, seed=0, backend='direct')


def _released_round(config, data):
  """The run's record, theta^0 and theta^1 (released) and the round's true
  clipped mean of the private group (what the noise hides; a test may look,
  by wrapping the backend's client work)."""
  experiment = fedhdp_training.prepare(config, data)
  backend = experiment.executor
  count = experiment.setup.expected_counts[0]  # q N_private.
  means = []
  client_work = backend.client_work

  def recording_client_work(state, *args):
    work = client_work(state, *args)
    sums = backend.clipped_sums(state, work.deltas, work.groups)
    means.append([s / count for s in sums[0]])
    return work

  backend.client_work = recording_client_work
  run = fedhdp_training.run_rounds(experiment)
  record = fedhdp_training.results_record(experiment, run, 0.0)
  return (record, experiment.spec.init(config.seed),
          templates.global_weights(run.state), means[0])


def _regenerated_noise(record, shapes):
  """Round 1's noise on the group mean, as an adversary regenerates it from
  what a run publishes: the mechanism seed in its config, its z, S^0 and
  expected count (the noise draws of `group_aggregation.server_aggregate`,
  written out here: split the key, one draw per tensor)."""
  config = record['config']
  key = mechanism_key.new_key(config['mechanism_seed'])
  stddev = (record['setup']['value_noise_multipliers'][0] *
            config['initial_clip'])
  count = config['sampling_rate'] * 40  # q N: every client is private.
  group_key = tf.random.experimental.stateless_split(key, 3)[0]
  return [tf.random.stateless_normal(
      shape, seed=mechanism_key.fold_in(group_key, k), stddev=stddev).numpy()
          / count for k, shape in enumerate(shapes)]


@pytest.fixture(scope='module')
def digits():
  return datasets.load_fedhdp_data('digits', num_clients=40, seed=0)


def test_a_published_mechanism_seed_lets_anyone_remove_the_noise(digits):
  seeded = dataclasses.replace(ATTACKED, mechanism_seed=11)
  record, theta0, theta1, true_mean = _released_round(seeded, digits)
  assert record['privacy']['is_bound'] is False  # Hence this label.
  shapes = [w.shape for w in theta0]
  noise = _regenerated_noise(record, shapes)
  recovered = [t1 - t0 - n for t0, t1, n in zip(theta0, theta1, noise)]
  # The exact clipped mean, to float32 rounding: no privacy left.
  for r, m in zip(recovered, true_mean):
    np.testing.assert_allclose(r, m, atol=1e-6)

  # The same attack on a default run: its key was secret, so the adversary
  # can only guess (here, the old default, seed 0). The residual keeps the
  # whole noise: its stddev is the noise's (sqrt(2) of it: the guess adds
  # an independent draw), far above the clipped mean's.
  secret, theta0, theta1, true_mean = _released_round(ATTACKED, digits)
  assert secret['privacy']['is_bound'] is True
  guess = dict(secret, config=dict(secret['config'], mechanism_seed=0))
  noise = _regenerated_noise(guess, shapes)
  residual = np.concatenate([
      (t1 - t0 - n - m).ravel()
      for t0, t1, n, m in zip(theta0, theta1, noise, true_mean)])
  # sigma = z S^0 / (q N) per coordinate, z the value noise multiplier.
  sigma = secret['setup']['value_noise_multipliers'][0] * 0.3 / (0.5 * 40)
  # The sample stddev of p draws is within 5 / sqrt(2 p) of sigma (relative)
  # but with probability 6e-7: a sound tolerance for a fresh key.
  assert residual.std() == pytest.approx(
      np.sqrt(2) * sigma, rel=5 / np.sqrt(2 * residual.size))
