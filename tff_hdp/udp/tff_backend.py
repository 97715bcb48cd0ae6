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
"""UDP-Alg's round on TFF's runtime, the driver's TFF backend (paper 004).

`round_fn` runs a round of the learning process (`process.compose_udp_process`,
what `process.build_udp_process` builds), or over `config.tff_workers`
(`distributed.DistributedRound`); the same round without TFF is
`direct_backend.DirectRound`.
"""

import collections

import numpy as np
import tensorflow as tf

from tff_hdp.udp import config as config_lib
from tff_hdp.udp import hypernetfl
from tff_hdp.udp import hypernetwork
from tff_hdp.udp import process


def _distributed_round_fn(net: hypernetwork.HyperNetwork,
                          config: config_lib.UdpConfig,
                          constants: hypernetfl.RoundConstants):
  """The round over `config.tff_workers` (`distributed.DistributedRound`)."""
  from tff_hdp.udp import distributed  # pylint: disable=g-import-not-at-top
  spread = distributed.DistributedRound(
      net, config.tff_workers, constants, local_steps=config.local_steps,
      batch_size=config.batch_size)

  def distributed_round_fn(round_num, state, users, x, y, indices, mask,
                           weights):
    del round_num  # The distributed round's state has no counter.
    return spread(state, users, x, y, indices, mask, weights)

  distributed_round_fn.runs_empty_rounds = False
  return distributed_round_fn


def round_fn(net: hypernetwork.HyperNetwork,
                  config: config_lib.UdpConfig,
                  constants: hypernetfl.RoundConstants, num_users: int):
  """The round on TFF's runtime: the learning process
  (`process.compose_udp_process`), or over `config.tff_workers`
  (`distributed.DistributedRound`). Both take
  (round number, state, users, x, y, indices, mask, weights) and return
  (new state, measurements); the process also runs the rounds in which
  nobody was sampled (it releases the noised empty estimator)."""
  if config.tff_workers:
    return _distributed_round_fn(net, config, constants)
  rows = (1 if config.variant.one_user_per_step else
          process.default_max_cohort(num_users, config.sampling_rate))
  learning = process.compose_udp_process(
      net, constants,
      sizes=process.Sizes(num_users, max_cohort=rows,
                          local_steps=config.local_steps,
                          batch_size=config.batch_size),
      privacy=process.udp_privacy(
          config.sampling_rate, config.noise_multiplier,
          clip_and_noise=config.private, delta=config.delta,
          accountant=config.accountant),
      seed=config.seed, key_in_state=True)  # The run's key, set below.

  def round_fn(round_num, state, users, x, y, indices, mask, weights):
    clients = process.client_elements(users, weights, x, y, indices, mask,
                                      rows) if len(users) else []
    process_state = collections.OrderedDict(
        round_num=np.int32(round_num), phi=state['phi'],
        embeddings=state['embeddings'], noise_key=state['noise_key'])
    output = learning.next(process_state, clients)
    new_state = collections.OrderedDict(
        (key, tf.nest.map_structure(np.asarray, output.state[key]))
        for key in ('phi', 'embeddings', 'noise_key'))
    return new_state, {'noise_stddev': output.metrics['noise_stddev']}

  round_fn.runs_empty_rounds = True
  return round_fn
