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
"""Federated datasets of paper 001 (Table 5) and the offline default.

`load_federated_data(name, ...)` returns a
`tff_hdp.data.federated_data.FederatedData`: per-client train and test arrays, the
server test set, and for the one-digit-per-client splits the digit each
client holds, from which the skewed opt-out is drawn.

| name         | what it is                                        | file needed        |
|--------------|---------------------------------------------------|--------------------|
| digits       | scikit-learn's bundled 8x8 digits, non-IID split  | none (offline)     |
| mnist        | non-IID MNIST: one digit per client (N = 2,000)   | mnist.npz (Keras)  |
| skewed_mnist | the same data (opt-outs among digit-7 clients)    | mnist.npz (Keras)  |
| fmnist       | TFF EMNIST digits-only (3,383 clients)            | emnist_all.sqlite  |
| femnist      | TFF EMNIST full, 62 classes (3,400 clients)       | emnist_all.sqlite  |

Where each file comes from, where it goes and the command that fetches it on
a connected machine are in `datasets/mnist.py` and `datasets/emnist.py`;
a missing or damaged file raises `DataFileError` saying the same.

This package is used from the repository checkout and is not installed (a
top-level `datasets` would collide with the Hugging Face distribution).
"""

from typing import Optional

from datasets.errors import DataFileError
from tff_hdp.data import federated_data

DATASETS = ('digits', 'mnist', 'skewed_mnist', 'fmnist', 'femnist')


def load_federated_data(name: str,
                        *,
                        data_dir: Optional[str] = None,
                        num_clients: Optional[int] = None,
                        seed: int = 0) -> federated_data.FederatedData:
  """Loads the federated dataset called `name`.

  Args:
    name: One of `DATASETS`.
    data_dir: Directory holding the downloaded file (mnist.npz or
      emnist_all.sqlite); defaults to where Keras / TFF cache them.
    num_clients: Population size N for the one-digit-per-client splits
      (digits: default 100; mnist, skewed_mnist: default 2,000; a multiple of
      10); the TFF datasets have their own clients and take the first
      `num_clients` of them (in TFF's sorted order) if given.
    seed: Seed of the one-digit-per-client split (the TFF datasets have
      fixed splits and ignore it).

  Raises:
    ValueError: Unknown dataset, or `num_clients` out of range (one line
      naming it and the allowed values).
    DataFileError: The file is missing or unreadable (the message says which
      file, where, and how to get it).
  """
  if name not in DATASETS:
    raise ValueError(
        f'unknown dataset {name!r}; allowed: {", ".join(DATASETS)}')
  if num_clients is not None and num_clients < 1:
    raise ValueError(f'num_clients must be >= 1, got {num_clients}')
  if name == 'digits':
    from datasets import digits  # pylint: disable=g-import-not-at-top
    return digits.load(num_clients=num_clients or digits.NUM_CLIENTS,
                       seed=seed)
  if name in ('mnist', 'skewed_mnist'):
    from datasets import mnist  # pylint: disable=g-import-not-at-top
    return mnist.load(data_dir=data_dir,
                      num_clients=num_clients or mnist.NUM_CLIENTS,
                      seed=seed, name=name)
  from datasets import emnist  # pylint: disable=g-import-not-at-top
  return emnist.load(only_digits=(name == 'fmnist'), data_dir=data_dir,
                     num_clients=num_clients, name=name)
