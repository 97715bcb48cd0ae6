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
"""UDP-Alg rounds spread over several TFF worker processes (paper 004).

The runtime is `tff_hdp.distributed`; this module is the round of
`process.compose_udp_process` as a `tff.framework.MergeableCompForm`:

- up_to_merge (per worker, on its part of the sampled users, one CLIENTS
  value: `distributed.cut` of the cohort, as many parts as workers, with
  the users' embeddings): broadcast phi; the part's users generate their
  theta_u = h(phi, v_u), take their K local steps, and compute their
  weighted clipped hypernetwork gradients w_u Clip(g_u, S), summed, and
  their new embeddings (`hypernetfl.users_step`, the direct round's code,
  batched over the part's users); the embeddings leave as a stack with
  their user ids;
- merge: add the sums; concatenate the stacks;
- after_merge: hands the merged sum and stacks to the caller;
- then, in the calling process (the server), never on a worker:
  `hypernetfl.phi_step`: the Gaussian noise N(0, (z max_w S)^2 I) added
  once to the merged sum, from the stateless key the server keeps (split as
  the process splits it), the division by q W and phi's step. The form's
  only SERVER value is phi, so no worker can regenerate the noise. The new
  embeddings come back with their user ids into the driver's table.

`DistributedRound` runs it as the `round_executor.RoundExecutor` of
backend 'distributed' (`executors.build_executor`); a round in which nobody
is sampled needs no worker and takes the direct round's empty step.

The round equals one machine's up to float summation order (the sum over
users is regrouped by worker, and each part's models are generated in their
own batch), and the noise draw is the same (tests/test_round_executors.py:
a cohort cut over both workers, noise on, the direct round's to 1e-6).
A part is one CLIENTS value rather than one per user so that its users share
the hypernetwork's matmuls, as on one machine (one per user, measured:
docs/performance.md, "Beyond one machine"). Trust: a worker sees its users'
data and unnoised clipped gradients, so it must be as trusted as UDP-Alg's
trusted server; the guarantee covers the released phi, after the noise.
"""

import collections
from typing import NamedTuple, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import distributed
from tff_hdp import round_executor
from tff_hdp.udp import config as config_lib
from tff_hdp.udp import direct_backend
from tff_hdp.udp import hypernetfl
from tff_hdp.udp import hypernetwork


class _FormTypes(NamedTuple):
  """The TFF types of the form's values."""
  phi: tff.Type        # phi, the form's SERVER value.
  part: tff.Type       # A part of the cohort (`parts`).
  embedding: tff.Type  # One user's embedding.


def _form_types(net: hypernetwork.HyperNetwork, local_steps: int,
                batch_size: int) -> _FormTypes:
  target = net.target
  phi_type = tff.types.to_type([(np.float32, s) for s in net.shapes])
  part_type = tff.types.to_type(collections.OrderedDict(
      x=(np.float32, (None, None) + target.input_shape),
      y=(np.int32, (None, None)),
      indices=(np.int32, (local_steps, None, batch_size)),
      mask=(np.float32, (local_steps, None, batch_size)),
      users=(np.int32, (None,)), weights=(np.float32, (None,)),
      embeddings=(np.float32, (None, net.embedding_dim))))
  embedding_type = tff.TensorType(np.float32, (net.embedding_dim,))
  return _FormTypes(phi_type, part_type, embedding_type)


def _up_to_merge(net: hypernetwork.HyperNetwork,
                 constants: hypernetfl.RoundConstants, types: _FormTypes):
  """The form's up_to_merge: each part's users' `hypernetfl.users_step`,
  the sums added and the embeddings stacked."""

  @tff.tensorflow.computation(types.part, types.phi)
  def part_work(part, phi):
    batches = hypernetfl.UserBatches(part['x'], part['y'], part['indices'],
                                     part['mask'])
    users = hypernetfl.users_step(net, phi, part['embeddings'], batches,
                                  part['weights'], constants)
    return collections.OrderedDict(
        # The part's unknown size hides some shapes: set them, to be summed.
        total=[tf.ensure_shape(t, s) for t, s in zip(users.total,
                                                     net.shapes)],
        embeddings=collections.OrderedDict(position=part['users'],
                                           rows=users.embeddings))

  @tff.federated_computation(tff.FederatedType(types.phi, tff.SERVER),
                             tff.FederatedType(types.part, tff.CLIENTS))
  def up_to_merge(phi, parts):
    work = tff.federated_map(part_work,
                             (parts, tff.federated_broadcast(phi)))
    return tff.federated_zip(collections.OrderedDict(
        total=tff.federated_sum(work.total),
        embeddings=distributed.gather_stacks(work.embeddings,
                                             types.embedding)))

  return up_to_merge


def _merge_and_after(up_to_merge, types: _FormTypes):
  """The form's merge (add the sums, concatenate the stacks) and
  after_merge (the merged value as it is: the noise is the caller's)."""
  merged_type = up_to_merge.type_signature.result.member
  concat = distributed.stack_computations(types.embedding)[2]

  @tff.tensorflow.computation(merged_type, merged_type)
  def merge(a, b):
    return collections.OrderedDict(
        total=tf.nest.map_structure(tf.add, a['total'], b['total']),
        embeddings=concat(a['embeddings'], b['embeddings']))

  @tff.federated_computation(up_to_merge.type_signature.parameter,
                             tff.FederatedType(merged_type, tff.SERVER))
  def after_merge(arg, merged):
    del arg  # phi's step and its noise are the caller's, at the server.
    return merged

  return merge, after_merge


