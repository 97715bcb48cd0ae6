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
"""FMNIST and FEMNIST of paper 001: TFF's federated EMNIST.

"FMNIST" in the papers is TFF EMNIST digits-only (3,383 writers, 10 classes)
and FEMNIST is TFF EMNIST full (3,400 writers, 62 classes), both loaded with
TFF's own `tff.simulation.datasets.emnist.load_data(only_digits, cache_dir)`
(paper 001, Section 5 and Table 5). Each writer is a client with its own
train and test split; the server test set is the union of the clients' test
data (paper 001, Appendix C). When only the first `num_clients` writers are
taken, the server test set is the union of theirs.

The file
--------
TFF downloads `emnist_all.sqlite.lzma` from
https://storage.googleapis.com/tff-datasets-public/emnist_all.sqlite.lzma and
keeps it, decompressed, as `<cache_dir>/emnist_all.sqlite` (default cache
directory `~/.tff`). One file serves both datasets. No machine here reaches
the internet, so fetch it on a connected machine with

    python -c "import tensorflow_federated as tff; tff.simulation.datasets.emnist.load_data(cache_dir='DIR')"

(or `curl -fL <the URL above> | xz -d > DIR/emnist_all.sqlite`), copy
`DIR/emnist_all.sqlite` to the data directory here and pass it as `data_dir`
(`--data_dir` of the binaries).

The database (TFF's `SqlClientData` format) has two tables: `examples`
(`split_name`, `client_id`, `serialized_example_proto`: a `tf.train.Example`
with a float feature `pixels` of 28 x 28 values in [0, 1], 1.0 being the
background, and an int64 feature `label`) and `client_metadata`
(`client_id`, `split_name`, `num_examples`). The splits are
`digits_only_train`, `digits_only_test`, `all_train` and `all_test`. Labels
0-9 are digits, 10-35 upper-case and 36-61 lower-case letters. Pixels are
kept as TFF gives them (not inverted to MNIST's convention).

Checks before TFF sees the file
-------------------------------
TFF downloads a missing file (which fails offline after creating the cache
directory) and opens a cached one without checking it, so an interrupted
download leaves a malformed database that fails much later. Here the file is
checked first: present, non-empty, an SQLite database whose size matches the
page count in its header (an interrupted download is shorter), with TFF's
tables and columns and the two splits needed. A database whose pages are
damaged further in is caught while its rows are read. Every problem raises
`DataFileError` naming the file and how to get a good copy.

Reading
-------
`load_data` stays the entry point: it is how TFF finds the cached file, checks
its format and lists each split's clients (TFF sorts the ids; the clients are
taken in that order). Turning 3,400 `create_tf_dataset_for_client` datasets
into numpy arrays one by one runs one SQL query per client (a scan of the
whole table when the database has no index on `client_id`) plus a tf.data
pipeline per client; instead the two splits' rows are read here in a single
SQL scan and parsed in large batches with `tf.io.parse_example`, with exactly
the feature specification of TFF's EMNIST parser (`pixels`: float32 [28, 28],
`label`: int64 cast to int32). Each client's examples keep TFF's order (the
table's row order); each client's arrays are views into one array per split.
The tests check the result against TFF's per-client datasets.

On a synthetic database of the real size (3,400 writers, 1.13 M records,
4.6 GB), FEMNIST loads in about 30 s (peak memory 3.2 GB; 27-72 s on a busy
2-core machine), where the per-client datasets took 0.63 s per writer with an
index on `client_id` (36 min for 3,400) and 25 s per writer without one.

Registered as the datasets `fmnist` (FedHDP) and `femnist` (FedHDP and
UDP-Alg, whose users are the first `num_users` writers).
"""

import contextlib
import functools
import os
import sqlite3
from typing import Optional, Sequence

import numpy as np

from tff_hdp.data import federated_data
from tff_hdp.datasets import dataset
from tff_hdp.datasets import dataset_registry
from tff_hdp.datasets import tff_sqlite
from tff_hdp.datasets.errors import DataFileError

FILENAME = 'emnist_all.sqlite'
URL = ('https://storage.googleapis.com/tff-datasets-public/'
       'emnist_all.sqlite.lzma')
# (train split, test split) by `only_digits`.
SPLITS = {True: ('digits_only_train', 'digits_only_test'),
          False: ('all_train', 'all_test')}
NUM_CLASSES = {True: 10, False: 62}
IMAGE_SHAPE = (28, 28)

_ROWS_PER_BATCH = 8192


def default_dir() -> str:
  """TFF's default cache directory, `~/.tff`."""
  return os.path.join(os.path.expanduser('~'), '.tff')


