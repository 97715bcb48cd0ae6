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

`DirectRound` is the `round_executor.RoundExecutor` of backend 'direct':
`hypernetfl.round_step` as one tf.function (`RoundStep`), and
`hypernetfl.empty_round_step` when nobody is sampled (the noised empty
estimator, with the same measurements). The same round on TFF's runtime is
`tff_backend.TffRound`, over TFF workers `distributed.DistributedRound`
(tests/test_round_executors.py and tests/test_round_conformance.py hold
them to one contract); `executors.build_executor` picks one.
"""

import collections
import functools
from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf

from tff_hdp import round_executor
from tff_hdp.privacy import mechanism_key
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


def initial_state(net: hypernetwork.HyperNetwork, num_users: int, seed: int,
                  key) -> collections.OrderedDict:
  """The state every backend's round starts from (`RoundExecutor.initialize`).

  OrderedDict(phi=phi^0, embeddings=[N, e] v_u^0, noise_key=`key`): phi^0
  and the embeddings from the public `seed` (`net.init`,
  `net.init_embeddings`), the noise key the run's mechanism key (int64
  [2]), split once every round (`split_key`).
  """
  return collections.OrderedDict(
      phi=net.init(seed),
      embeddings=net.init_embeddings(num_users, seed),
      noise_key=mechanism_key.as_key(key).copy())


def split_key(noise_key) -> tuple[np.ndarray, np.ndarray]:
  """(this round's noise key, the state's next key): the stateless split
  of the state's key, as the TFF process splits its own."""
  key, next_key = tf.random.experimental.stateless_split(noise_key, 2).numpy()
  return key, next_key


class RoundStep:
  """The round's maths from the state's parts, as tf.functions.

  `step(round_num, phi, embeddings, batches, weights, key)` takes phi, the
  sampled users' [B, e] embeddings, their `hypernetfl.UserBatches` (None
  when nobody is sampled), [B] weights w_u and the round's noise key, and
  returns (new phi, the users' new embeddings (None without users), the
  round's measurements), in NumPy and floats: `hypernetfl.round_step`
  (`round_fn`), or `hypernetfl.empty_round_step` (`empty_round_fn`)
  without users. The round number is not read: every round is the same
  step (an audit's step, `audit.AuditedRound`, draws its canaries by it).
  """

  def __init__(self, net: hypernetwork.HyperNetwork,
               constants: hypernetfl.RoundConstants, batch_size: int):
    signature = round_signature(net, batch_size)

    # No autograph: the round's loops are TensorFlow's own (`tf.while_loop`,
    # `tf.map_fn`, `tf.vectorized_map`) and its Python branches test
    # constants; converting the hundred-odd functions it calls cost each
    # run seconds at its start (docs/performance_udp_bench.md, Tracing).
    @tf.function(input_signature=signature, autograph=False)
    def round_fn(phi, embeddings, x, y, indices, mask, weights, key):
      return hypernetfl.round_step(
          net, phi, embeddings, hypernetfl.UserBatches(x, y, indices, mask),
          weights, key, constants)

    @tf.function(input_signature=[signature[0], signature[7]],
                 autograph=False)
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


@functools.lru_cache(maxsize=8)
def round_step(net: hypernetwork.HyperNetwork,
               constants: hypernetfl.RoundConstants,
               batch_size: int) -> RoundStep:
  """`RoundStep(net, constants, batch_size)`, one for each of them in a
  process: a round's graph is theirs alone (every other input is a tensor
  of its signature), so a second run of the same round (a resumed run, or
  one of another seed or key) reuses the first's traces, bit for bit the
  same ops, instead of tracing them again (some seconds)."""
  return RoundStep(net, constants, batch_size)


class DirectRound(round_executor.RoundExecutor):
  """A round without TFF, on one machine.

  `initialize(key)` is `initial_state`; `next(state, cohort)` on an
  `executors.Cohort` splits the state's noise key (`split_key`), runs the
  round's step on phi and the cohort's rows of the embedding table (its
  users, their batches and weights, with this round's key) and writes phi,
  their new rows and the next key into the new state. An empty cohort
  takes the noised empty step, with the same measurements.
  """

  backend = round_executor.DIRECT

  def __init__(self, net: hypernetwork.HyperNetwork,
               config: config_lib.UdpConfig,
               constants: hypernetfl.RoundConstants, num_users: int, *,
               step: Optional[Callable[..., Any]] = None):
    """Builds the round.

    Args:
      net: The hypernetwork.
      config: The run's (its seed and batch size).
      constants: The rounds' constants.
      num_users: N, the embedding table's rows.
      step: The round's maths, called as `RoundStep` is (default: the
        process's `round_step`; the canary audit passes its own,
        `audit.AuditedRound`).
    """
    self._net, self._num_users, self._seed = net, num_users, config.seed
    self._step = step or round_step(net, constants, config.batch_size)

  def initialize(self, key) -> collections.OrderedDict:
    return initial_state(self._net, self._num_users, self._seed, key)

  def next(self, state, cohort) -> round_executor.RoundOutput:
    cohort.check()
    state = tf.nest.map_structure(np.asarray, state)
    key, next_key = split_key(state['noise_key'])
    users = np.asarray(cohort.users)
    phi, rows, measurements = self._step(
        cohort.round_num, state['phi'],
        state['embeddings'][users] if len(users) else None, cohort.batches,
        cohort.weights, key)
    embeddings = state['embeddings']
    if len(users):
      embeddings = embeddings.copy()
      embeddings[users] = rows
    return round_executor.RoundOutput(
        collections.OrderedDict(phi=phi, embeddings=embeddings,
                                noise_key=next_key), measurements)
