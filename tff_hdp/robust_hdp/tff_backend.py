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
"""Robust-HDP's round on TFF's runtime, the driver's TFF backend (paper 003).

`TffRound` runs the learning process (`process.compose_robust_hdp_process`)
as a `round_executor.RoundExecutor` on the driver's state dict:
`initialize(key)` and `next(state, cohort)` on an `executors.Cohort`. The
same round without TFF is `direct_backend.DirectRound`, over TFF workers
`distributed.DistributedRound`; tests/test_round_executors.py holds the
three to one contract.
"""

import collections

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import models
from tff_hdp import round_executor
from tff_hdp.privacy import mechanism_key
from tff_hdp.robust_hdp import dp_sgd
from tff_hdp.robust_hdp.process import build_client_work
from tff_hdp.robust_hdp.process import client_element
from tff_hdp.robust_hdp.process import compose_robust_hdp_process


class TffRound(round_executor.RoundExecutor):
  """The learning process (`compose_robust_hdp_process`) as the round on
  TFF's runtime: `initialize(key)` and `next(state, cohort)` on the
  driver's state dict (`executors.Cohort`, without `weighing_info`)."""

  backend = round_executor.TFF

  def __init__(self, spec: models.ModelSpec, initial_weights, aggregator, *,
               settings: dp_sgd.DpSgdSettings, private: bool = True):
    self.process = compose_robust_hdp_process(
        spec, initial_weights,
        build_client_work(spec, settings=settings, private=private,
                          key_in_state=True),
        aggregator)

  def initialize(self, key):
    """The process's initial state, its clients' key the run's `key`."""
    state = _from_learning_state(self.process.initialize())
    state['key'] = mechanism_key.as_key(key).copy()
    return state

  def next(self, state, cohort) -> round_executor.RoundOutput:
    cohort.check(self.backend)
    clients = []
    for data, info in zip(cohort.data, cohort.info):
      if isinstance(data, tf.data.Dataset):
        data = data.get_single_element()
      clients.append(client_element(
          *data, index=info['index'], batch_size=info['batch_size'],
          noise_multiplier=info['noise_multiplier']))
    output = self.process.next(_to_learning_state(state), clients)
    return round_executor.RoundOutput(
        _from_learning_state(output.state),
        tf.nest.map_structure(np.asarray, output.metrics['aggregator']))


def _to_learning_state(state) -> tff.learning.templates.LearningAlgorithmState:
  return tff.learning.templates.LearningAlgorithmState(
      global_model_weights=tff.learning.models.ModelWeights(
          trainable=list(state['global_weights']), non_trainable=[]),
      distributor=(),
      client_work=collections.OrderedDict(
          round_num=np.int32(state['round_num']),
          key=mechanism_key.as_key(state['key'])),
      aggregator=state['aggregator'], finalizer=())


def _from_learning_state(state) -> collections.OrderedDict:
  return tf.nest.map_structure(np.asarray, collections.OrderedDict(
      global_weights=list(state.global_model_weights.trainable),
      round_num=state.client_work['round_num'], aggregator=state.aggregator,
      key=state.client_work['key']))
