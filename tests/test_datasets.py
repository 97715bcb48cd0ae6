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
"""The dataset loaders, on tiny files written in the real formats.

MNIST: an `np.savez` archive laid out as Keras' `mnist.npz`. EMNIST: an
`emnist_all.sqlite` written with TFF's own
`tff.simulation.datasets.save_to_sql_client_data` (one database per split,
merged into one file, as TFF's file holds the four splits), loaded through
`datasets.load_fedhdp_data`, hence through TFF's `emnist.load_data`, and
checked against TFF's own per-client datasets. Then damaged and missing files.
"""

import collections
import os
import shutil
import sqlite3
import urllib.request

import numpy as np
import pytest

from tests import tff_sql
from tff_hdp import datasets
from tff_hdp.datasets import emnist
from tff_hdp.datasets import mnist
from tff_hdp.fedhdp import config as config_lib

# ---------------------------------------------------------------- MNIST ----

_MNIST_TRAIN_COUNTS = [10 + d for d in range(10)]  # Unequal on purpose.
_MNIST_TEST_COUNTS = [3 + d % 3 for d in range(10)]


def _mnist_part(counts, offset, rng):
  """uint8 images whose first two pixels encode a unique index."""
  y = rng.permutation(np.repeat(np.arange(10), counts)).astype(np.uint8)
  x = rng.integers(0, 256, size=(len(y), 28, 28), dtype=np.uint8)
  x[:, 0, 0] = (np.arange(len(y)) + offset) % 256
  x[:, 0, 1] = (np.arange(len(y)) + offset) // 256
  x[0, 5, 5] = 255  # A saturated pixel, to check the scaling.
  return x, y


def _index_of(x_scaled):
  """Recovers the index encoded by `_mnist_part` from scaled images."""
  raw = np.rint(np.asarray(x_scaled) * 255).astype(np.int64)
  return raw[:, 0, 0] + 256 * raw[:, 0, 1]


@pytest.fixture(scope='module')
def mnist_dir(tmp_path_factory):
  rng = np.random.default_rng(1)
  x_train, y_train = _mnist_part(_MNIST_TRAIN_COUNTS, 0, rng)
  x_test, y_test = _mnist_part(_MNIST_TEST_COUNTS, 1000, rng)
  directory = tmp_path_factory.mktemp('keras')
  np.savez(directory / 'mnist.npz', x_train=x_train, y_train=y_train,
           x_test=x_test, y_test=y_test)
  return str(directory), (x_train, y_train, x_test, y_test)


def test_mnist_one_digit_per_client_equal_counts(mnist_dir):
  directory, (x_train, y_train, x_test, y_test) = mnist_dir
  data = datasets.load_fedhdp_data('mnist', data_dir=directory,
                                   num_clients=20, seed=3)
  assert (data.name, data.num_clients, data.num_classes,
          data.input_shape) == ('mnist', 20, 10, (28, 28))
  np.testing.assert_array_equal(data.client_labels, np.arange(20) % 10)
  per_client = min(_MNIST_TRAIN_COUNTS) // 2
  seen = []
  for k, (x, y) in enumerate(data.train):
    assert x.dtype == np.float32 and y.dtype == np.int32
    assert len(y) == per_client
    np.testing.assert_array_equal(y, np.full(per_client, k % 10))
    index = _index_of(x)
    np.testing.assert_array_equal(y_train[index], y)
    # Pixels are the file's uint8 values / 255.
    np.testing.assert_array_equal(x, x_train[index].astype(np.float32) / 255)
    seen.extend(index)
  assert len(set(seen)) == len(seen)  # No sample is given to two clients.


