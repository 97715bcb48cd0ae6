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
"""The CelebA loader on a tiny database in TFF's real format."""

import collections

import numpy as np
import pytest

from tests import tff_sql
from tff_hdp import datasets
from tff_hdp.datasets import celeba
from tff_hdp.udp import training


def _write_celeba(path, users):
  """users: {id: {split: (images uint8 [n, 84, 84, 3], smiling [n])}}."""
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  names = tff.simulation.datasets.celeba.ATTRIBUTE_NAMES
  parts = []
  for split in celeba.SPLITS:
    part = {}
    for user, splits in users.items():
      images, smiling = splits[split]
      features = collections.OrderedDict(image=images.astype(np.int64))
      for name in names:
        features[name] = (smiling.astype(np.int64) if name == 'smiling' else
                          np.zeros(len(smiling), np.int64))
      part[user] = features
    parts.append((split, part))
  tff_sql.write_client_data(path, parts)


@pytest.fixture(scope='module')
def celeba_dir(tmp_path_factory):
  directory = tmp_path_factory.mktemp('celeba')
  rng = np.random.default_rng(0)
  users = {}
  for i, user in enumerate(('alice', 'bob', 'carol')):
    users[user] = {
        split: (rng.integers(0, 256, (n, 84, 84, 3)).astype(np.uint8),
                rng.integers(0, 2, n))
        for split, n in zip(celeba.SPLITS, (4 + i, 2))}
  _write_celeba(str(directory / celeba.FILENAME), users)
  return str(directory), users


def test_users_images_and_smiling_labels(celeba_dir):
  directory, users = celeba_dir
  data = datasets.load_udp_data('celeba', num_users=2, data_dir=directory)
  assert data.num_clients == 2 and data.num_classes == 2
  assert data.input_shape == (84, 84, 3)
  for (x, y), (tx, ty), user in zip(data.train, data.test, ('alice', 'bob')):
    images, smiling = users[user][celeba.SPLITS[0]]
    np.testing.assert_allclose(x, images / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(y, smiling)
    np.testing.assert_array_equal(ty, users[user][celeba.SPLITS[1]][1])
    assert tx.dtype == np.float32
  # LeNet generates a model for 84 x 84 x 3 images.
  assert training.models.lenet_model((84, 84, 3), 2).num_parameters > 0


@pytest.mark.parametrize('damage,message', [
    ('missing', 'not found: fetch it on a connected machine'),
    ('empty', 'the file is empty'),
    ('text', 'it is not an SQLite database'),
])
def test_bad_file_is_named(tmp_path, damage, message):
  path = tmp_path / celeba.FILENAME
  if damage == 'empty':
    path.write_bytes(b'')
  elif damage == 'text':
    path.write_text('not a database' * 20)
  with pytest.raises(datasets.DataFileError) as error:
    datasets.load_udp_data('celeba', num_users=2, data_dir=str(tmp_path))
  assert str(path) in str(error.value) and message in str(error.value)
