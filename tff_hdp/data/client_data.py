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
"""TFF's data in, and the rounds' clients out (shared by the three systems).

- `to_federated_data`: a `tff.simulation.datasets.ClientData` (each element
  an (x, y) pair or a mapping with 'x' and 'y', one example or a batch, as
  TFF's tutorials `preprocess` theirs) as the package's
  `FederatedData`, clients in `client_ids` order; `in_client_order` puts a
  per-client mapping (a privacy level, (epsilon_i, b_i), a weight) in the
  same order, refusing a client it does not cover.
- `PoissonClientSource`: a `tff.program.FederatedDataSource` whose every
  `select` draws a Poisson cohort (each client with probability q, from the
  round's own generator under a secret key, as the drivers do), for
  `tff.learning.programs.train_model`. TFF's `DatasetDataSource` holds
  tf.data datasets, which `train_model` cannot deep-copy (it copies the
  iterator every round), and samples fixed cohorts, which the processes'
  accounting does not cover; this source holds arrays and builds each
  round's datasets when selected. Its iterators save to bytes (the round
  and, under a `mechanism_seed`, the cohorts' key), so a
  `tff.program.FileProgramStateManager` checkpoints and resumes them.
"""

import json
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np
import tensorflow_federated as tff

from tff_hdp.data import federated_data
from tff_hdp.data import sampling
from tff_hdp.privacy import mechanism_key


def dataset_arrays(dataset) -> tuple[np.ndarray, np.ndarray]:
  """A client's examples: its elements, single examples (a scalar label) or
  batches of them (a vector of labels, as TFF's tutorials batch them)."""
  xs, ys = [], []
  for element in dataset.as_numpy_iterator():
    if isinstance(element, Mapping):
      if not {'x', 'y'} <= set(element):
        raise ValueError('a ClientData element must be (x, y) or a mapping '
                         f'with keys x and y, got keys {sorted(element)}')
      x, y = element['x'], element['y']
    else:
      x, y = element
    x, y = np.asarray(x, np.float32), np.asarray(y, np.int32)
    if y.ndim > 1 or (y.ndim == 1 and len(x) != len(y)):
      raise ValueError('a ClientData element must be one example (x, '
                       'integer label y) or a batch of them (x [b, ...], y '
                       f'[b]), got x {list(x.shape)} and y {list(y.shape)}')
    xs.append(x if y.ndim else x[None])
    ys.append(y if y.ndim else y[None])
  if not xs:
    return np.zeros((0,), np.float32), np.zeros((0,), np.int32)
  return np.concatenate(xs), np.concatenate(ys)


def to_federated_data(train: tff.simulation.datasets.ClientData, *,
                      test: Optional[tff.simulation.datasets.ClientData] = None,
                      server_test: Optional[tuple[np.ndarray,
                                                  np.ndarray]] = None,
                      num_classes: Optional[int] = None,
                      name: str = 'client_data'
                      ) -> federated_data.FederatedData:
  """`train` (and `test`, the same clients) as a `FederatedData`.

  Elements are single examples or batches of them (unbatched here: each
  system batches as its algorithm says). Clients are in
  `train.client_ids` order; a client without test data gets an empty test
  set; the server test set defaults to every client's test data (or, without
  `test`, their training data) pooled. `num_classes` defaults to the largest
  label seen plus one.
  """
  ids = list(train.client_ids)
  if not ids:
    raise ValueError('the ClientData has no clients')
  arrays = [dataset_arrays(train.create_tf_dataset_for_client(c))
            for c in ids]
  empty = [c for c, (x, _) in zip(ids, arrays) if not len(x)]
  if empty:
    raise ValueError(f'client {empty[0]!r} has no training examples')
  if test is not None:
    known = set(test.client_ids)
    tests = [dataset_arrays(test.create_tf_dataset_for_client(c))
             if c in known
             else (arrays[i][0][:0], arrays[i][1][:0])
             for i, c in enumerate(ids)]
  else:
    tests = [(x[:0], y[:0]) for x, y in arrays]
  if server_test is None:
    pool = [t for t in tests if len(t[1])] or arrays
    server_test = (np.concatenate([x for x, _ in pool]),
                   np.concatenate([y for _, y in pool]))
  labels = np.concatenate([y for _, y in arrays] + [server_test[1]])
  return federated_data.FederatedData(
      name=name,
      input_shape=tuple(arrays[0][0].shape[1:]),
      num_classes=int(num_classes or labels.max() + 1),
      train=arrays, test=tests,
      server_test=(np.asarray(server_test[0], np.float32),
                   np.asarray(server_test[1], np.int32)))