def test_mnist_independent_draws(mnist_dir):
  directory, (x_train, y_train, x_test, y_test) = mnist_dir
  disjoint = datasets.load_fedhdp_data('mnist', data_dir=directory,
                                       num_clients=20, seed=3)
  data = datasets.load_fedhdp_data('mnist', data_dir=directory,
                                   num_clients=20, seed=3, draw='independent')
  assert (disjoint.draw, data.draw) == ('disjoint', 'independent')
  np.testing.assert_array_equal(data.client_labels, disjoint.client_labels)
  per_client = min(_MNIST_TRAIN_COUNTS) // 2
  seen = []
  for k, (x, y) in enumerate(data.train):
    index = _index_of(x)
    assert len(set(index)) == len(y) == per_client  # None twice on a client.
    np.testing.assert_array_equal(y, np.full(per_client, k % 10))
    np.testing.assert_array_equal(y_train[index], y)
    np.testing.assert_array_equal(x, x_train[index].astype(np.float32) / 255)
    seen.extend(index)
  assert len(set(seen)) < len(seen)  # Clients share images.
  # The same seed, the same draws; the test sets are the disjoint split's.
  again = datasets.load_fedhdp_data('mnist', data_dir=directory,
                                    num_clients=20, seed=3, draw='independent')
  for (x, _), (x2, _) in zip(data.train, again.train):
    np.testing.assert_array_equal(x, x2)
  for (x, _), (x2, _) in zip(data.test, disjoint.test):
    assert sorted(_index_of(x)) == sorted(_index_of(x2))
  np.testing.assert_array_equal(data.server_test[1], y_test)
  with pytest.raises(ValueError, match='mnist and skewed_mnist only'):
    datasets.load_fedhdp_data('digits', draw='independent')
  with pytest.raises(ValueError, match='draw must be one of'):
    datasets.load_fedhdp_data('mnist', data_dir=directory, num_clients=20,
                              draw='shared')


def test_mnist_independent_draws_of_a_given_count(mnist_dir):
  directory, (x_train, y_train, _, _) = mnist_dir
  smallest = min(_MNIST_TRAIN_COUNTS)
  # More than the disjoint share (smallest // 2), up to a label's count.
  for count in (smallest // 2 + 3, smallest):
    data = datasets.load_fedhdp_data(
        'mnist', data_dir=directory, num_clients=20, seed=3,
        draw='independent', examples_per_client=count)
    for k, (x, y) in enumerate(data.train):
      index = _index_of(x)
      assert len(set(index)) == len(y) == count
      np.testing.assert_array_equal(y_train[index], np.full(count, k % 10))
  with pytest.raises(ValueError, match=r'must be in \[1, '):
    datasets.load_fedhdp_data('mnist', data_dir=directory, num_clients=20,
                              draw='independent',
                              examples_per_client=smallest + 1)
  with pytest.raises(ValueError, match='for independent draws'):
    datasets.load_fedhdp_data('mnist', data_dir=directory, num_clients=20,
                              examples_per_client=5)


def test_mnist_local_and_server_test_sets(mnist_dir):
  directory, (_, _, x_test, y_test) = mnist_dir
  data = datasets.load_fedhdp_data('mnist', data_dir=directory,
                                   num_clients=20, seed=3)
  for digit in range(10):
    owners = np.flatnonzero(data.client_labels == digit)
    parts = [_index_of(data.test[k][0]) - 1000 for k in owners]
    for k, index in zip(owners, parts):
      np.testing.assert_array_equal(data.test[k][1], np.full(len(index), digit))
    # The digit's test samples, split evenly among its clients.
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)),
                                  np.flatnonzero(y_test == digit))
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
  server_x, server_y = data.server_test
  np.testing.assert_array_equal(server_x, x_test.astype(np.float32) / 255)
  np.testing.assert_array_equal(server_y, y_test)
  assert server_x.max() == 1.0 and server_x.min() >= 0.0


def test_skewed_mnist_opt_outs_are_digit_7_clients(mnist_dir):
  directory, _ = mnist_dir
  data = datasets.load_fedhdp_data('skewed_mnist', data_dir=directory,
                                   num_clients=40, seed=0)
  assert data.name == 'skewed_mnist'
  sevens = data.clients_with_label(7)
  assert len(sevens) == 4
  for k in sevens:
    np.testing.assert_array_equal(data.train[k][1], 7)
  for seed in range(5):
    setup = config_lib.resolve(
        config_lib.FedHdpConfig(skewed_optout=True, optout_fraction=0.05,
                                clients_per_round=4,
                                clipped_count_stddev=10.0, seed=seed), data)
    opted_out = np.flatnonzero(setup.opted_out)
    assert len(opted_out) == 2  # round(0.05 * 40)
    assert set(opted_out) <= set(sevens)
    for k in opted_out:
      np.testing.assert_array_equal(data.train[k][1], 7)


def test_mnist_num_clients_must_fit_the_split(mnist_dir):
  directory, _ = mnist_dir
  with pytest.raises(ValueError, match='multiple of 10'):
    datasets.load_fedhdp_data('mnist', data_dir=directory, num_clients=15)
  with pytest.raises(ValueError, match='too many clients'):
    datasets.load_fedhdp_data('mnist', data_dir=directory,
                              num_clients=200)


