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
"""The in-memory form of a federated dataset that training consumes.

Loaders in the repository's `datasets/` package return a `FederatedData`:
per-client train and test arrays, the server test set, and what the skewed
opt-out needs (the label each client holds, for single-label splits).
TensorFlow-free.
"""

import dataclasses
from typing import Optional, Sequence

import numpy as np

ClientArrays = tuple[np.ndarray, np.ndarray]  # (x, y)


@dataclasses.dataclass
class FederatedData:
  """A federated dataset held as numpy arrays.

  Attributes:
    name: Dataset name.
    input_shape: Shape of one example.
    num_classes: Number of labels.
    train: Per client, (x, y) of its training data.
    test: Per client, (x, y) of its local test data.
    server_test: (x, y) of the server's test set.
    client_labels: For single-label (non-IID) splits, the label each client
      holds; None otherwise. The skewed opt-out draws among label-7 clients.
  """

  name: str
  input_shape: tuple[int, ...]
  num_classes: int
  train: Sequence[ClientArrays]
  test: Sequence[ClientArrays]
  server_test: ClientArrays
  client_labels: Optional[np.ndarray] = None

  @property
  def num_clients(self) -> int:
    return len(self.train)

  def clients_with_label(self, label: int) -> np.ndarray:
    if self.client_labels is None:
      raise ValueError(f'dataset {self.name!r} is not split one label per '
                       'client, so a skewed opt-out is not defined for it')
    return np.flatnonzero(self.client_labels == label)


def split_one_label_per_client(x_train: np.ndarray, y_train: np.ndarray,
                               x_test: np.ndarray, y_test: np.ndarray,
                               num_clients: int, seed: int,
                               name: str) -> FederatedData:
  """The non-IID MNIST split of paper 001 (Section 5.1, Table 5).

  Clients are spread evenly over the labels (client k holds label k mod C);
  every client gets the same number of training samples of its label, drawn
  without replacement. The papers do not say how local test data is made for
  this split; following the spec, each label's test samples are split evenly
  among that label's clients. The server test set is the whole test set.

  Args:
    x_train, y_train, x_test, y_test: The centralised dataset.
    num_clients: N, a multiple of the number of labels.
    seed: Seed of the shuffles.
    name: Dataset name to record.

  Returns:
    A `FederatedData` with `client_labels` set.
  """
  labels = np.unique(y_train)
  num_labels = len(labels)
  if num_clients % num_labels:
    raise ValueError(f'num_clients must be a multiple of {num_labels} for a '
                     f'one-label-per-client split, got {num_clients}')
  per_label = num_clients // num_labels
  train_count = min(np.sum(y_train == c) for c in labels) // per_label
  if train_count < 1:
    raise ValueError(f'too many clients ({num_clients}) for {len(y_train)} '
                     'training samples')
  rng = np.random.default_rng(seed)
  train = [None] * num_clients
  test = [None] * num_clients
  client_labels = np.zeros(num_clients, np.int32)
  for li, c in enumerate(labels):
    idx = rng.permutation(np.flatnonzero(y_train == c))
    test_idx = np.array_split(rng.permutation(np.flatnonzero(y_test == c)),
                              per_label)
    for k in range(per_label):
      client = k * num_labels + li
      take = idx[k * train_count:(k + 1) * train_count]
      train[client] = (x_train[take], y_train[take].astype(np.int32))
      test[client] = (x_test[test_idx[k]], y_test[test_idx[k]].astype(np.int32))
      client_labels[client] = c
  return FederatedData(
      name=name,
      input_shape=tuple(x_train.shape[1:]),
      num_classes=int(labels.max()) + 1,
      train=train,
      test=test,
      server_test=(x_test, y_test.astype(np.int32)),
      client_labels=client_labels)
