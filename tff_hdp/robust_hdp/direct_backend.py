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
"""Robust-HDP's round in plain TensorFlow, the driver's direct backend.

`DirectRound` computes the learning process's round (the clients' DP-SGD
and the rule's server step, `aggregator.NoiseAwareAggregationFactory.
server_step`) without TFF's runtime, bit for bit: a
`round_executor.RoundExecutor` as `tff_backend.TffRound` is
(tests/test_round_executors.py, tests/test_round_conformance.py), the one
backend that also runs a clip-only cohort's `weighing_info`.
`client_dataset` is a client's data as the process takes it.
"""

import collections
import functools
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf

from tff_hdp import models
from tff_hdp import round_executor
from tff_hdp.privacy import mechanism_key
from tff_hdp.robust_hdp import aggregator as aggregator_lib
from tff_hdp.robust_hdp import cohort as cohort_lib
from tff_hdp.robust_hdp import dp_sgd
from tff_hdp.robust_hdp.process import client_key
from tff_hdp.robust_hdp.process import client_step
from tff_hdp.robust_hdp.process import round_key


@functools.lru_cache(maxsize=None)
def _client_function(spec: models.ModelSpec, settings: dp_sgd.DpSgdSettings,
                     private: bool):
  """`client_step`, flattened, as one tf.function per (model, settings,
  private): the rules of one comparison share its traces.

  No autograph: the round has no Python control flow on tensors (TFF's
  tracing runs the same code without it), and converting DP-SGD and the
  aggregation took most of a short run's tracing time.
  """
  return tf.function(
      lambda w, x, y, info, key: aggregator_lib.flatten(client_step(
          spec, w, x, y, info, client_key(key, info['index']),
          settings=settings, private=private)),
      reduce_retracing=True, autograph=False)


class DirectRound(round_executor.RoundExecutor):
  """The round of the learning process in plain TensorFlow, without TFF's
  runtime.

  Same arguments as `tff_backend.TffRound`; `initialize(key)` and
  `next(state, cohort)` behave as the process's (`executors.Cohort`, its
  `weighing_info` included). `client_updates` and `server_update` are the
  round's two halves, which the benchmarks time apart.
  """

  backend = round_executor.DIRECT

  def __init__(self, spec: models.ModelSpec, initial_weights,
               aggregator, *, settings: dp_sgd.DpSgdSettings,
               private: bool = True):
    dp_sgd.check_settings(settings)
    self._spec = spec
    self._initial = [np.asarray(w, np.float32) for w in initial_weights]
    self._aggregator = aggregator
    self._client = _client_function(spec, settings, private)
    # The cohort as one computation (stacked on a GPU, in two lanes on a
    # CPU that runs two at once: `cohort.default_form`), else each client
    # in turn, one call each.
    self._cohort = (cohort_lib.cohort_function(spec, settings, private)
                    if cohort_lib.default_form(spec) != cohort_lib.IN_TURN
                    else None)
    self._packed = None  # (ids of the clients' x, their data, packed).
    # No autograph (see `_client_function`).
    self._server = tf.function(aggregator.server_step, autograph=False)

  def initialize(self, key):
    state = collections.OrderedDict(
        global_weights=list(self._initial),
        round_num=np.int32(0),
        aggregator=self._aggregator.initial_state(),
        key=mechanism_key.as_key(key).copy())
    return tf.nest.map_structure(np.asarray, state)

  def client_updates(self, state, client_data, client_info) -> tf.Tensor:
    """The clients' flattened updates Delta_i, stacked: [n, p] float32."""
    weights = [tf.constant(w) for w in state['global_weights']]
    key = round_key(tf.constant(mechanism_key.as_key(state['key'])),
                    tf.constant(int(state['round_num'])))
    data = [d.get_single_element() if isinstance(d, tf.data.Dataset) else d
            for d in client_data]
    if not data:
      return tf.zeros([0, self._spec.num_parameters], tf.float32)
    if self._cohort is not None:
      return self._cohort_updates(weights, data, client_info, key)
    return tf.stack([
        self._client(weights, tf.constant(x), tf.constant(y),
                     {k: tf.constant(v) for k, v in info.items()}, key)
        for (x, y), info in zip(data, client_info)])

  def _cohort_updates(self, weights, data, client_info, key) -> tf.Tensor:
    """`client_updates` by `cohort.cohort_function`: the same keys, the same
    updates to float32 round-off (tests/robust_hdp/test_cohort.py)."""
    # The drivers pass the same arrays every round: pack them once (the
    # cache holds them, so their ids stay theirs).
    ids = tuple(id(x) for x, _ in data)
    if self._packed is None or self._packed[0] != ids:
      self._packed = (ids, data, cohort_lib.pack_clients(data))
    x, y, num_examples = self._packed[2]
    keys = tf.stack([client_key(key, info['index']) for info in client_info])
    return self._cohort(
        weights, x, y, num_examples,
        np.array([i['batch_size'] for i in client_info], np.int32),
        np.array([i['noise_multiplier'] for i in client_info], np.float32),
        keys)

  def server_update(self, state, updates: tf.Tensor,
                    indices: Optional[Sequence[int]] = None,
                    weighed: Optional[tf.Tensor] = None):
    """(new state, measurements) from the stacked updates: of the clients
    of rows `indices` (a partial or empty cohort), or of every client in
    row order (None); the weights from `weighed` (default `updates`, as
    `NoiseAwareAggregationFactory.server_step`)."""
    clients = None
    if indices is not None:
      rows = tf.constant(np.reshape(np.asarray(indices, np.int32), [-1, 1]))
      n = self._aggregator.num_clients
      shape = [n, self._spec.num_parameters]
      updates = tf.scatter_nd(rows, updates, shape)
      if weighed is not None:
        weighed = tf.scatter_nd(rows, weighed, shape)
      clients = tf.scatter_nd(rows, tf.ones([len(indices)], tf.int32), [n])
    new_aggregator, flat, measurements = self._server(
        tf.nest.map_structure(tf.constant, state['aggregator']), updates,
        clients, weighed)
    delta = aggregator_lib.unflatten(
        flat, [tf.TensorSpec(s, tf.float32) for s in self._spec.shapes])
    new_state = collections.OrderedDict(
        global_weights=[w + d for w, d in zip(state['global_weights'], delta)],
        round_num=np.int32(state['round_num'] + 1),
        aggregator=new_aggregator,
        key=state['key'])
    return (tf.nest.map_structure(np.asarray, new_state),
            tf.nest.map_structure(np.asarray, measurements))

  def next(self, state, cohort) -> round_executor.RoundOutput:
    """The round of the cohort's clients (any subset). With its
    `weighing_info` (each client's info with another noise multiplier: a
    clip-only run's calibrated z_i), the clients also run with it, from the
    same model and keys, and the weights come from those updates."""
    cohort.check(self.backend)
    weighed = (None if cohort.weighing_info is None else
               self.client_updates(state, cohort.data, cohort.weighing_info))
    return round_executor.RoundOutput(*self.server_update(
        state, self.client_updates(state, cohort.data, cohort.info),
        [int(info['index']) for info in cohort.info], weighed))


def client_dataset(x: np.ndarray, y: np.ndarray) -> tf.data.Dataset:
  """A client's data as the process takes it: one element, all examples."""
  return tf.data.Dataset.from_tensors((np.asarray(x, np.float32),
                                       np.asarray(y, np.int32)))
