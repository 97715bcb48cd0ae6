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
"""Paper 003's data: Fashion-MNIST and CIFAR-10 loaders on tiny files in the
real formats, missing and damaged files, and the shards split."""

import gzip
import io
import os
import pickle
import struct
import tarfile

import numpy as np
import pytest

from tff_hdp import datasets
from tff_hdp.data import federated_data
from tff_hdp.datasets import cifar10
from tff_hdp.datasets import fashion_mnist


def _idx(array: np.ndarray) -> bytes:
  header = struct.pack('>HBB', 0, 0x08, array.ndim) + struct.pack(
      '>' + 'I' * array.ndim, *array.shape)
  return gzip.compress(header + array.astype(np.uint8).tobytes())


def _write_fashion(directory, n_train=30, n_test=10, seed=0):
  rng = np.random.default_rng(seed)
  arrays = {
      'x_train': rng.integers(0, 256, (n_train, 28, 28)),
      'y_train': np.arange(n_train) % 10,
      'x_test': rng.integers(0, 256, (n_test, 28, 28)),
      'y_test': np.arange(n_test) % 10,
  }
  directory.mkdir(parents=True, exist_ok=True)
  for key, name in fashion_mnist.FILES.items():
    (directory / name).write_bytes(_idx(arrays[key]))
  return arrays


def _batch(images, labels) -> bytes:
  data = images.transpose(0, 3, 1, 2).reshape(len(images), -1)
  return pickle.dumps({b'data': data.astype(np.uint8),
                       b'labels': [int(l) for l in labels],
                       b'batch_label': b'tiny'})


def _write_cifar(path, per_batch=4, seed=0, drop=None):
  rng = np.random.default_rng(seed)
  images = rng.integers(0, 256, (6 * per_batch, 32, 32, 3)).astype(np.uint8)
  labels = np.arange(6 * per_batch) % 10
  names = [f'data_batch_{i}' for i in range(1, 6)] + ['test_batch']
  with tarfile.open(path, 'w:gz') as archive:
    for k, name in enumerate(names):
      if name == drop:
        continue
      blob = _batch(images[k * per_batch:(k + 1) * per_batch],
                    labels[k * per_batch:(k + 1) * per_batch])
      info = tarfile.TarInfo(f'cifar-10-batches-py/{name}')
      info.size = len(blob)
      archive.addfile(info, io.BytesIO(blob))
  return images, labels


def test_fashion_mnist_reads_keras_files(tmp_path):
  arrays = _write_fashion(tmp_path)
  x_train, y_train, x_test, y_test = fashion_mnist.load_arrays(str(tmp_path))
  np.testing.assert_array_equal(x_train, arrays['x_train'])
  np.testing.assert_array_equal(y_test, arrays['y_test'])
  assert x_train.dtype == np.uint8 and x_test.shape == (10, 28, 28)
  assert y_train.shape == (30,)


@pytest.mark.parametrize('damage,message', [
    ('missing', 'not found'),
    ('truncated', 'unusable'),
    ('not_gzip', 'unusable'),
    ('wrong_type', 'unusable'),
])
def test_fashion_mnist_bad_files(tmp_path, damage, message):
  _write_fashion(tmp_path)
  path = tmp_path / fashion_mnist.FILES['x_train']
  if damage == 'missing':
    path.unlink()
  elif damage == 'truncated':
    path.write_bytes(path.read_bytes()[:40])
  elif damage == 'not_gzip':
    path.write_bytes(b'not a gzip file')
  else:
    path.write_bytes(gzip.compress(struct.pack('>HBB', 0, 0x0D, 3) + b'\0' *
                                   12))
  with pytest.raises(datasets.DataFileError, match=message) as error:
    fashion_mnist.load_arrays(str(tmp_path))
  assert str(path) in str(error.value)
  assert 'curl' in str(error.value) and '\n' not in str(error.value)


def test_cifar10_reads_the_python_archive(tmp_path):
  images, labels = _write_cifar(tmp_path / 'cifar-10-python.tar.gz')
  x_train, y_train, x_test, y_test = cifar10.load_arrays(str(tmp_path))
  np.testing.assert_array_equal(x_train, images[:20])
  np.testing.assert_array_equal(x_test, images[20:])
  np.testing.assert_array_equal(y_train, labels[:20])
  assert x_train.shape == (20, 32, 32, 3) and y_test.dtype == np.int32


