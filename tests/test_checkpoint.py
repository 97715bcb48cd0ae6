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
"""Checkpoints: a saved run comes back exactly (its mechanism key too), a
foreign one is refused, and they are secret material: 0600 files in 0700
folders whatever the umask, deleted once the run has finished."""

import collections
import dataclasses
import os
import stat
from typing import Optional

import numpy as np
import pytest

from tests import binaries
from tff_hdp import checkpoint
from tff_hdp import round_loop
from tff_hdp.privacy import mechanism_key
from tff_hdp.privacy import privacy_ledger


class _Store:
  """Two clients' models, as `checkpoint` uses a per-client store."""

  num_clients = 2
  shapes = ((3,), (2, 2))

  def __init__(self, fill=0.0):
    self.initialized = np.array([True, False])
    self.weights = [np.full((2,) + s, fill, np.float32) for s in self.shapes]

  def state(self, copy=True):
    del copy
    return collections.OrderedDict(initialized=self.initialized,
                                   weights=self.weights)

  def load_state(self, state):
    self.initialized = np.asarray(state['initialized'])
    self.weights = [np.asarray(w) for w in state['weights']]


_KEY = np.array([-3, 2**62 + 5], np.int64)


def _state(scale, key=_KEY):
  """A state with arrays of every kind, its noise key `key`."""
  return collections.OrderedDict(
      noise_key=np.asarray(key),
      weights=[np.arange(6, dtype=np.float32).reshape(2, 3) * scale,
               np.float32(scale)],
      round_num=np.int32(3), key=np.array([7, 9], np.int64),
      inner=collections.OrderedDict(clip=np.float64(0.25 * scale)))


def _initial(key):
  return _state(0.0, key)


def test_save_then_restore_is_exact(tmp_path):
  ledger = privacy_ledger.PrivacyLedger()
  ledger.step('private', 0.1, 1.3, count=2)
  saved = checkpoint.Checkpointer(str(tmp_path), '{"a": 1}')
  store = _Store(fill=1.5)
  history = [{'round': 1, 'accuracy': 0.5}]
  saved.save(4, _KEY, _state(2.0), store, ledger, history)

  other_store = _Store()
  templates = []

  def initial_state(key):
    templates.append(key)
    return _state(0.0, key)

  round_num, key, state, restored_ledger, restored_history = (
      checkpoint.Checkpointer(str(tmp_path), '{"a": 1}').restore(
          initial_state, other_store))
  assert round_num == 4
  # The run's key comes back, and the template of the state is built with it.
  np.testing.assert_array_equal(key, _KEY)
  assert key.dtype == np.int64
  np.testing.assert_array_equal(templates[0], _KEY)
  np.testing.assert_array_equal(state['noise_key'], _KEY)
  assert restored_history == history
  assert restored_ledger.to_json() == ledger.to_json()
  expected = _state(2.0)
  np.testing.assert_array_equal(state['weights'][0], expected['weights'][0])
  assert state['weights'][1] == np.float32(2.0)
  assert state['weights'][1].dtype == np.float32
  assert state['round_num'] == 3 and state['round_num'].dtype == np.int32
  np.testing.assert_array_equal(state['key'], [7, 9])
  assert state['key'].dtype == np.int64
  assert state['inner']['clip'] == 0.5
  np.testing.assert_array_equal(other_store.initialized, [True, False])
  for w in other_store.weights:
    np.testing.assert_array_equal(w, 1.5)


def test_nothing_to_restore(tmp_path):
  assert checkpoint.Checkpointer(str(tmp_path), '{}').restore(
      _initial, None) is None


@pytest.mark.parametrize('config,with_store,message', [
    # Another configuration.
    ('{"a": 2}', False, 'another configuration'),
    # Another state layout (a per-client store this run has and it has not).
    ('{"a": 1}', True, 'holds 6 arrays where this run has 9'),
])
def test_a_foreign_checkpoint_is_refused(tmp_path, config, with_store,
                                         message):
  checkpoint.Checkpointer(str(tmp_path), '{"a": 1}').save(
      1, _KEY, _state(1.0), None, privacy_ledger.PrivacyLedger(), [])
  with pytest.raises(checkpoint.CheckpointMismatchError, match=message):
    checkpoint.Checkpointer(str(tmp_path), config).restore(
        _initial, _Store() if with_store else None)


@dataclasses.dataclass(frozen=True)
class _Config:
  """A run's configuration as `start_run` reads it."""
  algorithm: str = 'test'
  mechanism_seed: Optional[int] = None


def _start(tmp_path, config):
  options = round_loop.Options(checkpoint_dir=str(tmp_path),
                               checkpoint_every=1)
  return checkpoint.start_run(config, _initial, total_rounds=3,
                              options=options)


