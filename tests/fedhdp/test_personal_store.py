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
"""The personal-model store."""

import os
import stat

import numpy as np
import pytest

from tff_hdp.fedhdp import personal_store


@pytest.mark.parametrize('on_disk', [False, True])
def test_gather_scatter_and_fallback(tmp_path, on_disk):
  store = personal_store.PersonalModelStore(
      5, [(2, 3), (3,)], directory=str(tmp_path) if on_disk else None)
  fallback = [np.ones((2, 3)), np.full(3, 2.0)]
  got = store.gather([1, 4], fallback)
  np.testing.assert_array_equal(got[0][0], fallback[0])
  mine = [np.arange(6.0).reshape(2, 3), np.array([7.0, 8.0, 9.0])]
  store.scatter([4], [mine])
  got = store.gather([1, 4], fallback)
  np.testing.assert_array_equal(got[1][0], mine[0])
  np.testing.assert_array_equal(got[1][1], mine[1])
  np.testing.assert_array_equal(got[0][1], fallback[1])
  stacked = store.gather_stacked([4, 1], fallback)
  np.testing.assert_array_equal(stacked[0][0], mine[0])
  np.testing.assert_array_equal(stacked[0][1], fallback[0])
  assert list(store.initialized) == [False, False, False, False, True]
  with pytest.raises(KeyError):
    store.get(1)
  with pytest.raises(IndexError):
    store.gather([5], fallback)


def test_memory_map_survives_reopen(tmp_path):
  store = personal_store.PersonalModelStore(3, [(4,)], directory=str(tmp_path))
  store.scatter([2], [[np.array([1.0, 2.0, 3.0, 4.0])]])
  store.flush()
  again = personal_store.PersonalModelStore(3, [(4,)], directory=str(tmp_path))
  np.testing.assert_array_equal(again.get(2)[0], [1.0, 2.0, 3.0, 4.0])
  assert not again.initialized[0]


def test_state_round_trip():
  store = personal_store.PersonalModelStore(3, [(2,)])
  store.scatter([0], [[np.array([5.0, 6.0])]])
  other = personal_store.PersonalModelStore(3, [(2,)])
  other.load_state(store.state())
  np.testing.assert_array_equal(other.get(0)[0], [5.0, 6.0])


def test_compact_size_for_femnist():
  # 3,400 clients x 213,630 parameters as float32, one array per tensor.
  store = personal_store.PersonalModelStore(
      3400, [(3, 3, 1, 16), (16,), (3, 3, 16, 32), (32,), (1568, 128), (128,),
             (128, 62), (62,)], directory=None)
  assert store.nbytes == 3400 * 213_630 * 4


def test_a_memory_mapped_store_is_its_owners_alone(tmp_path):
  # The models are trained on clients' data without noise: 0700 / 0600,
  # whatever the umask.
  old = os.umask(0)
  try:
    directory = tmp_path / 'checkpoints' / 'run' / 'personal_models'
    store = personal_store.PersonalModelStore(3, [(4,), (2, 2)],
                                              directory=str(directory))
    store.scatter([1], [[np.ones(4), np.ones((2, 2))]])
    store.flush()
  finally:
    os.umask(old)
  assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
  names = sorted(os.listdir(directory))
  assert names == ['initialized.npy', 'weights_0.npy', 'weights_1.npy']
  for name in names:
    assert stat.S_IMODE(os.stat(directory / name).st_mode) == 0o600


def test_a_large_store_lives_among_the_checkpoints_a_small_one_in_memory():
  # FEMNIST: 3,400 clients x 213,630 parameters x 4 bytes = 2.9 GB.
  assert personal_store.directory_for(3400, 213_630, '/out/checkpoints/run') == (
      '/out/checkpoints/run/personal_models')
  # Non-IID MNIST: 2,000 x 39,760 x 4 = 318 MB.
  assert personal_store.directory_for(2000, 39_760,
                                      '/out/checkpoints/run') is None
  # At the limit it stays in memory; one byte over, it is mapped.
  assert personal_store.directory_for(4, 1, 'c', limit_bytes=16) is None
  assert personal_store.directory_for(4, 1, 'c', limit_bytes=15) == os.path.join(
      'c', 'personal_models')
  # No checkpoint directory (a driver run from Python without one): memory.
  assert personal_store.directory_for(3400, 213_630, None) is None
