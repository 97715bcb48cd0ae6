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
"""Checkpoints of a training run, so that a killed run resumes exactly.

A checkpoint holds everything a run carries between rounds: the run's
mechanism key, the server state (global model, round, clip norm S^t, noise
key), every client's Ditto model and flag, the privacy ledger and the
history. Random draws need no saved generator state: cohorts and local
shuffles come from a generator seeded by (the key, round), DP noise from keys
derived from it and dropout from (seed, round, client), so a run resumed at
round t makes exactly the draws of an uninterrupted one.

The key is secret unless the run was given a `mechanism_seed`
(`tff_hdp.privacy.mechanism_key`): whoever holds it regenerates the run's
noise and cohorts, so a checkpoint is secret material. Its directory is made
0700 before anything is written in it and its files 0600 after each save,
whatever the umask; `Run.retire` deletes it once the run has finished.

Storage is TFF's `tff.program.FileProgramStateManager` (SavedModel files,
written to a temporary directory beside the version and renamed), keeping
the latest version; the state's and store's arrays go into it as one value,
their `np.savez` bytes, with the configuration (another's is refused).

The shared round loop (`tff_hdp.round_loop`) runs every system's rounds
through `start_run` and the `Run` it returns: where the run starts, the
rounds left (with a progress bar if asked), and `Run.end_round` after each
(the history, TensorBoard, the due checkpoint, the caller's callback). The
optional per-client `store` is anything with `num_clients`, `shapes`,
`state(copy=...)` and `load_state(...)`, such as FedHDP's Ditto store
(`tff_hdp.fedhdp.personal_store`). TensorFlow-free at import (the binaries'
checks use `identity` before TensorFlow loads).
"""

import asyncio
import collections
import dataclasses
import io
import json
import os
import shutil
import stat
from typing import Any, Callable, Iterable, Mapping, Optional

import numpy as np

from tff_hdp.privacy import mechanism_key
from tff_hdp.privacy import privacy_ledger


class CheckpointMismatchError(ValueError):
  """The checkpoint directory belongs to a run with another configuration."""


_TEMPLATE = collections.OrderedDict(config='', round_num=np.int32(0),
                                    key=b'', arrays=b'', ledger='',
                                    history='')


def _arrays_to_bytes(leaves) -> bytes:
  buffer = io.BytesIO()
  np.savez(buffer, *[np.asarray(leaf) for leaf in leaves])
  return buffer.getvalue()


def _arrays_from_bytes(data: bytes) -> list:
  with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
    leaves = [arrays[f'arr_{i}'] for i in range(len(arrays.files))]
  # 0-d arrays come back as numpy scalars, as TFF's loader returned them.
  return [leaf[()] if leaf.ndim == 0 else leaf for leaf in leaves]


def make_private_dir(directory: str) -> None:
  """Creates `directory` (and its parents) if missing and makes it 0700,
  whatever the umask: only its owner may list or enter it."""
  os.makedirs(directory, mode=0o700, exist_ok=True)
  os.chmod(directory, 0o700)


def restrict(directory: str) -> None:
  """Makes every folder under `directory` (itself included) 0700 and every
  file 0600: secret material, readable by its owner only."""
  os.chmod(directory, 0o700)
  for root, folders, files in os.walk(directory):
    for name in folders:
      os.chmod(os.path.join(root, name), 0o700)
    for name in files:
      path = os.path.join(root, name)
      if not os.path.islink(path):
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)


def retire(directory: str) -> None:
  """Deletes a finished run's checkpoint directory (its secret key with it),
  if it exists."""
  if os.path.isdir(directory):
    shutil.rmtree(directory)


