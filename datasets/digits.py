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
"""The offline default: scikit-learn's bundled handwritten digits, non-IID.

scikit-learn ships the UCI optical-recognition digits (1,797 8x8 images, 16
grey levels) inside its wheel, so this dataset needs no file and no
download: it is the default where no MNIST or EMNIST file is at hand. After a
stratified 70/30 train/test split (seeded with `seed`) it is split exactly as
non-IID MNIST (`tff_hdp.data.federated_data.split_one_label_per_client`): one
digit per client, equal training counts, each digit's test samples split
evenly among its clients, the server test set the whole 30% test split, and
`client_labels` set, so the skewed opt-out (digit-7 clients) works on it
too. Pixels are scaled to [0, 1]; images are 8 x 8. Robust-HDP and UDP-Alg
pool the 1,797 images (`load_pooled`) and split them their own way.
Registered as the dataset `digits` for all three systems (`DATASET`).
"""

from typing import Optional

import numpy as np

from tff_hdp.data import federated_data
from tff_hdp.datasets import dataset
from tff_hdp.datasets import dataset_registry

NUM_CLIENTS = 100


def load_pooled() -> tuple[np.ndarray, np.ndarray]:
  """All 1,797 images scaled to [0, 1] as float32 [n, 8, 8], and their
  int32 labels."""
  # scikit-learn is imported when used: it takes a second to import.
  from sklearn import datasets as sk_datasets  # pylint: disable=g-import-not-at-top
  bunch = sk_datasets.load_digits()
  return (bunch.images / 16.0).astype(np.float32), bunch.target.astype(np.int32)


def load(num_clients: int = NUM_CLIENTS,
         seed: int = 0) -> federated_data.FederatedData:
  """Non-IID digits: `num_clients` clients (a multiple of 10, at most 1,220).

  Raises:
    ValueError: `num_clients` is not a multiple of 10 or too large.
  """
  from sklearn import model_selection  # pylint: disable=g-import-not-at-top
  x, y = load_pooled()
  x_train, x_test, y_train, y_test = model_selection.train_test_split(
      x, y, test_size=0.3, stratify=y, random_state=seed)
  return federated_data.split_one_label_per_client(
      (x_train, y_train), (x_test, y_test), num_clients, seed,
      name='digits')


def _one_digit_per_client(*, data_dir: Optional[str],
                          num_clients: Optional[int],
                          seed: int) -> federated_data.FederatedData:
  del data_dir  # Inside scikit-learn.
  return load(num_clients=num_clients or NUM_CLIENTS, seed=seed)


def _pooled(data_dir: Optional[str]) -> tuple[np.ndarray, np.ndarray]:
  del data_dir  # Inside scikit-learn.
  return load_pooled()


DATASET = dataset_registry.register(dataset.Dataset(
    name='digits',
    label="scikit-learn's bundled 8x8 digits (1,797 images)",
    file='none (offline)',
    fedhdp=_one_digit_per_client,
    robust_hdp=_pooled,
    udp=dataset.users_by_classes(_pooled, 'digits')))