def as_federated_data(data) -> federated_data.FederatedData:
  """`data` as is if a `FederatedData`, else `to_federated_data(data)`."""
  if isinstance(data, federated_data.FederatedData):
    return data
  if isinstance(data, tff.simulation.datasets.ClientData):
    return to_federated_data(data)
  raise TypeError('data must be a tff_hdp FederatedData or a '
                  f'tff.simulation.datasets.ClientData, got '
                  f'{type(data).__name__}')


def cohort_arrays(datasets: Mapping[int, Any], num_clients: int
                  ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
  """The (x, y) arrays of a round's clients given as TFF's tutorials make
  them, {client index: its tf.data dataset of examples or batches}, or a
  one-line error naming the bad key."""
  out = {}
  for index, dataset in datasets.items():
    if isinstance(index, (bool, np.bool_)) or not isinstance(
        index, (int, np.integer)) or not 0 <= index < num_clients:
      raise ValueError('next takes {client index: dataset}, each index an '
                       f'integer in [0, {num_clients}) (entry i of the '
                       f'preferences), got key {index!r}')
    out[int(index)] = dataset_arrays(dataset)
  return out


def in_client_order(client_ids: Sequence[str], values: Mapping[str, Any],
                    what: str) -> list:
  """`values[c]` for every client c of `client_ids`, in that order."""
  missing = [c for c in client_ids if c not in values]
  if missing:
    raise ValueError(f'{what} must give every client a value; client '
                     f'{missing[0]!r} has none')
  extra = sorted(set(values) - set(client_ids))
  if extra:
    raise ValueError(f'{what} names client {extra[0]!r}, which the data has '
                     'not got')
  return [values[c] for c in client_ids]


class _Clients:
  """What every copy of an iterator shares: the clients, how to make a
  cohort and their type (never deep-copied: none of it changes, and TFF's
  types do not deep-copy)."""

  def __init__(self, num_clients: int, make_cohort: Callable,
               federated_type: tff.FederatedType):
    self.num_clients = num_clients
    self.make_cohort = make_cohort
    self.federated_type = federated_type

  def __deepcopy__(self, memo):
    return self


class _PoissonIterator(tff.program.FederatedDataSourceIterator):
  """Round r's Poisson cohort (`select`), and where the rounds stand.

  Its bytes (`to_bytes`) hold the round number and, under a
  `mechanism_seed`, the cohorts' key: a program state saved to disk
  (`tff.program.FileProgramStateManager`) then resumes the same cohorts,
  and is as secret as that key. A source's iterators are of a class of
  their own (`_iterator_class`) that knows the source's clients, so that
  `from_bytes`, a classmethod given only the bytes, rebuilds an iterator of
  the source a resumed program made.
  """

  _clients: Optional[_Clients] = None  # The source's (`_iterator_class`).

  def __init__(self, sampling_rate: float, key: Optional[np.ndarray],
               round_num: int = 0):
    if self._clients is None:
      raise TypeError('make iterators with PoissonClientSource.iterator()')
    self._rate = sampling_rate
    self._key = key
    self._round = round_num

  @property
  def federated_type(self) -> tff.FederatedType:
    return self._clients.federated_type

  def select(self, k: Optional[int] = None) -> list:
    """This round's Poisson cohort, each client as the process takes it.

    `k` is the cohort size that `train_model` asks for: None or the expected
    round(q N), since the cohort's size is drawn, not chosen.
    """
    expected = int(round(self._rate * self._clients.num_clients))
    if k is not None and k != expected:
      raise ValueError(
          f'this source draws Poisson cohorts at rate {self._rate} (expected '
          f'{expected} of {self._clients.num_clients} clients); select(k) '
          f'takes k=None or {expected}, got {k}: epsilon assumes Poisson '
          'sampling at that rate, so the mechanism draws the cohort size '
          '(k=round(qN), the expected size, is accepted only so that '
          'train_per_round_clients can name it)')
    rng = (mechanism_key.fresh_rng() if self._key is None else
           mechanism_key.round_rng(self._key, self._round))
    self._round += 1
    cohort = sampling.sample_cohort(self._clients.num_clients, 0, rng,
                                    poisson=True, sampling_rate=self._rate)
    return list(self._clients.make_cohort(cohort, rng))

  @classmethod
  def from_bytes(cls, buffer: bytes) -> '_PoissonIterator':
    """The iterator `to_bytes` saved, of this class's source."""
    saved = json.loads(bytes(buffer).decode('utf-8'))
    if saved.get('num_clients') != cls._clients.num_clients:
      raise ValueError(
          f'the saved data source iterator is of {saved.get("num_clients")} '
          f'clients, this source of {cls._clients.num_clients}: resume with '
          'the data source of the run that saved it')
    key = saved['key']
    return cls(saved['sampling_rate'],
               None if key is None else np.array(key, np.uint64).view(
                   np.int64), saved['round'])

  def to_bytes(self) -> bytes:
    """The round reached, the rate, the clients' count and, under a
    `mechanism_seed`, the cohorts' key (secret material)."""
    return json.dumps(dict(
        round=self._round, sampling_rate=self._rate,
        num_clients=self._clients.num_clients,
        key=None if self._key is None else
        [int(w) for w in self._key.view(np.uint64)])).encode('utf-8')

  def __eq__(self, other) -> bool:
    return (isinstance(other, _PoissonIterator) and
            other._clients is self._clients and other._round == self._round)


def _iterator_class(clients: _Clients) -> type:
  """A `_PoissonIterator` class of `clients`' own (see its docstring)."""
  return type('_PoissonIterator', (_PoissonIterator,), {'_clients': clients})


class PoissonClientSource(tff.program.FederatedDataSource):
  """Each round's clients drawn independently with probability q.

  Args:
    num_clients: N.
    sampling_rate: q in (0, 1].
    make_cohort: (the cohort's client indices, sorted, and the round's numpy
      generator) -> the clients as the process's `next` takes them.
    federated_type: That CLIENTS-placed type.
    mechanism_seed: None (the default): every round draws from 128 fresh
      bits of the operating system's entropy (`mechanism_key.fresh_rng`),
      and the iterator holds no secret; the cohorts reveal nothing to
      whoever knows the run's configuration. An integer: round r draws from
      `mechanism_key.round_rng` of the key derived from it, as a driver of
      the same `mechanism_seed` does, for reproduction only (anyone who
      knows it knows who took part); the iterators' bytes (`to_bytes`, a
      checkpoint's) then hold the key derived from it.
  """

  def __init__(self, num_clients: int, sampling_rate: float,
               make_cohort: Callable[[np.ndarray, np.random.Generator],
                                     Sequence[Any]],
               federated_type: tff.FederatedType, *,
               mechanism_seed: Optional[int] = None):
    if num_clients < 1:
      raise ValueError(f'num_clients must be >= 1, got {num_clients}')
    if not 0.0 < sampling_rate <= 1.0:
      raise ValueError(f'sampling_rate must be in (0, 1], got {sampling_rate}')
    self._clients = _Clients(num_clients, make_cohort, federated_type)
    self._iterator = _iterator_class(self._clients)
    self._rate = float(sampling_rate)
    self._mechanism_seed = mechanism_key.check_mechanism_seed(mechanism_seed)

  @property
  def federated_type(self) -> tff.FederatedType:
    return self._clients.federated_type

  def iterator(self) -> tff.program.FederatedDataSourceIterator:
    key = (None if self._mechanism_seed is None else
           mechanism_key.cohort_key(mechanism_key.new_key(
               self._mechanism_seed)))
    return self._iterator(self._rate, key)

