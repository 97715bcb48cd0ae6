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
"""Checks of the `tff.learning.templates.LearningProcess` contract that
every system's process keeps."""

import numpy as np
import tensorflow_federated as tff


def assert_model_weights_round_trip(process, state, initial):
  """`process.get_model_weights(state)` is TFF's `ModelWeights` of the
  `initial` trainable weights, and `set_model_weights` puts back what it is
  given; returns the state holding the weights moved by +1."""
  weights = process.get_model_weights(state)
  assert isinstance(weights, tff.learning.models.ModelWeights)
  for w, w0 in zip(weights.trainable, initial):
    np.testing.assert_array_equal(w, w0)
  moved = tff.learning.models.ModelWeights(
      trainable=[w + 1.0 for w in weights.trainable], non_trainable=[])
  moved_state = process.set_model_weights(state, moved)
  for w, w0 in zip(process.get_model_weights(moved_state).trainable,
                   moved.trainable):
    np.testing.assert_array_equal(w, w0)
  return moved_state


def run_rounds(process, source, rounds: int):
  """The state after `rounds` rounds of `process` on cohorts drawn from the
  data source `source`."""
  state = process.initialize()
  iterator = source.iterator()
  for _ in range(rounds):
    state = process.next(state, iterator.select()).state
  return state