def test_a_new_run_draws_a_secret_key_and_a_resumed_run_keeps_it(tmp_path):
  first = _start(tmp_path / 'a', _Config())
  second = _start(tmp_path / 'b', _Config())
  # Two new runs: two keys from the operating system's entropy.
  assert not np.array_equal(first.key, second.key)
  np.testing.assert_array_equal(first.state['noise_key'], first.key)
  first.end_round(1, {'round': 1})
  resumed = _start(tmp_path / 'a', _Config())
  np.testing.assert_array_equal(resumed.key, first.key)
  assert list(resumed.rounds) == [1, 2]


def test_a_mechanism_seed_gives_the_same_key_every_time(tmp_path):
  a = _start(tmp_path / 'a', _Config(mechanism_seed=5))
  b = _start(tmp_path / 'b', _Config(mechanism_seed=5))
  np.testing.assert_array_equal(a.key, b.key)
  np.testing.assert_array_equal(a.key, mechanism_key.new_key(5))


def _modes(directory) -> dict[str, int]:
  """{path relative to `directory`: permission bits} of it and all below."""
  modes = {'.': stat.S_IMODE(os.stat(directory).st_mode)}
  for root, folders, files in os.walk(directory):
    for name in folders + files:
      path = os.path.join(root, name)
      modes[os.path.relpath(path, directory)] = stat.S_IMODE(
          os.stat(path).st_mode)
  return modes


def test_checkpoints_are_private_whatever_the_umask(tmp_path):
  directory = tmp_path / 'run'
  previous = os.umask(0)  # The most open: files 0666, folders 0777.
  try:
    saved = checkpoint.Checkpointer(str(directory), '{}')
    assert _modes(directory) == {'.': 0o700}  # Before TFF writes in it.
    for round_num in (1, 2):
      saved.save(round_num, _KEY, _state(1.0), _Store(),
                 privacy_ledger.PrivacyLedger(), [])
  finally:
    os.umask(previous)
  modes = _modes(directory)
  folders = {p for p in modes if os.path.isdir(directory / p)}
  assert 'program_state_2' in folders and len(modes) > len(folders)
  assert {modes[p] for p in folders} == {0o700}
  assert {m for p, m in modes.items() if p not in folders} == {0o600}


class _Rounds(round_loop.System):
  """A system whose state is `_state(round)` under the run's key."""

  def start(self, key):
    return _state(0.0, key)

  def run_round(self, state, round_num):
    return _state(round_num + 1.0, state['noise_key']), {}

  def account(self, ledger, round_num):
    ledger.step('private', 0.5, 1.0)

  def evaluate(self, state, ledger):
    return {}


class _Killed(Exception):
  pass


def _kill_after(round_to_kill):
  def on_round(round_num, entry):
    del entry
    if round_num == round_to_kill:
      raise _Killed()
  return on_round


def _loop(directory, **options):
  return round_loop.run(_Rounds(), _Config(), total_rounds=3, eval_every=1,
                        options=round_loop.Options(
                            checkpoint_dir=str(directory), checkpoint_every=1,
                            **options))


def test_a_finished_run_deletes_its_key_and_a_killed_one_resumes(tmp_path):
  directory = tmp_path / 'run'
  with pytest.raises(_Killed):
    _loop(directory, on_round=_kill_after(2))
  # Killed: the checkpoint, with the run's key, is kept to resume from.
  (key,) = [binaries.saved_key(directory)]
  assert sorted(os.listdir(directory)) == ['program_state_2']
  resumed = _loop(directory)
  np.testing.assert_array_equal(resumed.key, key)  # The same run, resumed.
  np.testing.assert_array_equal(resumed.state['noise_key'], key)
  assert [e['round'] for e in resumed.history] == [1, 2, 3]
  assert resumed.state['weights'][1] == 3.0
  assert not directory.exists()  # Finished: its key is gone.

  kept = _loop(tmp_path / 'kept', keep_checkpoints=True)
  np.testing.assert_array_equal(binaries.saved_key(tmp_path / 'kept'),
                                kept.key)
  assert set(_modes(tmp_path / 'kept').values()) <= {0o600, 0o700}


def test_a_field_added_since_runs_were_recorded_counts_off_their_value():
  # A FedHDP run recorded before `ditto_init` existed is the same run as
  # one now at the value it had ('first_round'), and another at 'initial'.
  recorded = {'algorithm': 'fedhdp', 'lambda_p': 0.005, 'seed': 0}
  now = dict(recorded, ditto_init='first_round', tff_workers=['h:1'])
  assert checkpoint.identity(recorded) == checkpoint.identity(now)
  assert checkpoint.identity(recorded) != checkpoint.identity(
      dict(recorded, ditto_init='initial'))
  assert checkpoint.identity(recorded) != checkpoint.identity(
      dict(recorded, lambda_p=0.05))