def test_cifar10_accepts_keras_name(tmp_path):
  _write_cifar(tmp_path / 'cifar-10-batches-py.tar.gz')
  assert cifar10.load_arrays(str(tmp_path))[0].shape == (20, 32, 32, 3)


@pytest.mark.parametrize('damage,message', [
    ('missing', 'not found'),
    ('truncated', 'unusable'),
    ('no_test_batch', 'unusable'),
])
def test_cifar10_bad_archives(tmp_path, damage, message):
  path = tmp_path / 'cifar-10-python.tar.gz'
  if damage == 'no_test_batch':
    _write_cifar(path, drop='test_batch')
  elif damage == 'truncated':
    _write_cifar(path)
    path.write_bytes(path.read_bytes()[:200])
  with pytest.raises(datasets.DataFileError, match=message) as error:
    cifar10.load_arrays(str(tmp_path))
  assert 'cifar-10-python.tar.gz' in str(error.value)
  assert '\n' not in str(error.value)


def test_shards_split_sizes_and_labels():
  rng = np.random.default_rng(0)
  y = np.repeat(np.arange(10), 100)
  x = rng.random((1000, 3)).astype(np.float32)
  data = federated_data.split_by_shards(x, y, num_clients=10,
                                        examples_per_client=100,
                                        shards_per_client=2, seed=1,
                                        name='t')
  assert data.num_clients == 10
  seen = []
  for (xt, yt), (xs, ys) in zip(data.train, data.test):
    assert len(yt) == 80 and len(ys) == 20
    assert len(np.unique(np.concatenate([yt, ys]))) <= 3  # Two shards.
    seen.append(np.concatenate([xt, xs]))
  seen = np.concatenate(seen)
  assert len(np.unique(seen, axis=0)) == 1000  # No example given twice.
  assert len(data.server_test[1]) == 200


def test_shards_per_client_by_hand():
  # 40 examples, 8 of each of 5 labels (x is the example's index). 4 clients
  # x 10 examples in 5 shards each: 20 shards of 2 consecutive examples of
  # the label-sorted order, so each shard holds one label, each label 4
  # shards, and a client's count of every label is a multiple of 2.
  x = np.arange(40, dtype=np.float32)[:, None]
  y = np.arange(40) // 8
  data = federated_data.split_by_shards(x, y, num_clients=4,
                                        examples_per_client=10,
                                        shards_per_client=5, seed=3, name='t')
  seen = []
  for (xt, yt), (xs, ys) in zip(data.train, data.test):
    assert len(yt) == 8 and len(ys) == 2
    index = np.concatenate([xt, xs])[:, 0].astype(int)
    labels = np.concatenate([yt, ys])
    np.testing.assert_array_equal(labels, y[index])  # Labels kept with x.
    counts = np.bincount(labels, minlength=5)
    assert np.all(counts % 2 == 0) and counts.sum() == 10  # 5 whole shards.
    seen.extend(index)
  assert sorted(seen) == list(range(40))  # Disjoint, every example used.


def test_load_robust_hdp_data_shards_per_client():
  ten = datasets.load_robust_hdp_data('mnist5k', num_clients=20)
  two = datasets.load_robust_hdp_data('mnist5k', num_clients=20,
                                      shards_per_client=2)
  for data in (ten, two):
    assert [len(y) for _, y in data.train] == [200] * 20
    assert [len(y) for _, y in data.test] == [50] * 20
  labels = lambda d: [len(np.unique(np.concatenate([a, b]))) for (_, a), (
      _, b) in zip(d.train, d.test)]
  assert max(labels(two)) <= 3  # Two shards of 125: at most 3 labels.
  assert min(labels(ten)) >= 4  # Ten shards of 25 sorted images.
  with pytest.raises(ValueError, match='shards_per_client must be >= 1'):
    datasets.load_robust_hdp_data('mnist5k', num_clients=20,
                                  shards_per_client=0)


