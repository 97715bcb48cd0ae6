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
"""CelebA of paper 004 (UDP-Alg): TFF's federated CelebA, label `smiling`.

The file
--------
TFF's `tff.simulation.datasets.celeba.load_data(cache_dir=DIR)` downloads
https://storage.googleapis.com/tff-datasets-public/celeba.sqlite.lzma and
keeps it, decompressed, as `DIR/celeba.sqlite` (default `~/.tff`). No
machine here reaches the internet, so fetch it on a connected machine with

    python -c "import tensorflow_federated as tff; tff.simulation.datasets.celeba.load_data(cache_dir='DIR')"

and copy `DIR/celeba.sqlite` to the data directory here (`--data_dir`).
The database is TFF's `SqlClientData` format (see
`tff_hdp.datasets.tff_sqlite`, which checks it before TFF opens it); each row
is a `tf.train.Example` with an int64 `image` of 84 x 84 x 3 values in
[0, 255] and 40 int64 attributes.

The users
---------
TFF (from LEAF's preprocessing) keeps the 9,343 celebrities with at least 5
images. We use its `split_by_examples` splits, in which every celebrity has
train and test images (personalised models are tested on their own user's
images): 177,457 train and 22,831 test images. Paper 004 reports 6,348 users
with 155,529 train / 19,962 test images, which matches neither TFF nor LEAF;
`num_clients` takes the first N of TFF's sorted ids. Pixels are scaled to
[0, 1]; the label is the `smiling` attribute (0 or 1).

Each user is read with TFF's own `create_tf_dataset_for_client` (one SQL
query per user), which is slow for thousands of users on a database without
an index on `client_id`; the EMNIST loader's single-scan reader is the model
to follow if that matters. Registered as the dataset `celeba` of UDP-Alg
(`DATASET`).
"""

import os
from typing import Optional

import numpy as np

from tff_hdp.data import federated_data
from tff_hdp.datasets import dataset
from tff_hdp.datasets import dataset_registry
from tff_hdp.datasets import tff_sqlite
from tff_hdp.datasets.errors import DataFileError

FILENAME = 'celeba.sqlite'
SPLITS = ('split_by_examples_train', 'split_by_examples_test')
IMAGE_SHAPE = (84, 84, 3)
LABEL = 'smiling'


def _how_to_fetch(path: str) -> str:
  directory = os.path.dirname(os.path.abspath(path))
  return ('fetch it on a connected machine with: python -c "import '
          'tensorflow_federated as tff; tff.simulation.datasets.celeba.'
          f'load_data(cache_dir={directory!r})" then copy {FILENAME} to '
          f'{directory} here (or pass --data_dir)')


def check_database(path: str) -> None:
  """Raises DataFileError unless `path` is a usable TFF CelebA database."""
  tff_sqlite.check_database(path, 'CelebA', SPLITS, _how_to_fetch(path))


def _arrays(tf_dataset) -> federated_data.ClientArrays:
  images, labels = [], []
  for batch in tf_dataset.batch(512):
    images.append(np.asarray(batch['image'], np.float32) / np.float32(255))
    labels.append(np.asarray(batch[LABEL]).reshape(-1).astype(np.int32))
  if not images:
    return (np.zeros((0,) + IMAGE_SHAPE, np.float32), np.zeros(0, np.int32))
  return np.concatenate(images), np.concatenate(labels)


def load(data_dir: Optional[str] = None,
         num_clients: Optional[int] = None) -> federated_data.FederatedData:
  """TFF CelebA (split by examples) as numpy arrays, one user per celebrity.

  Raises:
    DataFileError: The file is missing or unusable (named, with how to get
      it), or a record is not a CelebA tf.Example.
  """
  data_dir = data_dir or os.path.join(os.path.expanduser('~'), '.tff')
  path = os.path.join(data_dir, FILENAME)
  check_database(path)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  train, test = tff.simulation.datasets.celeba.load_data(
      split_by_clients=False, cache_dir=data_dir)
  ids = train.client_ids[:num_clients]
  try:
    train_arrays = [_arrays(train.create_tf_dataset_for_client(c))
                    for c in ids]
    test_arrays = [_arrays(test.create_tf_dataset_for_client(c))
                   if c in test.client_ids else _arrays([]) for c in ids]
  except tf.errors.InvalidArgumentError:
    raise DataFileError(f'CelebA file {path} holds a record that is not a '
                        'CelebA tf.Example (image: 84 x 84 x 3 int64, 40 '
                        f'attributes); delete it and {_how_to_fetch(path)}'
                        ) from None
  return federated_data.FederatedData(
      name='celeba',
      input_shape=IMAGE_SHAPE,
      num_classes=2,
      train=train_arrays,
      test=test_arrays,
      server_test=(np.concatenate([t[0] for t in test_arrays]),
                   np.concatenate([t[1] for t in test_arrays])))


def _users(*, data_dir: Optional[str], num_users: int,
           seed: int) -> federated_data.FederatedData:
  del seed  # TFF's split is fixed.
  return load(data_dir=data_dir, num_clients=num_users)


DATASET = dataset_registry.register(dataset.Dataset(
    name='celeba', label="TFF CelebA by examples, label 'smiling' (9,343 "
    'celebrities)', file=FILENAME, udp=_users))
