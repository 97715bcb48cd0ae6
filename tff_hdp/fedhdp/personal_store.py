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
"""Every client's Ditto personal model, stored compactly by client id.

Ditto (Li et al. 2021; paper 001, Algorithm 2) keeps a personal model theta_j
on each client. In simulation the driver keeps them between rounds. Holding
thousands of Keras models is slow and large, so the store keeps one stacked
float32 array per weight tensor, shape [num_clients, *weight_shape], either in
memory or in a memory-mapped file (FEMNIST: 3,400 clients x 214k parameters
~ 2.9 GB, which a memory map keeps out of resident memory).

A client that has never trained has no personal model yet; Algorithm 2 then
starts it from the current global model, so `gather` returns the global
weights for it (and evaluation uses the global model for such a client, which
is what paper 001 reports for private clients under FedHDP with r = 0).
"""

import os
from typing import Optional, Sequence

import numpy as np

from tff_hdp import checkpoint

# Stores larger than this are memory-mapped rather than held in memory.
IN_MEMORY_LIMIT_BYTES = 1 << 30


def directory_for(num_clients: int, num_parameters: int,
                  checkpoint_dir: Optional[str],
                  limit_bytes: int = IN_MEMORY_LIMIT_BYTES) -> Optional[str]:
  """Where a run's store lives: None (in memory) when it takes at most
  `limit_bytes`, else `<checkpoint_dir>/personal_models`.

  FEMNIST's 3,400 CNNs take 2.9 GB. Memory-mapped, they live among the
  run's checkpoints, secret material (0700) that is deleted with them when
  the run has written its results: nothing of the clients' models is left
  where results are shared. A store that needs a directory but has no
  checkpoint directory is held in memory.
  """
  if checkpoint_dir is None or 4 * num_parameters * num_clients <= limit_bytes:
    return None
  return os.path.join(checkpoint_dir, 'personal_models')


class PersonalModelStore:
  """Stacked per-client weights with an "initialised" flag per client."""

  def __init__(self,
               num_clients: int,
               shapes: Sequence[Sequence[int]],
               directory: Optional[str] = None):
    """Creates an empty store.

    Args:
      num_clients: Number of clients N; client ids are 0..N-1.
      shapes: Shapes of the model's weight tensors.
      directory: If given, weights live in memory-mapped `.npy` files there
        (created, or reopened if they exist with the right shapes). The
        folder is made 0700 and the files 0600 whatever the umask: the
        models are trained on the clients' data without noise, outside
        any privacy guarantee (`directory_for`).
    """
    if num_clients < 1:
      raise ValueError(f'num_clients must be >= 1, got {num_clients}')
    self.num_clients = int(num_clients)
    self.shapes = tuple(tuple(s) for s in shapes)
    self.directory = directory
    if directory is None:
      self._weights = [
          np.zeros((num_clients,) + s, np.float32) for s in self.shapes
      ]
      self.initialized = np.zeros(num_clients, bool)
    else:
      checkpoint.make_private_dir(directory)
      self._weights = [
          self._open(os.path.join(directory, f'weights_{i}.npy'),
                     (num_clients,) + s, np.float32)
          for i, s in enumerate(self.shapes)
      ]
      self.initialized = self._open(
          os.path.join(directory, 'initialized.npy'), (num_clients,), bool)
      checkpoint.restrict(directory)

  @staticmethod
  def _open(path, shape, dtype):
    if os.path.exists(path):
      array = np.load(path, mmap_mode='r+')
      if array.shape == shape and array.dtype == dtype:
        return array
    return np.lib.format.open_memmap(path, mode='w+', dtype=dtype, shape=shape)

  @property
  def nbytes(self) -> int:
    return sum(w.nbytes for w in self._weights)

  def _check_ids(self, client_ids):
    ids = np.asarray(client_ids, np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= self.num_clients):
      raise IndexError(f'client ids must be in [0, {self.num_clients}), got '
                       f'{ids.min()}..{ids.max()}')
    return ids

  def gather(self, client_ids: Sequence[int],
             fallback: Sequence[np.ndarray]) -> list[list[np.ndarray]]:
    """Per client, its personal weights, or `fallback` if it has none yet."""
    ids = self._check_ids(client_ids)
    out = []
    for cid in ids:
      if self.initialized[cid]:
        out.append([np.array(w[cid]) for w in self._weights])
      else:
        out.append([np.asarray(f, np.float32) for f in fallback])
    return out

  def get(self, client_id: int) -> list[np.ndarray]:
    """The personal weights of one client that has trained."""
    if not self.initialized[client_id]:
      raise KeyError(f'client {client_id} has no personal model yet')
    return [np.array(w[client_id]) for w in self._weights]

  def gather_stacked(self, client_ids: Sequence[int],
                     fallback: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Like `gather`, as one [len(ids), *shape] array per weight tensor."""
    ids = self._check_ids(client_ids)
    init = self.initialized[ids]
    stacked = []
    for w, f in zip(self._weights, fallback):
      block = np.array(w[ids])
      block[~init] = np.asarray(f, np.float32)
      stacked.append(block)
    return stacked

  def scatter(self, client_ids: Sequence[int],
              weights: Sequence[Sequence[np.ndarray]]) -> None:
    """Stores `weights[k]` as the personal model of `client_ids[k]`."""
    ids = self._check_ids(client_ids)
    if len(ids) != len(weights):
      raise ValueError(f'{len(ids)} client ids but {len(weights)} models')
    for k, cid in enumerate(ids):
      for dest, value in zip(self._weights, weights[k]):
        dest[cid] = value
      self.initialized[cid] = True

  def flush(self) -> None:
    """Writes memory-mapped arrays to disk (no-op in memory)."""
    for w in self._weights + [self.initialized]:
      if isinstance(w, np.memmap):
        w.flush()

  def state(self, copy: bool = True) -> dict:
    """Everything, for checkpoints: {'initialized', 'weights'}.

    Args:
      copy: Return copies. A checkpoint that serialises the arrays at once
        passes False, to avoid holding a second copy of a large store.
    """
    take = np.array if copy else np.asarray
    return {
        'initialized': take(self.initialized),
        'weights': [take(w) for w in self._weights]
    }

  def load_state(self, state: dict) -> None:
    self.initialized[...] = state['initialized']
    for dest, src in zip(self._weights, state['weights']):
      dest[...] = src
