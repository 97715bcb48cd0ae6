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
too. Pixels are scaled to [0, 1]; images are 8 x 8.
"""

import numpy as np
from sklearn import datasets as sk_datasets
from sklearn import model_selection

from tff_hdp.data import federated_data

NUM_CLIENTS = 100


def load(num_clients: int = NUM_CLIENTS,
         seed: int = 0) -> federated_data.FederatedData:
  """Non-IID digits: `num_clients` clients (a multiple of 10, at most 1,220).

  Raises:
    ValueError: `num_clients` is not a multiple of 10 or too large.
  """
  bunch = sk_datasets.load_digits()
  x = (bunch.images / 16.0).astype(np.float32)
  y = bunch.target.astype(np.int32)
  x_train, x_test, y_train, y_test = model_selection.train_test_split(
      x, y, test_size=0.3, stratify=y, random_state=seed)
  return federated_data.split_one_label_per_client(
      (x_train, y_train), (x_test, y_test), num_clients, seed,
      name='digits')
