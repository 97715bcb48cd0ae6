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
"""CIFAR-10 from the official `cifar-10-python.tar.gz` (Krizhevsky 2009).

The archive (the "CIFAR-10 python version") holds `cifar-10-batches-py/`
with five training batches `data_batch_1` ... `data_batch_5` and
`test_batch`, each a pickled dict with b'data' (uint8 [10000, 3072], the
red, green and blue planes of each 32 x 32 image) and b'labels'. Keras saves
the same archive as `~/.keras/datasets/cifar-10-batches-py.tar.gz`; either
name is accepted. Pickles are read with `encoding='bytes'` from the archive
only; a missing or damaged archive raises `DataFileError`. Registered as
the dataset `cifar10` of Robust-HDP and UDP-Alg, which pool the 60,000
images (`DATASET`).
"""

import os
import pickle
import shlex
import tarfile
from typing import Optional

import numpy as np

from tff_hdp.datasets import dataset
from tff_hdp.datasets import dataset_registry
from tff_hdp.datasets.errors import DataFileError

FILENAMES = ('cifar-10-python.tar.gz', 'cifar-10-batches-py.tar.gz')
URL = 'https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz'
IMAGE_SHAPE = (32, 32, 3)
NUM_CLASSES = 10
_MEMBERS = tuple(f'cifar-10-batches-py/data_batch_{i}' for i in range(1, 6))
_TEST = 'cifar-10-batches-py/test_batch'


def default_dir() -> str:
  return os.path.join(os.path.expanduser('~'), '.keras', 'datasets')


def fetch_command(data_dir: str) -> str:
  target = os.path.join(os.path.abspath(data_dir), FILENAMES[0])
  return f'curl -fL --create-dirs -o {shlex.quote(target)} {URL}'


def _batch(archive: tarfile.TarFile, member: str):
  f = archive.extractfile(member)
  if f is None:
    raise ValueError(f'{member} is not a file')
  record = pickle.load(f, encoding='bytes')
  data = np.asarray(record[b'data'], np.uint8)
  labels = np.asarray(record[b'labels'], np.int64)
  if data.ndim != 2 or data.shape[1] != 3072 or labels.shape != data.shape[:1]:
    raise ValueError(f'{member} holds data {list(data.shape)} and labels '
                     f'{list(labels.shape)}')
  images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
  return images, labels.astype(np.int32)


def load_arrays(data_dir: Optional[str] = None):
  """(x_train, y_train, x_test, y_test); images uint8 [n, 32, 32, 3].

  Raises:
    DataFileError: The archive is missing or unusable.
  """
  data_dir = data_dir or default_dir()
  paths = [os.path.join(data_dir, n) for n in FILENAMES]
  path = next((p for p in paths if os.path.isfile(p)), paths[0])
  how = (f'fetch it on a connected machine with: {fetch_command(data_dir)} '
         f'then copy it to {os.path.abspath(data_dir)} here (or pass '
         '--data_dir)')
  if not os.path.isfile(path):
    raise DataFileError(f'CIFAR-10 archive {path} not found: {how}')
  try:
    with tarfile.open(path, 'r:gz') as archive:
      train = [_batch(archive, m) for m in _MEMBERS]
      x_test, y_test = _batch(archive, _TEST)
  except (OSError, EOFError, KeyError, ValueError, tarfile.TarError,
          pickle.UnpicklingError) as e:
    raise DataFileError(f'CIFAR-10 archive {path} is unusable ({e}); delete '
                        f'it and {how}') from None
  x_train = np.concatenate([b[0] for b in train])
  y_train = np.concatenate([b[1] for b in train])
  if x_train.size and max(y_train.max(), y_test.max()) >= NUM_CLASSES:
    raise DataFileError(f'CIFAR-10 archive {path} has labels outside '
                        f'[0, {NUM_CLASSES}); delete it and {how}')
  return x_train, y_train, x_test, y_test


def _pooled(data_dir: Optional[str]) -> tuple[np.ndarray, np.ndarray]:
  return dataset.pool(*load_arrays(data_dir))


DATASET = dataset_registry.register(dataset.Dataset(
    name='cifar10', label='CIFAR-10 (60,000 32x32 colour images)',
    file='cifar-10-python.tar.gz', robust_hdp=_pooled,
    udp=dataset.users_by_classes(_pooled, 'cifar10')))
