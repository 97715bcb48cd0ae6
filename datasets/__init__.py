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
"""Each system's federated datasets: one file per dataset, one registry.

| loader                 | system (paper)   | its dataset names          |
|------------------------|------------------|----------------------------|
| `load_fedhdp_data`     | FedHDP (001)     | `names('fedhdp')`          |
| `load_robust_hdp_data` | Robust-HDP (003) | `names('robust_hdp')`      |
| `load_udp_data`        | UDP-Alg (004)    | `names('udp')`             |

Each returns a `tff_hdp.data.federated_data.FederatedData`: per-client train
and test arrays, the server test set, and for FedHDP's one-digit-per-client
splits the digit each client holds, from which the skewed opt-out is drawn.
Each looks the name up in `dataset_registry` and calls the dataset's way of
loading for its system (`dataset.Dataset`), refusing in one line a name it
cannot load. Every dataset file declares its datasets (what each is, the
file it needs, how each system loads it): `mnist_5k.py` (mnist5k, offline,
the default of all three), `digits.py` (offline), `mnist.py` (mnist,
skewed_mnist), `fashion_mnist.py`, `cifar10.py`, `emnist.py` (fmnist,
femnist), `celeba.py`. `names()` lists them in this order; a dataset's
`label` and `file` say what it is and what it needs.

Paper 003 (Robust-HDP) splits its datasets by shards
(`load_robust_hdp_data`, `tff_hdp.data.federated_data.split_by_shards`): the
dataset's train and test parts are pooled, sorted by label and cut into
shards; every client gets `shards_per_client` shards (default 10, as the
authors' `noniid(dataset, num_users, user_max_class)` with its default
`--user_max_class=10`, so most clients see most labels) and 3,000 images
(2,400 train / 600 test), or as many as the pool allows (for 20 clients:
mnist5k 250 each, digits 80).

Adding a dataset: write `datasets/<name>.py` declaring
`dataset_registry.register(dataset.Dataset(name=..., label=..., file=...,
fedhdp=..., robust_hdp=..., udp=...))`, one loader per system that can use
it (`dataset.py` gives each one's arguments), import it below (a dataset of
yours registers from your own code, before it loads), and test it
(`tests/test_dataset_registry.py` registers one from a test file alone and
runs it through the three drivers, a binary and HDP-Bench). The loaders,
the binaries' `--dataset` and HDP-Bench's populations take it by name.

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

from tff_hdp.data import federated_data
from tff_hdp.datasets import dataset
from tff_hdp.datasets import dataset_registry
from tff_hdp.datasets.errors import DataFileError
# The package's datasets register in this order, the order of every list of
# their names (`--dataset`'s, the loaders' messages).
# pylint: disable=unused-import,g-bad-import-order
from tff_hdp.datasets import mnist_5k
from tff_hdp.datasets import digits
from tff_hdp.datasets import mnist
from tff_hdp.datasets import fashion_mnist
from tff_hdp.datasets import cifar10
from tff_hdp.datasets import emnist
from tff_hdp.datasets import celeba
# pylint: enable=unused-import,g-bad-import-order

Dataset = dataset.Dataset
register = dataset_registry.register
unregister = dataset_registry.unregister  # Tests' datasets.
# The names a system ('fedhdp', 'robust_hdp', 'udp'; None: any) can load.
names = dataset_registry.names

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
    name: One of `names('fedhdp')`.
    data_dir: Directory holding the downloaded file (mnist.npz or
      emnist_all.sqlite); defaults to where Keras / TFF cache them.
    num_clients: Population size N for the one-digit-per-client splits
      (mnist5k: default 200; digits: default 100; mnist, skewed_mnist:
      default 2,000; a multiple of 10); the TFF datasets have their own
      clients and take the first `num_clients` of them (in TFF's sorted
      order) if given.
    seed: Seed of the one-digit-per-client split (the TFF datasets have
      fixed splits and ignore it).
    draw: How the one-digit-per-client splits of the datasets with `draws`
      (mnist and skewed_mnist) give clients their images
      (`federated_data.DRAWS`): 'disjoint', no image on two clients, or
      'independent', each client draws its own.
    examples_per_client: With independent draws, the training images each
      client draws (None: the disjoint split's count, 27 for mnist).

  Raises:
    ValueError: Unknown dataset, or `num_clients` out of range (one line
      naming it and the allowed values).
    DataFileError: The file is missing or unreadable (the message says which
      file, where, and how to get it).
  """
  entry = dataset_registry.get(name, 'fedhdp')
  if num_clients is not None and num_clients < 1:
    raise ValueError(f'num_clients must be >= 1, got {num_clients}')
  drawn = ' and '.join(n for n in names('fedhdp')
                       if dataset_registry.get(n).draws) or 'no dataset'
  if draw != 'disjoint' and not entry.draws:
    raise ValueError(f'draw={draw!r} is for {drawn} only; '
                     f'{name} takes the default, disjoint')
  if examples_per_client is not None and draw != 'independent':
    raise ValueError(f'examples_per_client is for independent draws of '
                     f"{drawn} (draw='independent')")
  draws = (dict(draw=draw, examples_per_client=examples_per_client)
           if entry.draws else {})
  return entry.fedhdp(data_dir=data_dir, num_clients=num_clients, seed=seed,
                      **draws)


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
    name: One of `names('robust_hdp')`.
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
  entry = dataset_registry.get(name, 'robust_hdp')
  if num_clients < 1:
    raise ValueError(f'num_clients must be >= 1, got {num_clients}')
  if shards_per_client < 1:
    raise ValueError(f'shards_per_client must be >= 1, got {shards_per_client}')
  x, y = entry.robust_hdp(data_dir)
  if examples_per_client is None:
    examples_per_client = min(
        SHARD_EXAMPLES_PER_CLIENT,
        (len(y) // num_clients) // shards_per_client * shards_per_client)
  return federated_data.split_by_shards(
      x, y, num_clients=num_clients, examples_per_client=examples_per_client,
      shards_per_client=shards_per_client, seed=seed, name=name)


def load_udp_data(name: str,
                  *,
                  num_users: int,
                  data_dir: Optional[str] = None,
                  seed: int = 0) -> federated_data.FederatedData:
  """Paper 004's (UDP-Alg) users of dataset `name`, one of `names('udp')`.

  mnist5k and digits (offline) and CIFAR-10: `dataset.users_by_classes`
  (`federated_data.split_by_classes`), two labels per user as pFedHN's
  split, sizes non-IID (log-normal, sigma 0.5), 80/20 local train/test;
  mnist5k pools its 5,000 images, digits its 1,797, CIFAR-10 its 60,000.
  FEMNIST: TFF's EMNIST writers (`emnist.load`), the first `num_users` (the
  paper: 3,400). CelebA: TFF's celebrities, split by examples, label
  `smiling` (`celeba.load`).
  """
  entry = dataset_registry.get(name, 'udp')
  return entry.udp(data_dir=data_dir, num_users=num_users, seed=seed)
