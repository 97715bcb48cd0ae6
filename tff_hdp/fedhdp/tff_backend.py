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
"""A round backend: how the driver runs one round, here on TFF's runtime.

Every backend has the same interface, so the driver (`training`) does not
know how a round executes:

    backend = TffBackend(spec, initial_weights, factory, settings)
    state = backend.initialize()
    state, personal, measurements = backend.next(
        state, client_data, personal_weights, client_info)

- `client_data`: per sampled client, (x, y) numpy arrays in this round's
  order (the driver shuffles them); the backend batches them.
- `personal_weights`: per client, its Ditto model (list of arrays).
- `client_info`: per client, OrderedDict(group=int32, client_id=int32).
- `state`: OrderedDict(global_weights=[...], round_num=int32,
  aggregator=OrderedDict(clip_norm=float32, noise_key=int64[2])), all numpy,
  the same structure for every backend (checkpoints store it as is).
- `measurements`: the aggregator's, as Python floats.

`TffBackend` runs `hdp_process.build_hdp_process` (TFF's IterativeProcess over
the `HeterogeneousDPFactory` aggregator) on the current TFF context.
"""

import collections
import dataclasses
from typing import Any, Sequence

import numpy as np
import tensorflow as tf

from tff_hdp.fedhdp import hdp_factory
from tff_hdp.fedhdp import hdp_process
from tff_hdp import models


@dataclasses.dataclass(frozen=True)
class ClientSettings:
  """What every client does in a round (Algorithm 2's ClientUpdate)."""

  ditto_lambdas: tuple[float, ...]  # lambda of each group.
  local_epochs: int
  batch_size: int
  learning_rate: float
  personal_learning_rate: float
  lr_decay_factor: float = 1.0
  lr_decay_rounds: int = 50
  ditto: bool = True
  seed: int = 0

  def process_kwargs(self) -> dict:
    """The keyword arguments of `hdp_process.build_round_parts` (and of
    `build_hdp_process`): everything but the batch size, which only the
    backends use to batch data."""
    kwargs = dataclasses.asdict(self)
    del kwargs['batch_size']
    return kwargs


def to_numpy(structure: Any) -> Any:
  """The state as nested OrderedDicts/lists of numpy values."""
  if isinstance(structure, dict):
    return collections.OrderedDict(
        (k, to_numpy(v)) for k, v in structure.items())
  if isinstance(structure, (list, tuple)):
    return [to_numpy(v) for v in structure]
  return np.asarray(structure)


class TffBackend:
  """Runs each round as one call of the TFF iterative process."""

  name = 'tff'

  def __init__(self, spec: models.ModelSpec,
               initial_weights: Sequence[np.ndarray],
               factory: hdp_factory.HeterogeneousDPFactory,
               settings: ClientSettings):
    self._spec = spec
    self._settings = settings
    self._process = hdp_process.build_hdp_process(
        spec,
        initial_weights,
        factory,
        **settings.process_kwargs())

  @property
  def process(self):
    return self._process

  def initialize(self):
    return to_numpy(self._process.initialize())

  def next(self, state, client_data, personal_weights, client_info):
    datasets = [
        tf.data.Dataset.from_tensor_slices(
            (np.asarray(x, np.float32), np.asarray(y, np.int32))).batch(
                self._settings.batch_size) for x, y in client_data
    ]
    state, personal, measurements = self._process.next(
        state, datasets, list(personal_weights), list(client_info))
    return (to_numpy(state), [[np.asarray(w) for w in p] for p in personal],
            {k: float(v) for k, v in measurements.items()})


def global_weights(state) -> list[np.ndarray]:
  """theta^t of a backend state."""
  return [np.asarray(w) for w in state['global_weights']]
