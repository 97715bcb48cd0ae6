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
from its cached `emnist_all.sqlite`. Each writer is a client with its own
train and test split; the server test set is the union of the clients' test
data (paper 001, Appendix C).

TFF returns a cached database without checking it (an interrupted download
leaves a malformed file) and downloads a missing one, which fails offline; so
the file is checked here first and a problem is reported naming the file.
"""

import os
import sqlite3
from typing import Optional

import numpy as np

from datasets.errors import DataFileError
from tff_hdp import federated_data

FILENAME = 'emnist_all.sqlite'
FETCH_COMMAND = ('python -c "import tensorflow_federated as tff; '
                 'tff.simulation.datasets.emnist.load_data(cache_dir=\'DIR\')"')
_TABLES = ('examples', 'client_metadata')


def default_dir() -> str:
  """TFF's default cache directory."""
  return os.path.join(os.path.expanduser('~'), '.tff')


def check_database(path: str) -> None:
  """Raises DataFileError unless `path` is a readable TFF EMNIST database."""
  how = (f'fetch it on a connected machine with '
         f'{FETCH_COMMAND.replace("DIR", os.path.dirname(path))} and copy '
         f'{FILENAME} to {os.path.dirname(path)}, or pass --data_dir')
  if not os.path.isfile(path):
    raise DataFileError(f'EMNIST file {path} not found: {how}')
  try:
    connection = sqlite3.connect(f'file:{path}?mode=ro', uri=True)
    try:
      if connection.execute('PRAGMA quick_check;').fetchone()[0] != 'ok':
        raise sqlite3.DatabaseError('integrity check failed')
      tables = {r[0] for r in connection.execute(
          'SELECT name FROM sqlite_master WHERE type="table";')}
      missing = [t for t in _TABLES if t not in tables]
      if missing:
        raise sqlite3.DatabaseError(f'missing tables {missing}')
    finally:
      connection.close()
  except sqlite3.DatabaseError as e:
    raise DataFileError(f'EMNIST file {path} is corrupt or truncated ({e}); '
                        f'delete it and {how}') from None


def _client_arrays(client_data, client_id):
  elements = list(client_data.create_tf_dataset_for_client(client_id)
                  .batch(100_000).as_numpy_iterator())
  if not elements:
    return np.zeros((0, 28, 28), np.float32), np.zeros((0,), np.int32)
  batch = elements[0]
  return batch['pixels'].astype(np.float32), batch['label'].astype(np.int32)


def load(only_digits: bool,
         data_dir: Optional[str] = None,
         num_clients: Optional[int] = None,
         name: str = 'femnist') -> federated_data.FederatedData:
  """Loads TFF EMNIST as numpy arrays, one (train, test) pair per writer."""
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  data_dir = data_dir or default_dir()
  check_database(os.path.join(data_dir, FILENAME))
  train_cd, test_cd = tff.simulation.datasets.emnist.load_data(
      only_digits=only_digits, cache_dir=data_dir)
  client_ids = sorted(train_cd.client_ids)
  if num_clients is not None:
    client_ids = client_ids[:num_clients]
  test_ids = set(test_cd.client_ids)
  train, test = [], []
  for cid in client_ids:
    train.append(_client_arrays(train_cd, cid))
    if cid in test_ids:
      test.append(_client_arrays(test_cd, cid))
    else:
      test.append((np.zeros((0, 28, 28), np.float32), np.zeros((0,), np.int32)))
  server_x = np.concatenate([x for x, _ in test])
  server_y = np.concatenate([y for _, y in test])
  return federated_data.FederatedData(
      name=name,
      input_shape=(28, 28),
      num_classes=10 if only_digits else 62,
      train=train,
      test=test,
      server_test=(server_x, server_y))