class Checkpointer:
  """Saves and restores a run's progress in `directory`, a 0700 directory
  of 0600 files (`make_private_dir`, `restrict`)."""

  def __init__(self, directory: str, config_json: str, keep: int = 1,
               every: int = 1):
    # Private before TFF writes anything in it: its temporary directories
    # and SavedModel files, made under the umask, are never reachable by
    # others, and `save` then makes them 0600 as well.
    make_private_dir(directory)
    import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
    self._manager = tff.program.FileProgramStateManager(
        directory, keep_total=keep, keep_first=False)
    self._directory = directory
    self._config = config_json
    self._every = every

  def due(self, round_num: int, total_rounds: int) -> bool:
    """Whether progress after `round_num` rounds is saved: every `every`
    rounds and after the last."""
    return round_num % self._every == 0 or round_num == total_rounds

  def save(self, round_num: int, key: np.ndarray, state, store: Optional[Any],
           ledger: privacy_ledger.PrivacyLedger,
           history: list[dict[str, Any]]) -> None:
    """Saves the progress after `round_num` rounds (the version number) of
    the run of mechanism key `key`."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    arrays = collections.OrderedDict(
        state=state,
        store=collections.OrderedDict(store.state(copy=False))
        if store is not None else collections.OrderedDict())
    value = collections.OrderedDict(
        config=self._config,
        round_num=np.int32(round_num),
        key=_arrays_to_bytes([mechanism_key.as_key(key)]),
        arrays=_arrays_to_bytes(tf.nest.flatten(arrays)),
        ledger=ledger.to_json(),
        history=json.dumps(history))
    asyncio.run(self._manager.save(value, round_num))
    restrict(self._directory)

  @property
  def directory(self) -> str:
    return self._directory

  def restore(self, initial_state: Callable[[np.ndarray], Any],
              store: Optional[Any]):
    """Loads the latest checkpoint into `store`.

    Args:
      initial_state: The run's initial state under a key (the template of
        the saved state, called with the saved key).
      store: The per-client store, or None.

    Returns:
      (round_num, key, state, ledger, history), or None if there is no
      checkpoint.

    Raises:
      CheckpointMismatchError: It was written under another configuration.
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    value, version = asyncio.run(self._manager.load_latest(_TEMPLATE))
    if value is None:
      return None
    saved_config = value['config']
    if isinstance(saved_config, bytes):
      saved_config = saved_config.decode()
    if saved_config != self._config:
      raise CheckpointMismatchError(
          f'the checkpoint in {self._directory} (round {version}) was written '
          'by a run with another configuration; use another directory or '
          'delete it')
    key = mechanism_key.as_key(_arrays_from_bytes(value['key'])[0])
    template = collections.OrderedDict(
        state=initial_state(key),
        store=collections.OrderedDict(
            initialized=np.zeros(store.num_clients, bool),
            weights=[np.zeros((store.num_clients,) + s, np.float32)
                     for s in store.shapes])
        if store is not None else collections.OrderedDict())
    leaves = _arrays_from_bytes(value['arrays'])
    expected = len(tf.nest.flatten(template))
    if len(leaves) != expected:
      raise CheckpointMismatchError(
          f'the checkpoint in {self._directory} (round {version}) holds '
          f'{len(leaves)} arrays where this run has {expected}; use another '
          'directory or delete it')
    arrays = tf.nest.pack_sequence_as(template, leaves)
    if store is not None:
      store.load_state(arrays['store'])
    decode = lambda v: v.decode() if isinstance(v, bytes) else str(v)
    return (int(value['round_num']), key, arrays['state'],
            privacy_ledger.PrivacyLedger.from_json(decode(value['ledger'])),
            json.loads(decode(value['history'])))


def open_run(directory: Optional[str], config, *, every: int,
             initial_state: Callable[[np.ndarray], Any],
             store: Optional[Any] = None):
  """A driver's checkpoints: (checkpointer, restored).

  `checkpointer` is None when `directory` is None (no checkpoints);
  `restored` is `Checkpointer.restore`'s (round_num, key, state, ledger,
  history), or None when there is nothing to resume. `config` is the run's dataclass
  configuration (a checkpoint of another configuration is refused; its
  `tff_workers`, if any, may differ).
  """
  if directory is None:
    return None, None
  if every < 1:
    raise ValueError(f'checkpoint_every must be >= 1, got {every}')
  checkpointer = Checkpointer(directory, identity(dataclasses.asdict(config)),
                              every=every)
  return checkpointer, checkpointer.restore(initial_state, store)


def identity(config: Mapping[str, Any]) -> str:
  """What makes two runs one: a configuration's fields (`dataclasses.asdict`
  of it, or a results record's 'config'), as sorted JSON.

  Where a run's rounds execute is not what it computes: the same run on
  other (or no) TFF workers (`tff_workers`) resumes from the same
  checkpoint. A field added since runs were recorded counts only when it
  is not at the value they had (`_ADDED_FIELDS`).
  """
  fields = {k: v for k, v in config.items() if k != 'tff_workers' and
            not (k in _ADDED_FIELDS and v == _ADDED_FIELDS[k])}
  return json.dumps(json.loads(json.dumps(fields)), sort_keys=True)


