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
"""FedHDP's round on TFF's runtime (`round_executor.TFF`).

Every backend implements `round_executor.RoundExecutor` with the same
cohort and state, so the driver (`training`) does not know how a round
executes (`executors.build_executor` picks one):

    executor = TffRound(spec, initial_weights, factory, settings)
    state = executor.initialize(key)   # the run's mechanism key
    output = executor.next(state, cohort)   # an `executors.Cohort`

- `state`: OrderedDict(global_weights=[...], round_num=int32,
  aggregator=OrderedDict(clip_norm=float32, noise_key=int64[2])), all numpy,
  the same structure for every backend (checkpoints store it as is); the
  noise key starts at the run's key (`tff_hdp.privacy.mechanism_key`).
- `output.measurements`: the aggregator's, as Python floats.
- `output.clients`: per client of the cohort, in its order, its Ditto
  model after the round (unchanged without Ditto).

`TffRound` runs the package's `tff.learning.templates.LearningProcess`
(`process.compose_fedhdp_process`, what `build_fedhdp_process` returns)
and Ditto's personal step beside it on the current TFF context.
"""

import collections
from typing import Any, Optional, Sequence

import numpy as np
import tensorflow_federated as tff

from tff_hdp.fedhdp import hdp_factory
from tff_hdp.fedhdp import process as process_lib
from tff_hdp import models
from tff_hdp import round_executor
from tff_hdp import templates
from tff_hdp.privacy import mechanism_key
from tff_hdp.privacy import round_privacy


# The clients' settings belong to the process; the backends share them.
ClientSettings = process_lib.ClientSettings


def to_numpy(structure: Any) -> Any:
  """The state as nested OrderedDicts/lists of numpy values."""
  if isinstance(structure, dict):
    return collections.OrderedDict(
        (k, to_numpy(v)) for k, v in structure.items())
  if isinstance(structure, (list, tuple)):
    return [to_numpy(v) for v in structure]
  return np.asarray(structure)


class TffRound(round_executor.RoundExecutor):
  """Runs each round on TFF's runtime: the package's learning process
  (`process.compose_fedhdp_process`) and, beside it, Ditto's personal
  step (`process.build_ditto_step`)."""

  backend = round_executor.TFF

  def __init__(self, spec: models.ModelSpec,
               initial_weights: Sequence[np.ndarray],
               factory: hdp_factory.HeterogeneousDPFactory,
               settings: ClientSettings,
               privacy: Optional[round_privacy.RoundPrivacy] = None):
    self._spec = spec
    self._settings = settings
    self._process = process_lib.compose_fedhdp_process(
        spec, initial_weights, factory, settings,
        privacy or round_privacy.RoundPrivacy('client-level', {}, delta=1e-5))
    self._ditto_step = (process_lib.build_ditto_step(spec, self._process,
                                                     settings)
                        if settings.ditto else None)

  @property
  def process(self) -> templates.PrivateLearningProcess:
    return self._process

  def initialize(self, key):
    """The process's initial state, its noise key the run's `key` (the
    process draws a fresh one; the driver keeps the run's)."""
    state = from_learning_state(self._process.initialize())
    state['aggregator']['noise_key'] = mechanism_key.as_key(key).copy()
    return state

  def next(self, state, cohort) -> round_executor.RoundOutput:
    """One round on `cohort` (an `executors.Cohort`); see the module."""
    cohort.check()
    clients = [
        process_lib.client_element(x, y, group=info['group'],
                                   client_id=info['client_id'],
                                   batch_size=self._settings.batch_size)
        for (x, y), info in zip(cohort.data, cohort.info)
    ]
    learning_state = to_learning_state(state)
    personal = list(cohort.personal)
    if self._ditto_step is not None and clients:
      personal = [[np.asarray(w) for w in p]
                  for p in self._ditto_step(learning_state, clients, personal)]
    output = self._process.next(learning_state, clients)
    measurements = output.metrics['aggregator']
    return round_executor.RoundOutput(
        from_learning_state(output.state),
        {k: float(v) for k, v in measurements.items()}, personal)


def to_learning_state(state) -> tff.learning.templates.LearningAlgorithmState:
  """A backend state as the learning process's state."""
  return tff.learning.templates.LearningAlgorithmState(
      global_model_weights=tff.learning.models.ModelWeights(
          trainable=list(state['global_weights']), non_trainable=[]),
      distributor=(),
      client_work=np.int32(state['round_num']),
      aggregator=state['aggregator'],
      finalizer=())


def from_learning_state(state) -> collections.OrderedDict:
  """The learning process's state as a backend state (numpy)."""
  return to_numpy(collections.OrderedDict(
      global_weights=list(state.global_model_weights.trainable),
      round_num=state.client_work,
      aggregator=state.aggregator))
