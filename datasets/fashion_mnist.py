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
"""Fashion-MNIST (Xiao, Rasul and Vollgraf 2017): the authors' four .gz files.

Paper 003 (Robust-HDP) uses Fashion-MNIST (unlike paper 001, whose "FMNIST" is
EMNIST digits). The dataset is four gzipped IDX files:

  train-images-idx3-ubyte.gz  train-labels-idx1-ubyte.gz
  t10k-images-idx3-ubyte.gz   t10k-labels-idx1-ubyte.gz

Without --data_dir they are read from Keras' cache,
`~/.keras/datasets/fashion-mnist/`, if it holds them, else from where
Debian's package `dataset-fashion-mnist` installs them,
`/usr/share/datasets/fashion-mnist/` (`make install` installs it where
`apt-get` can run as root; the same files, 60,000 + 10,000 images).

IDX: a big-endian header (two zero bytes, the type code 0x08 for unsigned
bytes, the number of dimensions, then each dimension as uint32), then the
data. A missing, truncated or malformed file raises `DataFileError` naming
the file and the command that fetches it. Registered as the dataset
`fashion_mnist` of Robust-HDP, which pools the 70,000 images (`DATASET`).
"""

import gzip
import os
import shlex
import struct
from typing import Optional

import numpy as np

from tff_hdp.datasets import dataset
from tff_hdp.datasets import dataset_registry
from tff_hdp.datasets.errors import DataFileError

SUBDIR = 'fashion-mnist'
URL = 'https://storage.googleapis.com/tensorflow/tf-keras-datasets/'
FILES = {
    'x_train': 'train-images-idx3-ubyte.gz',
    'y_train': 'train-labels-idx1-ubyte.gz',
    'x_test': 't10k-images-idx3-ubyte.gz',
    'y_test': 't10k-labels-idx1-ubyte.gz',
}
IMAGE_SHAPE = (28, 28)
NUM_CLASSES = 10


# Where Debian's package `dataset-fashion-mnist` puts the four files.
DEBIAN_DIR = '/usr/share/datasets/fashion-mnist'
DEBIAN_PACKAGE = 'dataset-fashion-mnist'


def keras_dir() -> str:
  """Where Keras caches it, `~/.keras/datasets/fashion-mnist`."""
  return os.path.join(os.path.expanduser('~'), '.keras', 'datasets', SUBDIR)


def _holds_files(directory: str) -> bool:
  return all(os.path.isfile(os.path.join(directory, name))
             for name in FILES.values())


def default_dir() -> str:
  """Keras' cache if it holds the four files, else Debian's folder."""
  keras = keras_dir()
  return keras if _holds_files(keras) else DEBIAN_DIR


def fetch_command(data_dir: str) -> str:
  """The shell command that downloads the four files into `data_dir`."""
  target = shlex.quote(os.path.abspath(data_dir))
  return (f'for f in {" ".join(FILES.values())}; do curl -fL --create-dirs '
          f'-o {target}/$f {URL}$f; done')


def _read_idx(path: str, dims: int) -> np.ndarray:
  with gzip.open(path, 'rb') as f:
    data = f.read()
  if len(data) < 4 + 4 * dims:
    raise ValueError('too short for an IDX header')
  zero, dtype, ndim = struct.unpack('>HBB', data[:4])
  if zero != 0 or dtype != 0x08 or ndim != dims:
    raise ValueError(f'not an IDX file of unsigned bytes with {dims} '
                     'dimension(s)')
  shape = struct.unpack('>' + 'I' * dims, data[4:4 + 4 * dims])
  body = np.frombuffer(data, np.uint8, offset=4 + 4 * dims)
  if body.size != int(np.prod(shape)):
    raise ValueError(f'holds {body.size} bytes for shape {list(shape)}')
  return body.reshape(shape)


def load_arrays(data_dir: Optional[str] = None):
  """(x_train, y_train, x_test, y_test), images uint8 [n, 28, 28].

  Raises:
    DataFileError: A file is missing or unusable.
  """
  given = data_dir is not None
  data_dir = data_dir or default_dir()
  how = (f'fetch them (the files Keras downloads) on a connected machine '
         f'with: {fetch_command(data_dir)} then copy them to '
         f'{os.path.abspath(data_dir)} here (or pass --data_dir)')
  if not given:
    how = (f'install them with: sudo apt-get install {DEBIAN_PACKAGE} (it puts '
           f'them in {DEBIAN_DIR}), or {how}')
  arrays = {}
  for key, name in FILES.items():
    path = os.path.join(data_dir, name)
    if not os.path.isfile(path):
      raise DataFileError(f'Fashion-MNIST file {path} not found: {how}')
    try:
      arrays[key] = _read_idx(path, 3 if key.startswith('x') else 1)
    except (OSError, EOFError, ValueError, struct.error) as e:
      raise DataFileError(f'Fashion-MNIST file {path} is unusable ({e}); '
                          f'delete it and {how}') from None
  for part in ('train', 'test'):
    x, y = arrays[f'x_{part}'], arrays[f'y_{part}']
    if x.shape[1:] != IMAGE_SHAPE or y.shape != x.shape[:1] or (
        y.size and y.max() >= NUM_CLASSES):
      raise DataFileError(
          f'Fashion-MNIST files of {part} in {data_dir} do not match (images '
          f'{list(x.shape)}, labels {list(y.shape)}); delete them and {how}')
  return arrays['x_train'], arrays['y_train'], arrays['x_test'], arrays['y_test']


def _pooled(data_dir: Optional[str]) -> tuple[np.ndarray, np.ndarray]:
  return dataset.pool(*load_arrays(data_dir))


DATASET = dataset_registry.register(dataset.Dataset(
    name='fashion_mnist', label='Fashion-MNIST (70,000 images, 10 classes)',
    file='four .gz files (Debian: none)', robust_hdp=_pooled))
