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

The runtime (workers, the mergeable context, stacks of per-client outputs,
failure) is `tff_hdp.distributed`; this module is the round of
`process.build_process` as a `tff.framework.MergeableCompForm`:

- up_to_merge (per worker, on its slice of the sampled users u): broadcast
  phi and the embeddings; each user generates theta_u = h(phi, v_u), takes
  its K local steps, and computes its weighted clipped hypernetwork gradient
  w_u Clip(g_u, S) and its new embedding (`hypernetfl.users_step`, one user
  at a time); the worker sums the gradients and stacks the embeddings with
  their user ids;
- merge: add the sums; concatenate the stacks;
- after_merge (once): `hypernetfl.phi_step`: the Gaussian noise
  N(0, (z max_w S)^2 I) added once to the merged sum, from the stateless key
  in the server state (split as the process splits it), the division by
  q W and phi's step; the new embeddings written to their users' rows.

The round equals one machine's up to float summation order (the sum over
users is regrouped by worker, and each user's theta_u is generated alone
rather than in the cohort's batch), and the noise draw is the same
(tests/udp/test_distributed.py).

Trust: UDP-Alg's server is trusted; a worker sees its users' data and their
unnoised clipped gradients and partial sums, so it must be as trusted as
the server (inside its trust boundary; a simulation runtime, not secure
aggregation). What the guarantee covers is unchanged: the released phi
after the noise.
"""

import collections
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import distributed
from tff_hdp.udp import hypernetfl
from tff_hdp.udp import hypernetwork


def build_round_form(net: hypernetwork.HyperNetwork, *, num_users: int,
                     local_steps: int, batch_size: int, clip: float,
                     noise_multiplier: float, max_weight: float,
                     denominator: float, local_learning_rate: float,
                     hyper_learning_rate: float,
                     embedding_learning_rate: float, clip_and_noise: bool
                     ) -> tff.framework.MergeableCompForm:
  """The round as a form (its constants as `process.build_process`'s).

  Its argument is (state@SERVER, users@CLIENTS), each user's value its
  examples, K batches, user id and weight w_u (`clients`); its result
  (new state, measurements), at SERVER.
  """
  target = net.target
  phi_type = tff.types.to_type([(np.float32, s) for s in net.shapes])
  state_type = tff.types.to_type(collections.OrderedDict(
      phi=phi_type,
      embeddings=(np.float32, (num_users, net.embedding_dim)),
      noise_key=(np.int64, (2,))))
  user_type = tff.types.to_type(collections.OrderedDict(
      x=(np.float32, (None,) + target.input_shape), y=(np.int32, (None,)),
      indices=(np.int32, (local_steps, batch_size)),
      mask=(np.float32, (local_steps, batch_size)), user=np.int32,
      weight=np.float32))
  embedding_type = tff.TensorType(np.float32, (net.embedding_dim,))
  constants = dict(clip=clip, local_learning_rate=local_learning_rate,
                   embedding_learning_rate=embedding_learning_rate,
                   clip_and_noise=clip_and_noise)

  @tff.tensorflow.computation(state_type)
  def broadcast_part(state):
    return collections.OrderedDict(phi=state['phi'],
                                   embeddings=state['embeddings'])

  @tff.tensorflow.computation(user_type,
                              broadcast_part.type_signature.result)
  def user_work(data, server):
    embedding = tf.gather(server['embeddings'], data['user'])[tf.newaxis]
    total, _, new_embedding = hypernetfl.users_step(
        net, server['phi'], embedding, data['x'][tf.newaxis],
        data['y'][tf.newaxis], data['indices'][:, tf.newaxis],
        data['mask'][:, tf.newaxis], data['weight'][tf.newaxis],
        **constants)
    return collections.OrderedDict(total=total, embedding=new_embedding[0],
                                   user=data['user'])

  @tff.federated_computation(tff.FederatedType(state_type, tff.SERVER),
                             tff.FederatedType(user_type, tff.CLIENTS))
  def up_to_merge(state, users):
    work = tff.federated_map(
        user_work,
        (users, tff.federated_broadcast(
            tff.federated_map(broadcast_part, state))))
    return tff.federated_zip(collections.OrderedDict(
        total=tff.federated_sum(work.total),
        embeddings=distributed.gather_stack(work.embedding, work.user,
                                            embedding_type)))

  merged_type = up_to_merge.type_signature.result.member
  concat = distributed.stack_computations(embedding_type)[2]

  @tff.tensorflow.computation(merged_type, merged_type)
  def merge(a, b):
    return collections.OrderedDict(
        total=tf.nest.map_structure(tf.add, a['total'], b['total']),
        embeddings=concat(a['embeddings'], b['embeddings']))

  @tff.tensorflow.computation(state_type, merged_type)
  def server_step(state, merged):
    key, next_key = tf.unstack(
        tf.random.experimental.stateless_split(state['noise_key'], 2))
    new_phi, stddev = hypernetfl.phi_step(
        state['phi'], merged['total'], key, clip=clip,
        noise_multiplier=noise_multiplier, max_weight=max_weight,
        denominator=denominator, hyper_learning_rate=hyper_learning_rate,
        clip_and_noise=clip_and_noise)
    stack = merged['embeddings']
    new_state = collections.OrderedDict(
        phi=new_phi,
        embeddings=tf.tensor_scatter_nd_update(
            state['embeddings'], stack['position'][:, tf.newaxis],
            stack['rows']),
        noise_key=next_key)
    return new_state, collections.OrderedDict(noise_stddev=stddev)

  @tff.federated_computation(up_to_merge.type_signature.parameter,
                             tff.FederatedType(merged_type, tff.SERVER))
  def after_merge(arg, merged):
    result = tff.federated_map(server_step, (arg[0], merged))
    return result[0], result[1]

  return tff.framework.MergeableCompForm(
      up_to_merge=up_to_merge, merge=merge, after_merge=after_merge)


def clients(users, weights, x, y, indices, mask) -> list:
  """`training.local_batches`' arrays as the form's CLIENTS argument."""
  return [
      collections.OrderedDict(x=x[row], y=y[row], indices=indices[:, row],
                              mask=mask[:, row], user=np.int32(u),
                              weight=np.float32(w))
      for row, (u, w) in enumerate(zip(users, weights))
  ]


class DistributedRound:
  """Runs `build_round_form` over TFF workers: `round(state, users, x, y,
  indices, mask, weights)` -> (new state, measurements), NumPy."""

  def __init__(self, net: hypernetwork.HyperNetwork,
               workers: Sequence[str] = (), *, timeout: float = 60.0,
               context: Optional[
                   tff.framework.MergeableCompExecutionContext] = None,
               **constants):
    """Connects to the workers and builds the round.

    Args:
      net: The hypernetwork.
      workers: 'host:port' of each running worker (see
        `distributed.parse_workers`); empty when `context` is given.
      timeout: Seconds to wait for each worker to answer.
      context: A mergeable context (`distributed.create_mergeable_context`)
        to use instead of connecting to `workers`.
      **constants: `build_round_form`'s keyword arguments.
    """
    self._context = distributed.context_for(workers, context, timeout)
    self._form = build_round_form(net, **constants)

  def __call__(self, state, users, x, y, indices, mask, weights):
    new_state, measurements = self._context.invoke(
        self._form, [state, clients(users, weights, x, y, indices, mask)])
    return (tf.nest.map_structure(np.asarray, new_state),
            {k: float(v) for k, v in measurements.items()})