# Fields a configuration gained after runs were recorded without them, at
# the value those runs had: left out of the identity, so that a recorded
# run and the same run now are one (FedHDP's `ditto_init`, Robust-HDP's
# `calibration_rounds`).
_ADDED_FIELDS = {'ditto_init': 'first_round', 'calibration_rounds': None}


@dataclasses.dataclass
class Run:
  """A driver's run of rounds, from `start_run`.

  Attributes:
    key: The run's mechanism key (new, or the checkpoint's): secret unless
      the run was given a `mechanism_seed`.
    state: The server state to start from (the initial one, or the
      checkpoint's); the driver updates it.
    ledger: The privacy ledger to start from; the driver steps it.
    history: The history entries so far; `end_round` appends.
    rounds: The 0-based rounds still to run, with a progress bar if asked.
  """
  key: np.ndarray
  state: Any
  ledger: privacy_ledger.PrivacyLedger
  history: list
  rounds: Iterable[int]
  total_rounds: int
  checkpointer: Optional[Checkpointer]
  store: Optional[Any]
  summary_writer: Any
  on_round: Optional[Callable[[int, dict], None]]

  def retire(self) -> None:
    """Deletes the run's checkpoint directory, once the run has finished:
    it holds the run's key, and a finished run has nothing to resume."""
    if self.checkpointer is not None:
      retire(self.checkpointer.directory)

  def end_round(self, round_num: int, entry: dict) -> None:
    """Records round `round_num` (from 1), what every driver does once it
    has run: appends `entry` to the history, writes its numbers (not its
    round, lists or Nones) to TensorBoard at step `round_num`, saves a
    checkpoint of `self.state` if one is due, and runs the caller's
    `on_round(round_num, entry)`."""
    self.history.append(entry)
    if self.summary_writer is not None:
      import tensorflow as tf  # pylint: disable=g-import-not-at-top
      with self.summary_writer.as_default(step=round_num):
        for name, value in entry.items():
          if name != 'round' and isinstance(value, (int, float)):
            tf.summary.scalar(name, value)
    if (self.checkpointer is not None and
        self.checkpointer.due(round_num, self.total_rounds)):
      self.checkpointer.save(round_num, self.key, self.state, self.store,
                             self.ledger, self.history)
    if self.on_round is not None:
      self.on_round(round_num, entry)


def start_run(config, initial_state: Callable[[np.ndarray], Any], *,
              total_rounds: int, options,
              store: Optional[Any] = None,
              ledger: Optional[privacy_ledger.PrivacyLedger] = None) -> Run:
  """Where a driver's run starts: a new mechanism key, the initial state
  under it and a new ledger, or the checkpoint in `options.checkpoint_dir`
  of the same `config` (its key, state, ledger and history, `store`
  loaded); see `open_run`.

  Args:
    config: The run's dataclass configuration (its `algorithm` names the
      progress bar; its `mechanism_seed`, if not None, makes the key
      reproducible, `mechanism_key.new_key`).
    initial_state: The initial server state under a key (also the template
      of a saved state).
    total_rounds: The run's rounds.
    options: How the run is kept and shown, `round_loop.Options` (or
      anything with its attributes): `checkpoint_dir` (where checkpoints
      go; None: none), `checkpoint_every` (save every k rounds and after
      the last), `progress` (a tqdm progress bar on stderr),
      `summary_writer` (optional TensorBoard writer for the entries'
      numbers) and `on_round` (called as on_round(round, entry) after each
      round). Its `keep_checkpoints` is the caller's (`Run.retire`).
    store: An optional per-client store, saved and restored with the state.
    ledger: The empty ledger a new run starts from (default
      `privacy_ledger.PrivacyLedger()`).
  """
  checkpointer, restored = open_run(options.checkpoint_dir, config,
                                    every=options.checkpoint_every,
                                    initial_state=initial_state, store=store)
  ledger = privacy_ledger.PrivacyLedger() if ledger is None else ledger
  history, first_round = [], 0
  if restored is not None:
    first_round, key, state, ledger, history = restored
  else:
    key = mechanism_key.new_key(getattr(config, 'mechanism_seed', None))
    state = initial_state(key)
  rounds = range(first_round, total_rounds)
  if options.progress:
    import tqdm  # pylint: disable=g-import-not-at-top
    rounds = tqdm.tqdm(rounds, desc=config.algorithm, unit='round',
                       initial=first_round, total=total_rounds)
  return Run(key=key, state=state, ledger=ledger, history=history,
             rounds=rounds, total_rounds=total_rounds,
             checkpointer=checkpointer, store=store,
             summary_writer=options.summary_writer,
             on_round=options.on_round)