def _load_error(*args, **kwargs) -> str:
  """The message of the DataFileError that
  `datasets.load_fedhdp_data(*args, **kwargs)` raises."""
  with pytest.raises(datasets.DataFileError) as info:
    datasets.load_fedhdp_data(*args, **kwargs)
  return str(info.value)


def _damage_mnist(path, how, arrays):
  x_train, y_train, x_test, y_test = arrays
  if how == 'truncated':
    data = open(path, 'rb').read()
    open(path, 'wb').write(data[:len(data) // 2])
  elif how == 'garbage':
    open(path, 'wb').write(np.random.default_rng(0).bytes(5000))
  elif how == 'empty':
    open(path, 'wb').close()
  elif how == 'bit_flip':  # Inside x_train's data: the CRC-32 catches it.
    data = bytearray(open(path, 'rb').read())
    data[len(data) // 4] ^= 0xFF
    open(path, 'wb').write(bytes(data))
  elif how == 'missing_key':
    np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test)
  elif how == 'float_pixels':
    np.savez(path, x_train=x_train / 255.0, y_train=y_train, x_test=x_test,
             y_test=y_test)
  elif how == 'flat_images':
    np.savez(path, x_train=x_train.reshape(-1, 784), y_train=y_train,
             x_test=x_test, y_test=y_test)
  elif how == 'label_count':
    np.savez(path, x_train=x_train, y_train=y_train[:-1], x_test=x_test,
             y_test=y_test)
  elif how == 'npy_not_npz':
    with open(path, 'wb') as f:
      np.save(f, x_train)
  else:
    raise ValueError(how)


@pytest.mark.parametrize('how', [
    'truncated', 'garbage', 'empty', 'bit_flip', 'missing_key',
    'float_pixels', 'flat_images', 'label_count', 'npy_not_npz'
])
def test_damaged_mnist_file_is_named(mnist_dir, tmp_path, how):
  source, arrays = mnist_dir
  path = str(tmp_path / 'mnist.npz')
  shutil.copy(os.path.join(source, 'mnist.npz'), path)
  _damage_mnist(path, how, arrays)
  message = _load_error('mnist', data_dir=str(tmp_path), num_clients=20)
  assert path in message and 'unusable' in message
  assert mnist.fetch_command(str(tmp_path)) in message
  assert '\n' not in message


def test_missing_mnist_file_says_where_and_how(tmp_path):
  directory = str(tmp_path / 'nowhere')
  message = _load_error('skewed_mnist', data_dir=directory)
  assert os.path.join(directory, 'mnist.npz') in message
  assert 'not found' in message
  assert f'curl -fL --create-dirs -o {directory}/mnist.npz {mnist.URL}' in (
      message)
  assert not os.path.exists(directory)


# --------------------------------------------------------------- EMNIST ----

_WRITERS = ['f0000_14', 'f0001_41', 'f0002_03', 'f0003_22', 'f0004_37']
_LETTERS_ONLY = 'f0004_37'  # In the full dataset only, as some real writers.


def _emnist_content(seed=0):
  """{split: {writer: (pixels, labels)}}, digits-only = the digit examples."""
  rng = np.random.default_rng(seed)
  content = {s: {} for s in ('all_train', 'all_test', 'digits_only_train',
                             'digits_only_test')}
  for i, writer in enumerate(_WRITERS):
    for part, count in (('train', 6 + 2 * i), ('test', 2 + i % 2)):
      pixels = rng.random((count, 28, 28), dtype=np.float32)
      if writer == _LETTERS_ONLY:
        labels = rng.integers(10, 62, size=count).astype(np.int32)
      else:
        labels = rng.integers(0, 62, size=count).astype(np.int32)
        labels[:2] = [i, 10 + i]  # At least one digit and one letter.
      content[f'all_{part}'][writer] = (pixels, labels)
      digit = labels < 10
      if digit.any():
        content[f'digits_only_{part}'][writer] = (pixels[digit], labels[digit])
  return content


def _write_emnist(path, content, *, interleave=True):
  """Writes `content` with TFF's own writer, one split at a time, merged.

  With `interleave`, each writer's `all_train` examples are written in two
  halves, so that its rows are not contiguous in the table.
  """
  parts = []
  for split, writers in content.items():
    halves = [(0, 1), (1, 2)] if split == 'all_train' and interleave else [
        (0, 2)]
    for start, stop in halves:
      part = {}
      for writer, (pixels, labels) in writers.items():
        n = len(labels)
        keep = slice(start * n // 2, stop * n // 2)
        part[writer] = collections.OrderedDict(label=labels[keep],
                                               pixels=pixels[keep])
      parts.append((split, part))
  tff_sql.write_client_data(path, parts)


@pytest.fixture(scope='module')
def emnist_dir(tmp_path_factory):
  directory = tmp_path_factory.mktemp('tff_cache')
  content = _emnist_content()
  _write_emnist(str(directory / 'emnist_all.sqlite'), content)
  return str(directory), content


def _stack(dataset):
  elements = list(dataset.as_numpy_iterator())
  if not elements:
    return np.zeros((0, 28, 28), np.float32), np.zeros((0,), np.int32)
  return (np.stack([e['pixels'] for e in elements]),
          np.array([e['label'] for e in elements]))


@pytest.mark.parametrize('name,only_digits', [('fmnist', True),
                                              ('femnist', False)])
def test_emnist_clients_and_server_test_set(emnist_dir, name, only_digits):
  directory, content = emnist_dir
  train_split, test_split = emnist.SPLITS[only_digits]
  data = datasets.load_fedhdp_data(name, data_dir=directory)
  writers = sorted(content[train_split])
  assert len(writers) == (4 if only_digits else 5)
  assert (data.name, data.num_clients, data.input_shape,
          data.num_classes) == (name, len(writers), (28, 28),
                                10 if only_digits else 62)
  assert data.client_labels is None
  for k, writer in enumerate(writers):
    for mine, split in ((data.train[k], train_split),
                        (data.test[k], test_split)):
      x, y = mine
      assert x.dtype == np.float32 and y.dtype == np.int32
      np.testing.assert_array_equal(x, content[split][writer][0])
      np.testing.assert_array_equal(y, content[split][writer][1])
  server_x, server_y = data.server_test
  np.testing.assert_array_equal(
      server_y, np.concatenate([content[test_split][w][1] for w in writers]))
  np.testing.assert_array_equal(
      server_x, np.concatenate([content[test_split][w][0] for w in writers]))
  assert set(np.concatenate([y for _, y in data.train])) <= set(
      range(data.num_classes))


@pytest.mark.parametrize('only_digits', [True, False])
def test_emnist_matches_tff_per_client_datasets(emnist_dir, only_digits):
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  directory, _ = emnist_dir
  train_cd, test_cd = tff.simulation.datasets.emnist.load_data(
      only_digits=only_digits, cache_dir=directory)
  data = emnist.load(only_digits, data_dir=directory)
  assert list(train_cd.client_ids) == sorted(train_cd.client_ids)
  assert data.num_clients == len(train_cd.client_ids)
  for k, writer in enumerate(train_cd.client_ids):
    for mine, client_data in ((data.train[k], train_cd),
                              (data.test[k], test_cd)):
      x, y = _stack(client_data.create_tf_dataset_for_client(writer))
      np.testing.assert_array_equal(mine[0], x)
      np.testing.assert_array_equal(mine[1], y)


def test_emnist_first_num_clients(emnist_dir):
  directory, content = emnist_dir
  data = datasets.load_fedhdp_data('femnist', data_dir=directory,
                                   num_clients=2)
  assert data.num_clients == 2
  first = sorted(content['all_train'])[:2]
  for k, writer in enumerate(first):
    np.testing.assert_array_equal(data.train[k][1],
                                  content['all_train'][writer][1])
  np.testing.assert_array_equal(
      data.server_test[1],
      np.concatenate([content['all_test'][w][1] for w in first]))
  with pytest.raises(ValueError, match=r'num_clients must be in \[1, 4\]'):
    datasets.load_fedhdp_data('fmnist', data_dir=directory, num_clients=5)


def test_skewed_opt_out_needs_a_one_label_split(emnist_dir):
  directory, _ = emnist_dir
  data = datasets.load_fedhdp_data('fmnist', data_dir=directory)
  with pytest.raises(ValueError, match='not split one label per client'):
    config_lib.resolve(
        config_lib.FedHdpConfig(skewed_optout=True, clients_per_round=2,
                                clipped_count_stddev=10.0), data)


def _truncate(path, size):
  with open(path, 'r+b') as f:
    f.truncate(size)


def _damage_emnist(path, how):
  if how == 'truncated':
    _truncate(path, os.path.getsize(path) // 2)
  elif how == 'truncated_header':
    _truncate(path, 60)
  elif how == 'empty':
    _truncate(path, 0)
  elif how == 'garbage':
    open(path, 'wb').write(np.random.default_rng(0).bytes(8192))
  elif how == 'no_tables':
    os.remove(path)
    with sqlite3.connect(path) as connection:
      connection.execute('CREATE TABLE other (a TEXT);')
    connection.close()
  elif how == 'no_column':
    with sqlite3.connect(path) as connection:
      connection.execute('ALTER TABLE examples RENAME COLUMN '
                         'serialized_example_proto TO proto;')
    connection.close()
  elif how == 'no_split':
    with sqlite3.connect(path) as connection:
      connection.execute(
          "DELETE FROM client_metadata WHERE split_name LIKE 'digits%';")
    connection.close()
  elif how == 'damaged_page':  # The table's root page; the header is intact.
    with sqlite3.connect(path) as connection:
      root, = connection.execute(
          "SELECT rootpage FROM sqlite_master WHERE name = 'examples';"
      ).fetchone()
      page_size, = connection.execute('PRAGMA page_size;').fetchone()
    connection.close()
    with open(path, 'r+b') as f:
      f.seek((root - 1) * page_size)
      f.write(np.random.default_rng(0).bytes(page_size))
  elif how == 'bad_record':
    with sqlite3.connect(path) as connection:
      connection.execute(
          "UPDATE examples SET serialized_example_proto = x'0a03ffffff' WHERE "
          "rowid = (SELECT MAX(rowid) FROM examples WHERE split_name = "
          "'digits_only_test');")
    connection.close()
  elif how == 'bad_label':
    with sqlite3.connect(path) as connection:
      connection.execute(
          "UPDATE examples SET split_name = 'digits_only_train' WHERE "
          "split_name = 'all_train';")
    connection.close()
  else:
    raise ValueError(how)


@pytest.mark.parametrize('how,says', [
    ('truncated', 'is truncated'),
    ('truncated_header', 'not an SQLite database'),
    ('empty', 'is empty'),
    ('garbage', 'not an SQLite database'),
    ('no_tables', "no table 'examples'"),
    ('no_column', 'lacks columns'),
    ('no_split', "no clients in split 'digits_only_train'"),
    ('damaged_page', 'damaged'),
    ('bad_record', 'not an EMNIST tf.Example'),
    ('bad_label', 'outside [0, 10)'),
])
def test_damaged_emnist_file_is_named(emnist_dir, tmp_path, monkeypatch, how,
                                      says):
  downloads = []
  monkeypatch.setattr(urllib.request, 'urlopen',
                      lambda *a, **k: downloads.append(a))
  source, _ = emnist_dir
  path = str(tmp_path / 'emnist_all.sqlite')
  shutil.copy(os.path.join(source, 'emnist_all.sqlite'), path)
  _damage_emnist(path, how)
  message = _load_error('fmnist', data_dir=str(tmp_path))
  assert path in message and says in message
  assert emnist.fetch_command(str(tmp_path)) in message
  assert '\n' not in message
  assert not downloads


def test_missing_emnist_file_says_where_and_how_without_downloading(
    tmp_path, monkeypatch):
  downloads = []
  monkeypatch.setattr(urllib.request, 'urlopen',
                      lambda *a, **k: downloads.append(a))
  directory = str(tmp_path / 'cache')
  message = _load_error('femnist', data_dir=directory)
  assert os.path.join(directory, 'emnist_all.sqlite') in message
  assert 'not found' in message
  assert ('tff.simulation.datasets.emnist.load_data('
          f'cache_dir={directory!r})') in message
  assert not downloads
  assert not os.path.exists(directory)  # TFF would have created it.


# --------------------------------------------------------------- others ----


def test_digits_offline_default():
  data = datasets.load_fedhdp_data('digits', num_clients=20, seed=1)
  assert (data.num_clients, data.input_shape, data.num_classes) == (20, (8, 8),
                                                                    10)
  for k, (x, y) in enumerate(data.train):
    np.testing.assert_array_equal(y, k % 10)
    assert 0.0 <= x.min() and x.max() <= 1.0
  assert sum(len(y) for _, y in data.test) == len(data.server_test[1])


@pytest.mark.parametrize('name,num_clients,says', [
    ('cifar', None, 'unknown dataset'),
    ('digits', 0, 'num_clients must be >= 1'),
    ('digits', 25, 'multiple of 10'),
])
def test_bad_arguments(name, num_clients, says):
  with pytest.raises(ValueError, match=says):
    datasets.load_fedhdp_data(name, num_clients=num_clients)