def fetch_command(data_dir: str) -> str:
  """The shell command that downloads the file into `data_dir`."""
  return ('python -c "import tensorflow_federated as tff; '
          'tff.simulation.datasets.emnist.load_data(cache_dir='
          f'{os.path.abspath(data_dir)!r})"')


def _how_to_fetch(path: str) -> str:
  directory = os.path.dirname(os.path.abspath(path))
  return (f'fetch it on a connected machine with: {fetch_command(directory)} '
          f'then copy {FILENAME} to {directory} here (or pass --data_dir)')


def check_database(path: str, split_names: Sequence[str] = ()) -> None:
  """Raises DataFileError unless `path` is a usable TFF EMNIST database.

  Args:
    path: Path of `emnist_all.sqlite`.
    split_names: Splits that must have clients, e.g. `SPLITS[True]`.

  Raises:
    DataFileError: The file is missing, empty, not an SQLite database,
      truncated, or lacks TFF's tables, columns or the splits; the message
      names the file and the command that fetches it.
  """
  tff_sqlite.check_database(path, 'EMNIST', split_names,
                            _how_to_fetch(path))


def _parse(serialized: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
  """Parses tf.Examples as TFF's EMNIST parser does (pixels, label)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  features = tf.io.parse_example(serialized, {
      'pixels': tf.io.FixedLenFeature(IMAGE_SHAPE, tf.float32),
      'label': tf.io.FixedLenFeature((), tf.int64),
  })
  # np.asarray shares the tensors' memory (`.numpy()` would copy it).
  return (np.asarray(features['pixels']),
          np.asarray(features['label']).astype(np.int32))


class _SplitRows:
  """One split's parsed rows, gathered into one growing array per field.

  The arrays are allocated once for the expected row count (`np.empty`
  pages cost nothing until written), so each example is copied once, from
  the parser's output into place; a split of 670k images (2.1 GB) is not
  held twice.
  """

  def __init__(self, expected_rows: int):
    capacity = max(expected_rows, 1)
    self._x = np.empty((capacity,) + IMAGE_SHAPE, np.float32)
    self._y = np.empty((capacity,), np.int32)
    self._owner = np.empty((capacity,), np.int64)
    self._size = 0

  def append(self, x: np.ndarray, y: np.ndarray, owner: np.ndarray) -> None:
    end = self._size + len(y)
    if end > len(self._y):
      capacity = max(end, 2 * len(self._y))
      grown = []
      for a in (self._x, self._y, self._owner):
        b = np.empty((capacity,) + a.shape[1:], a.dtype)
        b[:self._size] = a[:self._size]
        grown.append(b)
      self._x, self._y, self._owner = grown
    self._x[self._size:end] = x
    self._y[self._size:end] = y
    self._owner[self._size:end] = owner
    self._size = end

  def by_client(self, num_clients: int) -> list[federated_data.ClientArrays]:
    """Per-client (x, y) views, clients in order, rows in table order."""
    x, y, owner = (a[:self._size] for a in (self._x, self._y, self._owner))
    if np.any(owner[1:] < owner[:-1]):
      order = np.argsort(owner, kind='stable')
      x, y, owner = x[order], y[order], owner[order]
    bounds = np.searchsorted(owner, np.arange(num_clients + 1))
    return [(x[b:e], y[b:e]) for b, e in zip(bounds[:-1], bounds[1:])]


def _expected_rows(connection: sqlite3.Connection, split: str) -> int:
  """The split's row count according to `client_metadata`, 0 if unknown."""
  columns = {row[1] for row in connection.execute(
      'PRAGMA table_info(client_metadata);')}
  if 'num_examples' not in columns:
    return 0
  total, = connection.execute(
      'SELECT SUM(num_examples) FROM client_metadata WHERE split_name = ?;',
      (split,)).fetchone()
  return int(total or 0)


def read_splits(
    path: str, split_names: Sequence[str], client_ids: Sequence[str]
) -> dict[str, list[federated_data.ClientArrays]]:
  """Reads the examples of `client_ids` in each split, in one SQL scan.

  Args:
    path: Path of the database.
    split_names: The splits to read.
    client_ids: The clients to keep, in the order of the result.

  Returns:
    For each split name, one (pixels float32 [n, 28, 28], label int32 [n])
    per client of `client_ids` (empty arrays for a client with no examples
    in that split).

  Raises:
    DataFileError: SQLite finds the database damaged, or a row is not an
      EMNIST tf.Example.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  position = {cid: i for i, cid in enumerate(client_ids)}
  query = ('SELECT split_name, client_id, serialized_example_proto FROM '
           f'examples WHERE split_name IN ({",".join("?" * len(split_names))})'
           ';')
  try:
    with contextlib.closing(tff_sqlite.connect(path)) as connection:
      parts = {s: _SplitRows(_expected_rows(connection, s))
               for s in split_names}
      cursor = connection.execute(query, tuple(split_names))
      while rows := cursor.fetchmany(_ROWS_PER_BATCH):
        for split, part in parts.items():
          kept = [(position[c], p) for s, c, p in rows
                  if s == split and c in position]
          if not kept:
            continue
          owner, serialized = zip(*kept)
          try:
            x, y = _parse(list(serialized))
          # TensorFlow's message quotes the record, which may not decode.
          except (tf.errors.InvalidArgumentError, UnicodeDecodeError):
            raise DataFileError(
                f'EMNIST file {path} holds a record of split {split!r} that '
                'is not an EMNIST tf.Example (pixels: 28 x 28 floats, label: '
                f'int64); delete it and {_how_to_fetch(path)}') from None
          part.append(x, y, np.asarray(owner, np.int64))
  except sqlite3.DatabaseError as e:
    raise DataFileError(f'EMNIST file {path} is damaged ({e}); delete it and '
                        f'{_how_to_fetch(path)}') from None
  return {s: part.by_client(len(client_ids)) for s, part in parts.items()}


def load(only_digits: bool,
         data_dir: Optional[str] = None,
         num_clients: Optional[int] = None,
         name: Optional[str] = None) -> federated_data.FederatedData:
  """Loads TFF EMNIST as numpy arrays, one (train, test) pair per writer.

  Args:
    only_digits: True for FMNIST (digits-only), False for FEMNIST.
    data_dir: Directory holding `emnist_all.sqlite` (TFF's `cache_dir`);
      default `~/.tff`.
    num_clients: Take only the first `num_clients` writers (in TFF's sorted
      order); default all.
    name: Name to record; default 'fmnist' or 'femnist'.

  Returns:
    A `FederatedData` without `client_labels` (writers hold many labels).

  Raises:
    DataFileError: The file is missing or unusable.
    ValueError: `num_clients` is out of range.
  """
  data_dir = data_dir or default_dir()
  path = os.path.join(data_dir, FILENAME)
  train_split, test_split = SPLITS[only_digits]
  # Checked before TensorFlow is imported, so that a refusal is quick.
  check_database(path, (train_split, test_split))
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  # The file exists, so TFF uses it and downloads nothing.
  try:
    train_cd, _ = tff.simulation.datasets.emnist.load_data(
        only_digits=only_digits, cache_dir=data_dir)
  except sqlite3.DatabaseError as e:
    raise DataFileError(f'EMNIST file {path} is damaged ({e}); delete it and '
                        f'{_how_to_fetch(path)}') from None
  client_ids = list(train_cd.client_ids)
  if num_clients is not None:
    if not 1 <= num_clients <= len(client_ids):
      raise ValueError(f'num_clients must be in [1, {len(client_ids)}] (the '
                       f'writers in {train_split}), got {num_clients}')
    client_ids = client_ids[:num_clients]
  arrays = read_splits(path, (train_split, test_split), client_ids)
  train, test = arrays[train_split], arrays[test_split]
  num_classes = NUM_CLASSES[only_digits]
  for split, client_arrays in arrays.items():
    labels = np.concatenate([y for _, y in client_arrays])
    outside = labels[(labels < 0) | (labels >= num_classes)]
    if outside.size:
      raise DataFileError(f'EMNIST file {path}: split {split!r} has label '
                          f'{outside[0]}, outside [0, {num_classes}); delete '
                          f'it and {_how_to_fetch(path)}')
  return federated_data.FederatedData(
      name=name or ('fmnist' if only_digits else 'femnist'),
      input_shape=IMAGE_SHAPE,
      num_classes=num_classes,
      train=train,
      test=test,
      server_test=(np.concatenate([x for x, _ in test]),
                   np.concatenate([y for _, y in test])))


def _writers(*, name: str, data_dir: Optional[str],
             num_clients: Optional[int],
             seed: int) -> federated_data.FederatedData:
  del seed  # TFF's split is fixed.
  return load(only_digits=(name == 'fmnist'), data_dir=data_dir,
              num_clients=num_clients, name=name)


def _users(*, data_dir: Optional[str], num_users: int,
           seed: int) -> federated_data.FederatedData:
  del seed  # TFF's split is fixed.
  return load(only_digits=False, data_dir=data_dir, num_clients=num_users,
              name='femnist')


FMNIST = dataset_registry.register(dataset.Dataset(
    name='fmnist', label='TFF EMNIST digits-only (3,383 writers, 10 classes)',
    file=FILENAME, fedhdp=functools.partial(_writers, name='fmnist')))
FEMNIST = dataset_registry.register(dataset.Dataset(
    name='femnist', label='TFF EMNIST full (3,400 writers, 62 classes)',
    file=FILENAME, fedhdp=functools.partial(_writers, name='femnist'),
    udp=_users))