def build_round_form(net: hypernetwork.HyperNetwork,
                     constants: hypernetfl.RoundConstants, *,
                     local_steps: int, batch_size: int
                     ) -> tff.framework.MergeableCompForm:
  """The users' part of a round as a form, up to the merge (its constants as
  `process.compose_udp_process`'s, but for the table's size: the form does
  not hold the embedding table).

  Its argument is (phi@SERVER, parts@CLIENTS): each part's value its users'
  examples, K batches, ids, weights w_u and embeddings (`parts`). Its
  result, at SERVER: the merged weighted clipped sum and a stack of the
  users' new embeddings with their ids, before any noise.
  """
  types = _form_types(net, local_steps, batch_size)
  up_to_merge = _up_to_merge(net, constants, types)
  merge, after_merge = _merge_and_after(up_to_merge, types)
  return tff.framework.MergeableCompForm(
      up_to_merge=up_to_merge, merge=merge, after_merge=after_merge)


def parts(users, weights, embeddings, x, y, indices, mask,
          num_parts: int) -> list:
  """`training.local_batches`' arrays and the users' rows of the
  `embeddings` table as the form's CLIENTS argument: the cohort
  `distributed.cut` into `num_parts` parts (one per worker)."""
  return [
      collections.OrderedDict(x=x[p], y=y[p], indices=indices[:, p],
                              mask=mask[:, p],
                              users=np.asarray(users[p], np.int32),
                              weights=np.asarray(weights[p], np.float32),
                              embeddings=embeddings[users[p]])
      for p in distributed.cut(len(users), num_parts)
  ]


class DistributedRound(round_executor.RoundExecutor):
  """A round of `build_round_form` over TFF workers.

  `initialize(key)` is `direct_backend.initial_state`; `next(state,
  cohort)` on an `executors.Cohort` cuts the cohort into one part per
  worker (`parts`), runs the form on them and, here at the server, splits
  the state's noise key as the direct round does, adds the noise to the
  merged sum and steps phi (`hypernetfl.phi_step`); the users' new
  embeddings go back into the table. An empty cohort needs no worker: it
  takes the direct round's empty step (`direct_backend.DirectRound`,
  `hypernetfl.empty_round_step`), here at the server.
  """

  backend = round_executor.DISTRIBUTED

  def __init__(self, net: hypernetwork.HyperNetwork,
               config: config_lib.UdpConfig,
               constants: hypernetfl.RoundConstants, num_users: int, *,
               workers: Sequence[str], timeout: float = 60.0):
    """Connects to the workers and builds the round.

    Args:
      net: The hypernetwork.
      config: The run's (its seed, K and batch size).
      constants: The run's (`build_round_form`).
      num_users: N, the embedding table's rows.
      workers: 'host:port' of each running worker (see
        `distributed.parse_workers`).
      timeout: Seconds to wait for each worker to answer.
    """
    self._net, self._num_users, self._seed = net, num_users, config.seed
    self._context = distributed.context_for(workers, None, timeout)
    self._num_workers = len(workers)
    self._form = build_round_form(net, constants,
                                  local_steps=config.local_steps,
                                  batch_size=config.batch_size)

    @tf.function(autograph=False)
    def server_step(phi, total, noise_key):
      key, next_key = tf.unstack(
          tf.random.experimental.stateless_split(noise_key, 2))
      step = hypernetfl.phi_step(phi, total, key, constants)
      return step.phi, next_key, step.noise_stddev

    self._server_step = server_step
    # A round without users is the direct round's, bit for bit as on one
    # machine: `server_step` on a zero sum differs from it in the last
    # float32 bit (the two graphs are optimised differently).
    self._empty_round = direct_backend.DirectRound(net, config, constants,
                                                   num_users)

  def initialize(self, key) -> collections.OrderedDict:
    return direct_backend.initial_state(self._net, self._num_users,
                                        self._seed, key)

  def next(self, state, cohort) -> round_executor.RoundOutput:
    cohort.check()
    users = np.asarray(cohort.users)
    if not len(users):
      return self._empty_round.next(state, cohort)
    state = tf.nest.map_structure(np.asarray, state)
    merged = self._context.invoke(
        self._form,
        [list(state['phi']),
         parts(users, np.asarray(cohort.weights), state['embeddings'],
               *cohort.batches, self._num_workers)])
    phi, next_key, stddev = self._server_step(
        [tf.constant(p) for p in state['phi']],
        [tf.constant(t) for t in merged['total']],
        tf.constant(state['noise_key'], tf.int64))
    stack = merged['embeddings']
    embeddings = np.array(state['embeddings'])
    embeddings[np.asarray(stack['position'])] = np.asarray(stack['rows'])
    new_state = collections.OrderedDict(
        phi=[p.numpy() for p in phi], embeddings=embeddings,
        noise_key=next_key.numpy())
    return round_executor.RoundOutput(new_state,
                                      {'noise_stddev': float(stddev)})
