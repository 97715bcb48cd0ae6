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

The loaders of `tff_hdp.datasets` (the repository's `datasets/` folder)
return a `FederatedData`: per-client train and test arrays, the server test
set, and what the skewed opt-out needs (the label each client holds, for
single-label splits).
TensorFlow-free.
"""

import dataclasses
from typing import Optional, Sequence

import numpy as np

ClientArrays = tuple[np.ndarray, np.ndarray]  # (x, y)

# How a one-label-per-client split gives each client its training samples of
# its label: 'disjoint', no sample on two clients (the default); or
# 'independent', each client draws its own without replacement, so clients
# may share samples and some go unused. Paper 001 says only that "each client
# is assigned samples randomly from the subsets of samples each with a
# single digit", which reads either way.
DRAWS = ('disjoint', 'independent')


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
    draw: For single-label splits, how clients' training samples were drawn
      from their label's (one of `DRAWS`); None otherwise.
  """

  name: str
  input_shape: tuple[int, ...]
  num_classes: int
  train: Sequence[ClientArrays]
  test: Sequence[ClientArrays]
  server_test: ClientArrays
  client_labels: Optional[np.ndarray] = None
  draw: Optional[str] = None

  @property
  def num_clients(self) -> int:
    return len(self.train)

  def clients_with_label(self, label: int) -> np.ndarray:
    if self.client_labels is None:
      raise ValueError(f'dataset {self.name!r} is not split one label per '
                       'client, so a skewed opt-out is not defined for it')
    return np.flatnonzero(self.client_labels == label)


def _from_clients(name: str, x: np.ndarray, num_classes: int,
                  train: Sequence[ClientArrays], test: Sequence[ClientArrays],
                  server_test: Optional[ClientArrays] = None,
                  client_labels: Optional[np.ndarray] = None,
                  draw: Optional[str] = None) -> FederatedData:
  """The `FederatedData` of the clients' `train` and `test` data, split from
  examples like `x`; the server test set is `server_test`, else the union of
  the clients' test data."""
  if server_test is None:
    server_test = (np.concatenate([t[0] for t in test]),
                   np.concatenate([t[1] for t in test]))
  return FederatedData(name=name, input_shape=tuple(x.shape[1:]),
                       num_classes=num_classes, train=train, test=test,
                       server_test=server_test, client_labels=client_labels,
                       draw=draw)


def _one_label_train_count(y_train: np.ndarray, labels: np.ndarray,
                           per_label: int, draw: str,
                           examples_per_client: Optional[int]) -> int:
  """The training samples of each client of `split_one_label_per_client`
  (the smallest label's count over its `per_label` clients, or
  `examples_per_client` for independent draws), or a ValueError."""
  smallest = min(np.sum(y_train == c) for c in labels)
  train_count = smallest // per_label
  if train_count < 1:
    raise ValueError(f'too many clients ({len(labels) * per_label}) for '
                     f'{len(y_train)} training samples')
  if examples_per_client is not None:
    if draw != 'independent':
      raise ValueError('examples_per_client is for independent draws; '
                       f'disjoint draws give each client {train_count}')
    if not 1 <= examples_per_client <= smallest:
      raise ValueError('examples_per_client must be in [1, '
                       f'{smallest}] (the smallest label\'s count), got '
                       f'{examples_per_client}')
    train_count = int(examples_per_client)
  return train_count


def split_one_label_per_client(train: tuple[np.ndarray, np.ndarray],
                               test: tuple[np.ndarray, np.ndarray],
                               num_clients: int, seed: int,
                               name: str,
                               draw: str = 'disjoint',
                               examples_per_client: Optional[int] = None
                               ) -> FederatedData:
  """The non-IID MNIST split of paper 001 (Section 5.1, Table 5).

  Clients are spread evenly over the labels (client k holds label k mod C);
  every client gets the same number of training samples of its label: the
  smallest label's count over its clients. `draw` (one of `DRAWS`) says
  whether clients' samples are disjoint or drawn by each client
  independently. The papers do not say how local test data is made for
  this split; following the spec, each label's test samples are split evenly
  among that label's clients. The server test set is the whole test set.

  Args:
    train, test: The centralised dataset, (x_train, y_train) and (x_test,
      y_test).
    num_clients: N, a multiple of the number of labels.
    seed: Seed of the shuffles.
    name: Dataset name to record.
    draw: One of `DRAWS`.
    examples_per_client: Training samples each client draws, with
      independent draws (paper 001 says only that the number is the same for
      every client); None: the disjoint split's count, the smallest label's
      count over its clients.

  Returns:
    A `FederatedData` with `client_labels` and `draw` set.
  """
  (x_train, y_train), (x_test, y_test) = train, test
  if draw not in DRAWS:
    raise ValueError(f'draw must be one of {", ".join(DRAWS)}, got {draw!r}')
  labels = np.unique(y_train)
  num_labels = len(labels)
  if num_clients % num_labels:
    raise ValueError(f'num_clients must be a multiple of {num_labels} for a '
                     f'one-label-per-client split, got {num_clients}')
  per_label = num_clients // num_labels
  train_count = _one_label_train_count(y_train, labels, per_label, draw,
                                       examples_per_client)
  rng = np.random.default_rng(seed)
  # Independent draws have a stream of their own, so that every other part
  # of the split (the test sets) is the disjoint split's.
  draw_rng = np.random.default_rng([seed, 1])
  client_train = [None] * num_clients
  client_test = [None] * num_clients
  client_labels = np.zeros(num_clients, np.int32)
  for li, c in enumerate(labels):
    idx = rng.permutation(np.flatnonzero(y_train == c))
    test_idx = np.array_split(rng.permutation(np.flatnonzero(y_test == c)),
                              per_label)
    for k in range(per_label):
      client = k * num_labels + li
      if draw == 'disjoint':
        take = idx[k * train_count:(k + 1) * train_count]
      else:
        take = draw_rng.choice(idx, train_count, replace=False)
      client_train[client] = (x_train[take],
                              y_train[take].astype(np.int32))
      client_test[client] = (x_test[test_idx[k]],
                             y_test[test_idx[k]].astype(np.int32))
      client_labels[client] = c
  return _from_clients(name, x_train, int(labels.max()) + 1, client_train,
                       client_test,
                       server_test=(x_test, y_test.astype(np.int32)),
                       client_labels=client_labels, draw=draw)


def split_by_shards(x: np.ndarray, y: np.ndarray, *, num_clients: int,
                    examples_per_client: int, shards_per_client: int = 10,
                    test_fraction: float = 0.2, seed: int = 0,
                    name: str) -> FederatedData:
  """The non-IID "shards" split of paper 003's code (after McMahan et al.).

  The pooled examples are sorted by label and cut into num_clients x
  shards_per_client shards of examples_per_client / shards_per_client
  consecutive examples; each client gets `shards_per_client` shards drawn at
  random, shuffled, and split into the first (1 - test_fraction) for
  training and the rest as its local test data (paper 003: 3,000 images per
  client, 2,400 train / 600 test). The server test set is the union of the
  clients' test data (paper 003 reports the mean of the clients' local test
  accuracies).

  The authors' code (Saber-mm/HDPFL, `utils/sampling.py`, `noniid(dataset,
  num_users, user_max_class)`, run with its default `--user_max_class=10`)
  gives every client 10 shards, so most clients see most labels: the
  default here. McMahan et al. (2017) give 2 shards, so about 2 labels.

  Args:
    x, y: The pooled dataset (e.g. a dataset's train and test parts).
    num_clients: n >= 1.
    examples_per_client: Examples per client (a multiple of
      shards_per_client); n x examples_per_client <= len(y).
    shards_per_client: Shards each client gets.
    test_fraction: Share of a client's examples kept as its test data.
    seed: Seed of the shard assignment and shuffles.
    name: Dataset name to record.
  """
  if num_clients < 1:
    raise ValueError(f'num_clients must be >= 1, got {num_clients}')
  if shards_per_client < 1 or examples_per_client % shards_per_client:
    raise ValueError(f'examples_per_client ({examples_per_client}) must be a '
                     f'positive multiple of shards_per_client '
                     f'({shards_per_client})')
  if not 0 < test_fraction < 1:
    raise ValueError(f'test_fraction must be in (0, 1), got {test_fraction}')
  if num_clients * examples_per_client > len(y):
    raise ValueError(f'{num_clients} clients x {examples_per_client} examples '
                     f'need more than the {len(y)} available')
  rng = np.random.default_rng(seed)
  # Sorted by label; a seeded shuffle first breaks ties randomly.
  order = rng.permutation(len(y))
  order = order[np.argsort(y[order], kind='stable')]
  shard_size = examples_per_client // shards_per_client
  num_shards = num_clients * shards_per_client
  # Spread the shards over the whole sorted set so every label is used.
  starts = np.linspace(0, len(y) - shard_size, num_shards).astype(np.int64)
  assignment = rng.permutation(num_shards).reshape(num_clients,
                                                   shards_per_client)
  num_train = int(round(examples_per_client * (1 - test_fraction)))
  train, test = [], []
  for shards in assignment:
    idx = np.concatenate([order[starts[s]:starts[s] + shard_size]
                          for s in shards])
    idx = rng.permutation(idx)
    train.append((x[idx[:num_train]], y[idx[:num_train]].astype(np.int32)))
    test.append((x[idx[num_train:]], y[idx[num_train:]].astype(np.int32)))
  return _from_clients(name, x, int(y.max()) + 1, train, test)


def split_by_classes(x: np.ndarray, y: np.ndarray, *, num_clients: int,
                     classes_per_client: int = 2, size_sigma: float = 0.5,
                     test_fraction: float = 0.2, seed: int = 0,
                     name: str) -> FederatedData:
  """A split non-IID in labels and in size, as paper 004 (UDP-Alg) needs.

  Each client holds `classes_per_client` distinct labels (pFedHN's CIFAR-10
  split: 2) drawn at random, every label going to at least one client when
  num_clients x classes_per_client allows. A client's size weight is drawn
  from a log-normal of scale `size_sigma` (paper 004: "non-IID in the number
  of samples"; it gives no distribution, so this is ours); each label's
  examples are shared among its clients in proportion to their weights. Each
  client's examples are shuffled and split into train and local test
  (`test_fraction`, at least one example each); the server test set is the
  union of the local test sets.
  """
  labels = np.unique(y)
  if num_clients < 1:
    raise ValueError(f'num_clients must be >= 1, got {num_clients}')
  if not 1 <= classes_per_client <= len(labels):
    raise ValueError(f'classes_per_client must be in [1, {len(labels)}], got '
                     f'{classes_per_client}')
  if not 0 < test_fraction < 1:
    raise ValueError(f'test_fraction must be in (0, 1), got {test_fraction}')
  rng = np.random.default_rng(seed)
  # Labels dealt round-robin from a shuffled deck: every label is used and
  # no client gets one twice.
  deck = np.concatenate([rng.permutation(labels) for _ in range(
      -(-num_clients * classes_per_client // len(labels)))])
  held = deck[:num_clients * classes_per_client].reshape(
      num_clients, classes_per_client)
  for row in held:  # A repeat can only straddle a deck boundary: redraw it.
    while len(set(row)) < classes_per_client:
      row[:] = rng.choice(labels, classes_per_client, replace=False)
  weights = rng.lognormal(0.0, size_sigma, num_clients)
  parts = [[] for _ in range(num_clients)]
  for label in labels:
    owners = np.flatnonzero((held == label).any(axis=1))
    if not len(owners):
      continue
    idx = rng.permutation(np.flatnonzero(y == label))
    share = weights[owners] / weights[owners].sum()
    cuts = np.round(np.cumsum(share)[:-1] * len(idx)).astype(np.int64)
    for owner, piece in zip(owners, np.split(idx, cuts)):
      parts[owner].append(piece)
  train, test = [], []
  for pieces in parts:
    idx = rng.permutation(np.concatenate(pieces))
    if len(idx) < 2:
      raise ValueError(f'{num_clients} clients are too many for {len(y)} '
                       'examples: a client got fewer than 2')
    num_test = min(max(1, int(round(len(idx) * test_fraction))), len(idx) - 1)
    train.append((x[idx[num_test:]], y[idx[num_test:]].astype(np.int32)))
    test.append((x[idx[:num_test]], y[idx[:num_test]].astype(np.int32)))
  return _from_clients(name, x, int(labels.max()) + 1, train, test)
