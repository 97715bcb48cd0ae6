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

`load_federated_data(name, ...)` returns a `tff_hdp.federated_data.FederatedData`:

| name         | what it is                                        | file needed        |
|--------------|---------------------------------------------------|--------------------|
| digits       | scikit-learn's bundled 8x8 digits, non-IID split  | none (offline)     |
| mnist        | non-IID MNIST: one digit per client               | mnist.npz (Keras)  |
| skewed_mnist | the same data (opt-outs among digit-7 clients)    | mnist.npz (Keras)  |
| fmnist       | TFF EMNIST digits-only (3,383 clients)            | emnist_all.sqlite  |
| femnist      | TFF EMNIST full, 62 classes (3,400 clients)       | emnist_all.sqlite  |

This package is used from the repository checkout and is not installed (a
top-level `datasets` would collide with the Hugging Face distribution).
"""

from typing import Optional

from datasets.errors import DataFileError
from tff_hdp import federated_data

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
    num_clients: Population size for the synthetic splits (digits, mnist);
      the TFF datasets have their own clients and take the first
      `num_clients` of them if given.
    seed: Seed of the synthetic split.

  Raises:
    ValueError: Unknown dataset.
    DataFileError: The file is missing or unreadable (the message says which
      file, where, and how to get it).
  """
  if name == 'digits':
    from datasets import digits  # pylint: disable=g-import-not-at-top
    return digits.load(num_clients=num_clients or 100, seed=seed)
  if name in ('mnist', 'skewed_mnist'):
    from datasets import mnist  # pylint: disable=g-import-not-at-top
    return mnist.load(data_dir=data_dir, num_clients=num_clients or 2000,
                      seed=seed, name=name)
  if name in ('fmnist', 'femnist'):
    from datasets import emnist  # pylint: disable=g-import-not-at-top
    return emnist.load(only_digits=(name == 'fmnist'), data_dir=data_dir,
                       num_clients=num_clients, name=name)
  raise ValueError(f'unknown dataset {name!r}; allowed: {", ".join(DATASETS)}')
