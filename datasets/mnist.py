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
"""Non-IID MNIST of paper 001 from the file Keras uses, `mnist.npz`.

The file
--------
`tf.keras.datasets.mnist.load_data()` downloads
https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz
(SHA-256 731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1,
which Keras checks) to `~/.keras/datasets/mnist.npz`, the default data
directory here. No machine here reaches the internet, so fetch it on a
connected machine with

    curl -fL --create-dirs -o DIR/mnist.npz https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz

(or run the Keras call above and take `~/.keras/datasets/mnist.npz`), copy it
to the data directory here and pass that as `data_dir` (`--data_dir` of the
binaries).

It is an `np.savez` archive with `x_train` (uint8 [60000, 28, 28]),
`y_train` (uint8 [60000]), `x_test` (uint8 [10000, 28, 28]) and `y_test`
(uint8 [10000]); 0 is the background. A missing file, a truncated or damaged
archive (each member carries a CRC-32, checked as it is read), a missing
key, or arrays of the wrong kind raise `DataFileError` naming the file.

The split
---------
Pixels are scaled to [0, 1]. Paper 001 (Section 5.1, Table 5): N = 2,000
clients, each holding training samples of a single digit, the same count for
every client (`tff_hdp.data.federated_data.split_one_label_per_client`). Each
client's local test data is its digit's test samples split evenly among that
digit's clients (the papers do not say; docs/fedhdp.md), and the server test
set is the whole MNIST test set. The skewed variant ('skewed_mnist') is the
same data; its opt-out clients are drawn among the digit-7 clients
(`FedHdpConfig.skewed_optout`, using `FederatedData.client_labels`).
"""

import os
import shlex
import zipfile
from typing import Optional

import numpy as np

from tff_hdp.data import federated_data
from tff_hdp.datasets.errors import DataFileError

FILENAME = 'mnist.npz'
URL = 'https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz'
SHA256 = '731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1'
IMAGE_SHAPE = (28, 28)
NUM_CLASSES = 10
NUM_CLIENTS = 2000  # Paper 001, Table 5.
_KEYS = ('x_train', 'y_train', 'x_test', 'y_test')


def default_dir() -> str:
  """Where Keras caches it, `~/.keras/datasets`."""
  return os.path.join(os.path.expanduser('~'), '.keras', 'datasets')


def fetch_command(data_dir: str) -> str:
  """The shell command that downloads the file into `data_dir`."""
  target = os.path.join(os.path.abspath(data_dir), FILENAME)
  return f'curl -fL --create-dirs -o {shlex.quote(target)} {URL}'


def _how_to_fetch(path: str) -> str:
  directory = os.path.dirname(os.path.abspath(path))
  return (f'fetch it (the file Keras downloads) on a connected machine with: '
          f'{fetch_command(directory)} then copy it to {directory} here (or '
          'pass --data_dir)')


def _array_problem(arrays: dict[str, np.ndarray]) -> Optional[str]:
  """What is wrong with the arrays for Keras' MNIST layout, or None."""
  for part in ('train', 'test'):
    x, y = arrays[f'x_{part}'], arrays[f'y_{part}']
    if x.dtype != np.uint8 or x.ndim != 3 or x.shape[1:] != IMAGE_SHAPE:
      return (f'x_{part} must be uint8 [n, 28, 28], got {x.dtype} '
              f'{list(x.shape)}')
    if not np.issubdtype(y.dtype, np.integer) or y.shape != x.shape[:1]:
      return (f'y_{part} must be integer [{x.shape[0]}], got {y.dtype} '
              f'{list(y.shape)}')
    if y.size and (y.min() < 0 or y.max() >= NUM_CLASSES):
      return f'y_{part} has labels outside [0, {NUM_CLASSES})'
  return None


def load_arrays(
    data_dir: Optional[str] = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
  """Reads (x_train, y_train, x_test, y_test) from `data_dir/mnist.npz`.

  Raises:
    DataFileError: The file is missing, unreadable, or not Keras' layout;
      the message names the file and the command that fetches it.
  """
  data_dir = data_dir or default_dir()
  path = os.path.join(data_dir, FILENAME)
  if not os.path.isfile(path):
    raise DataFileError(f'MNIST file {path} not found: {_how_to_fetch(path)}')
  try:
    with open(path, 'rb') as f:
      archive = np.load(f, allow_pickle=False)
      if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError('not an .npz archive')
      with archive:
        missing = [k for k in _KEYS if k not in archive.files]
        if missing:
          raise KeyError(f'no arrays {missing}')
        arrays = {k: np.asarray(archive[k]) for k in _KEYS}
  except (KeyError, ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
    raise DataFileError(f'MNIST file {path} is unusable ({e}); delete it and '
                        f'{_how_to_fetch(path)}') from None
  problem = _array_problem(arrays)
  if problem:
    raise DataFileError(f'MNIST file {path} is unusable ({problem}); delete '
                        f'it and {_how_to_fetch(path)}')
  return tuple(arrays[k] for k in _KEYS)


def load(data_dir: Optional[str] = None,
         num_clients: int = NUM_CLIENTS,
         seed: int = 0,
         name: str = 'mnist') -> federated_data.FederatedData:
  """Non-IID MNIST: `num_clients` clients (a multiple of 10), one digit each.

  Args:
    data_dir: Directory holding `mnist.npz`; default `~/.keras/datasets`.
    num_clients: N, a multiple of 10.
    seed: Seed of the split.
    name: Name to record ('mnist' or 'skewed_mnist').

  Returns:
    A `FederatedData` with `client_labels` (client k holds digit k mod 10).

  Raises:
    DataFileError: The file is missing or unusable.
    ValueError: `num_clients` is not a multiple of 10 or too large.
  """
  x_train, y_train, x_test, y_test = load_arrays(data_dir)
  scale = lambda x: x.astype(np.float32) / np.float32(255.0)
  return federated_data.split_one_label_per_client(
      scale(x_train), y_train.astype(np.int32), scale(x_test),
      y_test.astype(np.int32), num_clients, seed, name)