def test_shards_split_refuses_impossible_sizes():
  x, y = np.zeros((50, 2)), np.arange(50) % 5
  with pytest.raises(ValueError, match='need more than the 50'):
    federated_data.split_by_shards(x, y, num_clients=6, examples_per_client=10,
                                   name='t')
  with pytest.raises(ValueError, match='multiple of shards_per_client'):
    federated_data.split_by_shards(x, y, num_clients=2, examples_per_client=9,
                                   name='t')


def test_load_robust_hdp_data_fashion_and_digits(tmp_path):
  _write_fashion(tmp_path, n_train=36, n_test=4)
  data = datasets.load_robust_hdp_data('fashion_mnist', num_clients=4,
                                       data_dir=str(tmp_path))
  assert data.input_shape == (28, 28) and data.num_clients == 4
  assert len(data.train[0][1]) == 8 and data.train[0][0].max() <= 1.0
  digits = datasets.load_robust_hdp_data('digits', num_clients=20)
  # 1,797 // 20 = 89 images, rounded down to 10 shards of 8: 64 train.
  assert [len(y) for _, y in digits.train] == [64] * 20
  with pytest.raises(ValueError, match='unknown dataset'):
    datasets.load_robust_hdp_data('svhn', num_clients=2)


def test_cifar10_users_for_udp(tmp_path):
  # 48 tiny images of 10 labels; 4 users of 2 labels each.
  _write_cifar(tmp_path / 'cifar-10-python.tar.gz', per_batch=8)
  data = datasets.load_udp_data('cifar10', num_users=4,
                                data_dir=str(tmp_path), seed=0)
  assert data.num_clients == 4 and data.input_shape == (32, 32, 3)
  assert all(x.dtype == np.float32 and x.max() <= 1.0 for x, _ in data.train)
  assert all(len(set(y) | set(t[1])) <= 2
             for (_, y), t in zip(data.train, data.test))


def test_fashion_mnist_without_a_folder_reads_keras_then_debian(
    tmp_path, monkeypatch):
  keras = tmp_path / 'keras'
  monkeypatch.setattr(fashion_mnist, 'keras_dir', lambda: str(keras))
  assert fashion_mnist.default_dir() == fashion_mnist.DEBIAN_DIR
  arrays = _write_fashion(keras)
  assert fashion_mnist.default_dir() == str(keras)
  np.testing.assert_array_equal(fashion_mnist.load_arrays()[0],
                                arrays['x_train'])
  # Neither: the one line names Debian's package and Keras' files.
  monkeypatch.setattr(fashion_mnist, 'DEBIAN_DIR', str(tmp_path / 'none'))
  monkeypatch.setattr(fashion_mnist, 'keras_dir',
                      lambda: str(tmp_path / 'nothing'))
  with pytest.raises(datasets.DataFileError) as error:
    fashion_mnist.load_arrays()
  message = str(error.value)
  assert 'apt-get install dataset-fashion-mnist' in message
  assert 'curl' in message and '\n' not in message


def test_fashion_mnist_reads_debians_real_files(monkeypatch):
  """The real files (Xiao, Rasul and Vollgraf): 60,000 + 10,000 images,
  6,000 and 1,000 of each class, through the loader's default folder.

  Skipped only where Debian's package is absent and the run does not
  require it: .ci/run installs it and sets TFF_HDP_REQUIRE_FASHION_MNIST=1,
  so there it runs or fails."""
  if not os.path.isdir(fashion_mnist.DEBIAN_DIR) and not os.environ.get(
      'TFF_HDP_REQUIRE_FASHION_MNIST'):
    pytest.skip(f'{fashion_mnist.DEBIAN_DIR} is absent: sudo apt-get install '
                f'{fashion_mnist.DEBIAN_PACKAGE}')
  monkeypatch.setattr(fashion_mnist, 'keras_dir', lambda: '/nonexistent')
  x_train, y_train, x_test, y_test = fashion_mnist.load_arrays()
  assert x_train.shape == (60000, 28, 28) and x_test.shape == (10000, 28, 28)
  np.testing.assert_array_equal(np.bincount(y_train), [6000] * 10)
  np.testing.assert_array_equal(np.bincount(y_test), [1000] * 10)
  assert x_train.dtype == np.uint8 and 0 < x_train.mean() < 255
