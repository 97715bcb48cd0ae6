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
"""One federated dataset: what it is, the file it needs, and how each system
loads it.

A dataset's file declares one `Dataset` per name it provides and registers
it (`dataset_registry.register`); each system's loader
(`tff_hdp.datasets.load_<system>_data`) finds it there by name. A system
field left None means the system cannot load it. The three ways:

- `fedhdp` (paper 001): a function `(*, data_dir, num_clients, seed)` to a
  `FederatedData`, each client one label (`client_labels` set) or TFF's own
  clients; `num_clients` None means the dataset's default. With `draws` it
  also takes `draw` and `examples_per_client` (`federated_data.DRAWS`).
- `robust_hdp` (paper 003): a function `(data_dir)` to every image (train
  and test pooled, float32 in [0, 1]) and its int32 label; the system cuts
  them into label-sorted shards (`federated_data.split_by_shards`).
- `udp` (paper 004): a function `(*, data_dir, num_users, seed)` to a
  `FederatedData` of users; `users_by_classes` makes pFedHN's two labels a
  user from pooled images.

TensorFlow-free.
"""

import dataclasses
from typing import Callable, Optional

import numpy as np

from tff_hdp.data import federated_data

# The systems that load datasets: `Dataset`'s fields of those names.
SYSTEMS = ('fedhdp', 'robust_hdp', 'udp')

# (x float32 [n, ...] in [0, 1], y int32 [n]): every image of a dataset.
Pooled = Callable[[Optional[str]], tuple[np.ndarray, np.ndarray]]
Loader = Callable[..., federated_data.FederatedData]


@dataclasses.dataclass(frozen=True)
class Dataset:
  """A dataset by name, and each system's way of loading it (module doc).

  Attributes:
    name: What `--dataset` and the loaders call it.
    label: What it is, one line.
    file: The file it needs ('none (offline)' if none).
    fedhdp: FedHDP's loader, or None.
    draws: Whether `fedhdp` takes `draw` and `examples_per_client`.
    robust_hdp: The pooled images Robust-HDP cuts into shards, or None.
    udp: UDP-Alg's loader of users, or None.
  """

  name: str
  label: str
  file: str
  fedhdp: Optional[Loader] = None
  draws: bool = False
  robust_hdp: Optional[Pooled] = None
  udp: Optional[Loader] = None

  def __post_init__(self):
    for field in ('name', 'label', 'file'):
      if not isinstance(getattr(self, field), str) or not getattr(self, field):
        raise TypeError(f'Dataset.{field} must be a non-empty string, got '
                        f'{getattr(self, field)!r}')
    if self.draws and self.fedhdp is None:
      raise ValueError(f'dataset {self.name}: draws=True needs a fedhdp '
                       'loader')


def pool(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray,
         y_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """Train and test images of 0-255 pixels as one float32 pool in [0, 1],
  with int32 labels."""
  x = np.concatenate([x_train, x_test]).astype(np.float32) / np.float32(255)
  return x, np.concatenate([y_train, y_test]).astype(np.int32)


def users_by_classes(pooled: Pooled, name: str) -> Loader:
  """UDP-Alg's loader splitting `pooled`'s images by
  `federated_data.split_by_classes`: two labels per user as pFedHN's split,
  log-normal sizes (sigma 0.5), 80/20 local train/test."""

  def load(*, data_dir: Optional[str], num_users: int,
           seed: int) -> federated_data.FederatedData:
    x, y = pooled(data_dir)
    return federated_data.split_by_classes(x, y, num_clients=num_users,
                                           seed=seed, name=name)

  return load
