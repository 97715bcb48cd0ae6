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
"""UDP-Alg's round (paper 004) as a `tff.templates.IterativeProcess`.

    next(state, cohort, client_data) -> (state, measurements)

The server state holds phi, the embedding table and the noise key. `cohort`
(SERVER) lists the sampled users, padded to a fixed `max_cohort` rows, with
their weights w_u and the count B of real rows; `client_data` (CLIENTS) holds
each sampled user's examples, its K batches (`training.local_batches`' rows)
and its row in the cohort.

How users get different models: the server generates the cohort's
theta_u = h(phi, v_u) as one [max_cohort, ...] stack and broadcasts it; each
client takes its own row. Each client returns its Delta_u in its row of a
zero stack, and `federated_sum` assembles the cohort's [max_cohort, ...]
deltas at the server, which then runs the VJPs, clipping, weighting and noise
(`hypernetfl`, TF Privacy's queries). Both directions cost max_cohort times a
model per client: a simulation's way to give each user its own model and to
see each user's update, which the trusted server of UDP-Alg is allowed to.
`training.py` runs the same maths without TFF, faster; tests check the two
agree.
"""

import collections

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp.udp import hypernetfl
from tff_hdp.udp import hypernetwork


def build_process(net: hypernetwork.HyperNetwork, *, num_users: int,
                  max_cohort: int, local_steps: int, batch_size: int,
                  clip: float, noise_multiplier: float, max_weight: float,
                  denominator: float, local_learning_rate: float,
                  hyper_learning_rate: float, embedding_learning_rate: float,
                  clip_and_noise: bool, seed: int
                  ) -> tff.templates.IterativeProcess:
  """The process of one run (its constants as `training.train` derives them)."""
  target = net.target
  phi_type = [(np.float32, s) for s in net.shapes]
  state_type = tff.types.to_type(collections.OrderedDict(
      phi=phi_type,
      embeddings=(np.float32, (num_users, net.embedding_dim)),
      noise_key=(np.int64, (2,))))
  cohort_type = tff.types.to_type(collections.OrderedDict(
      users=(np.int32, (max_cohort,)), weights=(np.float32, (max_cohort,)),
      count=np.int32))
  client_type = tff.types.to_type(collections.OrderedDict(
      x=(np.float32, (None,) + target.input_shape), y=(np.int32, (None,)),
      indices=(np.int32, (local_steps, batch_size)),
      mask=(np.float32, (local_steps, batch_size)), row=np.int32))
  stack_type = tff.types.to_type(
      [(np.float32, (max_cohort,) + tuple(s)) for s in target.shapes])
  phi0 = net.init(seed)
  embeddings0 = net.init_embeddings(num_users, seed)

  @tff.tensorflow.computation
  def initial_state():
    return collections.OrderedDict(
        phi=[tf.constant(p) for p in phi0],
        embeddings=tf.constant(embeddings0),
        noise_key=tf.constant([seed, 0x554450], tf.int64))

  @tff.tensorflow.computation(state_type, cohort_type)
  def generate(state, cohort):
    return net.generate(state['phi'],
                        tf.gather(state['embeddings'], cohort['users']))

  @tff.tensorflow.computation(client_type, stack_type)
  def client_work(data, thetas):
    row = data['row']
    mine = [t[row][tf.newaxis] for t in thetas]
    delta = hypernetfl.local_deltas(
        target, mine, data['x'][tf.newaxis], data['y'][tf.newaxis],
        data['indices'][:, tf.newaxis], data['mask'][:, tf.newaxis],
        local_learning_rate)
    one_hot = tf.one_hot(row, max_cohort)
    return [tf.reshape(one_hot, [-1] + [1] * (d.shape.rank - 1)) * d
            for d in delta]

  @tff.tensorflow.computation(state_type, cohort_type, stack_type)
  def server_step(state, cohort, deltas):
    count = cohort['count']
    users = cohort['users'][:count]
    key, next_key = tf.unstack(
        tf.random.experimental.stateless_split(state['noise_key'], 2))
    embeddings = tf.gather(state['embeddings'], users)
    deltas = [d[:count] for d in deltas]
    total, _ = hypernetfl.cohort_gradient(
        net, state['phi'], embeddings, deltas, cohort['weights'][:count],
        clip=clip, clip_and_noise=clip_and_noise)
    new_phi, stddev = hypernetfl.phi_step(
        state['phi'], total, key, clip=clip,
        noise_multiplier=noise_multiplier, max_weight=max_weight,
        denominator=denominator, hyper_learning_rate=hyper_learning_rate,
        clip_and_noise=clip_and_noise)
    embedding_grads = net.embedding_vjps(state['phi'], embeddings, deltas)
    new_rows = embeddings - embedding_learning_rate * embedding_grads
    new_state = collections.OrderedDict(
        phi=new_phi,
        embeddings=tf.tensor_scatter_nd_update(
            state['embeddings'], users[:, tf.newaxis], new_rows),
        noise_key=next_key)
    return new_state, collections.OrderedDict(noise_stddev=stddev)

  @tff.federated_computation
  def initialize_fn():
    return tff.federated_eval(initial_state, tff.SERVER)

  @tff.federated_computation(tff.FederatedType(state_type, tff.SERVER),
                             tff.FederatedType(cohort_type, tff.SERVER),
                             tff.FederatedType(client_type, tff.CLIENTS))
  def next_fn(state, cohort, client_data):
    thetas = tff.federated_broadcast(
        tff.federated_map(generate, (state, cohort)))
    deltas = tff.federated_sum(
        tff.federated_map(client_work, (client_data, thetas)))
    result = tff.federated_map(server_step, (state, cohort, deltas))
    return result[0], result[1]

  return tff.templates.IterativeProcess(initialize_fn, next_fn)


def cohort_and_clients(users, weights, x, y, indices, mask, max_cohort: int):
  """`training.local_batches`' arrays as the process's two inputs."""
  count = len(users)
  if count > max_cohort:
    raise ValueError(f'{count} users sampled, more than max_cohort '
                     f'{max_cohort}')
  padded_users = np.zeros(max_cohort, np.int32)
  padded_users[:count] = users
  padded_weights = np.zeros(max_cohort, np.float32)
  padded_weights[:count] = weights
  cohort = collections.OrderedDict(users=padded_users,
                                   weights=padded_weights,
                                   count=np.int32(count))
  # Each client's examples stay zero-padded to n_max rows: its batch
  # indices only point at its real ones.
  clients = [
      collections.OrderedDict(x=x[row], y=y[row], indices=indices[:, row],
                              mask=mask[:, row], row=np.int32(row))
      for row in range(count)
  ]
  return cohort, clients
