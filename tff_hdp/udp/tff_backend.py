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

`TffRound` is the `round_executor.RoundExecutor` of backend 'tff': a round
of the learning process (`process.compose_udp_process`, what
`process.build_udp_process` builds). The same round without TFF is
`direct_backend.DirectRound`, over TFF workers
`distributed.DistributedRound`.
"""

import collections

import numpy as np
import tensorflow as tf

from tff_hdp import round_executor
from tff_hdp.udp import config as config_lib
from tff_hdp.udp import direct_backend
from tff_hdp.udp import hypernetfl
from tff_hdp.udp import hypernetwork
from tff_hdp.udp import process


class TffRound(round_executor.RoundExecutor):
  """A round of the learning process on TFF's runtime.

  `initialize(key)` is `direct_backend.initial_state`; `next(state,
  cohort)` on an `executors.Cohort` runs the process's `next` on the
  cohort's users as its clients (`process.client_elements`, at most
  `max_cohort` of them), from the state with the cohort's round number (the
  process counts its rounds in its state), and keeps phi, the embedding
  table and the process's next noise key: the process splits the state's
  key as the direct round does. An empty cohort runs the process too (it
  releases the noised empty estimator).
  """

  backend = round_executor.TFF

  def __init__(self, net: hypernetwork.HyperNetwork,
               config: config_lib.UdpConfig,
               constants: hypernetfl.RoundConstants, num_users: int):
    """Builds the process.

    Args:
      net: The hypernetwork.
      config: The run's (seed, K, batch size, q, z, whether it clips and
        adds noise, delta, the accountant; pFedHN: one user a round).
      constants: The rounds' constants.
      num_users: N, the embedding table's rows.
    """
    self._net, self._num_users, self._seed = net, num_users, config.seed
    self.max_cohort = (1 if config.variant.one_user_per_step else
                       process.default_max_cohort(num_users,
                                                  config.sampling_rate))
    self._learning = process.compose_udp_process(
        net, constants,
        sizes=process.Sizes(num_users, max_cohort=self.max_cohort,
                            local_steps=config.local_steps,
                            batch_size=config.batch_size),
        privacy=process.udp_privacy(
            config.sampling_rate, config.noise_multiplier,
            clip_and_noise=config.private, delta=config.delta,
            accountant=config.accountant),
        seed=config.seed, key_in_state=True)  # The run's key, in the state.

  def initialize(self, key) -> collections.OrderedDict:
    return direct_backend.initial_state(self._net, self._num_users,
                                        self._seed, key)

  def next(self, state, cohort) -> round_executor.RoundOutput:
    cohort.check()
    state = tf.nest.map_structure(np.asarray, state)
    clients = (process.client_elements(cohort.users, cohort.weights,
                                       *cohort.batches, self.max_cohort)
               if len(cohort.users) else [])
    process_state = collections.OrderedDict(
        round_num=np.int32(cohort.round_num), phi=state['phi'],
        embeddings=state['embeddings'], noise_key=state['noise_key'])
    output = self._learning.next(process_state, clients)
    new_state = collections.OrderedDict(
        (key, tf.nest.map_structure(np.asarray, output.state[key]))
        for key in ('phi', 'embeddings', 'noise_key'))
    return round_executor.RoundOutput(
        new_state, {'noise_stddev': float(output.metrics['noise_stddev'])})
