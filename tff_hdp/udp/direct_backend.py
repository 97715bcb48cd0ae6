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
"""UDP-Alg's round in plain TensorFlow, the driver's direct backend.

`DirectRound` is `hypernetfl.round_step` as one tf.function, and
`hypernetfl.empty_round_step` when nobody is sampled (the noised empty
estimator, with the same measurements); the TFF round is
`tff_backend.round_fn` (tests/test_round_conformance.py holds them to one
contract).
"""

from typing import Any

import tensorflow as tf

from tff_hdp.udp import config as config_lib
from tff_hdp.udp import hypernetfl
from tff_hdp.udp import hypernetwork


def round_signature(net: hypernetwork.HyperNetwork,
                    batch_size: int) -> list[Any]:
  """The direct round's input signature: phi, the users' [B, e]
  embeddings, their `hypernetfl.UserBatches` (flat), [B] weights, the key."""
  return [
      [tf.TensorSpec(s, tf.float32) for s in net.shapes],
      tf.TensorSpec((None, net.embedding_dim), tf.float32),
      tf.TensorSpec((None, None) + net.target.input_shape, tf.float32),
      tf.TensorSpec((None, None), tf.int32),
      tf.TensorSpec((None, None, batch_size), tf.int32),
      tf.TensorSpec((None, None, batch_size), tf.float32),
      tf.TensorSpec((None,), tf.float32),
      tf.TensorSpec((2,), tf.int64),
  ]


class DirectRound:
  """A round without TFF: `hypernetfl.round_step` as one tf.function
  (`round_fn`), and `hypernetfl.empty_round_step` when nobody is sampled.

  `direct_round(round_num, phi, embeddings, batches, weights, key)` takes
  phi, the sampled users' embeddings, their `local_batches` (None when
  nobody is sampled), weights and the round's noise key, and returns
  (new phi, the users' new embeddings (None without users), the round's
  measurements), in NumPy and floats.
  """

  def __init__(self, net: hypernetwork.HyperNetwork,
               config: config_lib.UdpConfig,
               constants: hypernetfl.RoundConstants):
    signature = round_signature(net, config.batch_size)

    @tf.function(input_signature=signature)
    def round_fn(phi, embeddings, x, y, indices, mask, weights, key):
      return hypernetfl.round_step(
          net, phi, embeddings, hypernetfl.UserBatches(x, y, indices, mask),
          weights, key, constants)

    @tf.function(input_signature=[signature[0], signature[7]])
    def empty_round_fn(phi, key):
      step = hypernetfl.empty_round_step(phi, key, constants)
      return step.phi, step.noise_stddev

    self.round_fn = round_fn
    self.empty_round_fn = empty_round_fn

  def __call__(self, round_num: int, phi, embeddings, batches, weights, key):
    del round_num  # The round is the same every round.
    phi = [tf.constant(p) for p in phi]
    if batches is None:
      # The same measurements as a round with users (`round_result`).
      new_phi, stddev = self.empty_round_fn(phi, key)
      return ([p.numpy() for p in new_phi], None,
              {'noise_stddev': float(stddev)})
    result = self.round_fn(phi, embeddings, *batches, weights, key)
    return ([p.numpy() for p in result.phi], result.embeddings.numpy(),
            {k: float(v) for k, v in result.measurements.items()})
