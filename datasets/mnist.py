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
"""Non-IID MNIST of paper 001 from the file Keras uses, `mnist.npz`.

The file holds `x_train` (60000x28x28 uint8), `y_train`, `x_test`,
`y_test`, as `tf.keras.datasets.mnist.load_data()` downloads it to
`~/.keras/datasets/mnist.npz`. Pixels are scaled to [0, 1]. The split is one
digit per client with equal counts (`split_one_label_per_client`).
"""

import os
import zipfile
from typing import Optional

import numpy as np

from datasets.errors import DataFileError
from tff_hdp import federated_data

FILENAME = 'mnist.npz'
FETCH_COMMAND = ('python -c "import tensorflow as tf; '
                 'tf.keras.datasets.mnist.load_data()"')
_KEYS = ('x_train', 'y_train', 'x_test', 'y_test')


def default_dir() -> str:
  return os.path.join(os.path.expanduser('~'), '.keras', 'datasets')


def load_arrays(data_dir: Optional[str] = None):
  """Reads (x_train, y_train, x_test, y_test) from `data_dir/mnist.npz`."""
  data_dir = data_dir or default_dir()
  path = os.path.join(data_dir, FILENAME)
  how = (f'fetch it on a connected machine with {FETCH_COMMAND} (it lands in '
         f'{default_dir()}) and copy it to {data_dir}, or pass --data_dir')
  if not os.path.isfile(path):
    raise DataFileError(f'MNIST file {path} not found: {how}')
  try:
    with np.load(path) as f:
      arrays = tuple(np.asarray(f[k]) for k in _KEYS)
  except (KeyError, ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
    raise DataFileError(f'MNIST file {path} is unreadable or incomplete '
                        f'({type(e).__name__}); {how}') from None
  return arrays


def load(data_dir: Optional[str] = None,
         num_clients: int = 2000,
         seed: int = 0,
         name: str = 'mnist') -> federated_data.FederatedData:
  x_train, y_train, x_test, y_test = load_arrays(data_dir)
  scale = lambda x: (x.astype(np.float32) / 255.0)
  return federated_data.split_one_label_per_client(
      scale(x_train), y_train, scale(x_test), y_test, num_clients, seed, name)
