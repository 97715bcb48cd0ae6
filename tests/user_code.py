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
"""What the Python API's tests play the TFF user with: a Keras model equal
to the package's FC NN, a `ClientData`, and an in-memory program state."""

import collections
from typing import Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import models

SHAPE = (8, 8)
PACKAGE = models.fc_model(SHAPE, 10, hidden=16)


def keras_functional(weights) -> tff.learning.models.FunctionalModel:
  """The user's model: Keras layers equal to PACKAGE, with its weights."""
  keras_model = tf.keras.Sequential([
      tf.keras.layers.InputLayer(SHAPE), tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(16, activation='relu'),
      tf.keras.layers.Dense(10)])
  keras_model.set_weights(weights)
  return tff.learning.models.functional_model_from_keras(
      keras_model,
      tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      (tf.TensorSpec((None,) + SHAPE, tf.float32),
       tf.TensorSpec((None,), tf.int32)))


def client_data(sizes: Sequence[int], prefix: str
                ) -> tff.simulation.datasets.ClientData:
  """Clients `prefix`_i of sizes[i] random 8 x 8 examples (fixed seed)."""
  rng = np.random.default_rng(3)
  return tff.simulation.datasets.TestClientData({
      f'{prefix}_{i}': collections.OrderedDict(
          x=rng.random((n,) + SHAPE).astype(np.float32),
          y=rng.integers(0, 10, n).astype(np.int32))
      for i, n in enumerate(sizes)})


class MemoryState(tff.program.ProgramStateManager):
  """Program state kept in memory (train_model saves it every round)."""

  def __init__(self):
    self.saved = {}

  async def get_versions(self):
    return sorted(self.saved) or None

  async def load(self, version, structure):
    del structure
    return self.saved[version]

  async def remove(self, version):
    self.saved.pop(version, None)

  async def save(self, program_state, version):
    self.saved[version] = program_state
