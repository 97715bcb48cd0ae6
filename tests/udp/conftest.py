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
"""What the UDP-Alg tests share: a tiny run and the offline users it uses."""

import pytest

from tests import conftest as shared
from tff_hdp import datasets
from tff_hdp.udp import config

# A run of seconds: 3 rounds, 2 local steps, the FC NN target.
TINY = config.UdpConfig(target='fc', rounds=3, sampling_rate=0.3, clip=0.1,
                        noise_multiplier=1.0, sample_cap=20, local_steps=2,
                        batch_size=8, local_learning_rate=0.05,
                        hyper_learning_rate=0.1, embedding_learning_rate=0.1,
                        eval_every=2, seed=1, mechanism_seed=1)


def sampled_users(run: config.UdpConfig, num_users: int, round_num: int):
  """The users round `round_num` of a reproducible run samples, recomputed
  from its mechanism seed (the driver publishes no count)."""
  return shared.poisson_cohort(run.mechanism_seed, num_users,
                               run.sampling_rate, round_num)


@pytest.fixture(scope='session')
def data():
  """12 offline users (digits, two labels each)."""
  return datasets.load_udp_data('digits', num_users=12, seed=0)
