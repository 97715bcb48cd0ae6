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
"""UDP-Alg's round on each backend, and its cohort (paper 004).

    executor = executors.build_executor(config.round_backend, net,
                                        config, constants, num_users,
                                        workers=config.tff_workers)
    state = executor.initialize(key)
    output = executor.next(state, executors.Cohort(t, users, weights,
                                                   batches))

One round of Algorithm 1 from the state (phi, the embedding table v, the
noise key): every sampled user u generates theta_u = h(phi, v_u), takes K
local steps, and its hypernetwork gradient g_u is clipped to S and
weighted by w_u; the server releases sum_u w_u Clip(g_u, S) +
N(0, (z max_w S)^2 I) under the round's key (split from the state's), steps
phi <- phi - lambda (release / q W) and the users' embeddings by their own
(unnoised) gradients. A round in which nobody is sampled still releases
the noised empty sum. The three backends (`round_executor.RoundExecutor`)
compute it alike: `direct_backend.DirectRound` (plain TensorFlow),
`tff_backend.TffRound` (the learning process on TFF's runtime) and
`distributed.DistributedRound` (TFF over workers), all from the same key
to float32 round-off (tests/test_round_executors.py).
"""

from typing import NamedTuple, Optional, Sequence

import numpy as np

from tff_hdp import round_executor
from tff_hdp.udp import config as config_lib
from tff_hdp.udp import direct_backend
from tff_hdp.udp import hypernetfl
from tff_hdp.udp import hypernetwork
from tff_hdp.udp import tff_backend


class Cohort(NamedTuple):
  """The users of one round, the same on every backend.

  Attributes:
    round_num: t, the round (from 0) the cohort was drawn for. The round's
      maths does not read it (every round is the same step, and its noise
      key is the state's), but the TFF process counts its rounds in its own
      state and an audit draws its canaries per round (`audit.AuditedRound`).
      It travels with the cohort, not in the state, so that the state stays
      (phi, embeddings, noise_key) on every backend, as the driver
      checkpoints it.
    users: [B] the sampled users' indices, distinct (B = 0: nobody was
      sampled; pFedHN: one user).
    weights: [B] float32, their weights w_u = min(|D_u| / w_hat, 1)
      (pFedHN: 1).
    batches: Their data and K local batches, `hypernetfl.UserBatches` (x
      [B, n_max, ...], y [B, n_max], indices and mask [K, B, b]:
      `process.local_batches`), or None when B = 0.
  """
  round_num: int
  users: np.ndarray
  weights: np.ndarray
  batches: Optional[hypernetfl.UserBatches] = None

  @classmethod
  def empty(cls, round_num: int) -> 'Cohort':
    """Round `round_num`'s cohort when nobody was sampled."""
    return cls(round_num, np.zeros(0, np.int64), np.zeros(0, np.float32))

  def check(self) -> None:
    """Raises ValueError, in one line, unless a round can run this cohort."""
    count = len(self.users)
    if len(self.weights) != count:
      raise ValueError(f'Cohort: {count} users but {len(self.weights)} '
                       'weights; give one weight per user')
    if count and self.batches is None:
      raise ValueError(f'Cohort: {count} users but no batches; give their '
                       'hypernetfl.UserBatches (None only without users)')
    if not count and self.batches is not None:
      raise ValueError('Cohort: batches without users; give batches=None '
                       'when nobody is sampled')
    if count and len(self.batches.x) != count:
      raise ValueError(f'Cohort: {count} users but batches of '
                       f'{len(self.batches.x)}; give one row per user')


def build_executor(backend: str,
                   net: hypernetwork.HyperNetwork,
                   config: config_lib.UdpConfig,
                   constants: hypernetfl.RoundConstants,
                   num_users: int, *,
                   workers: Sequence[str] = ()
                   ) -> round_executor.RoundExecutor:
  """The round of `config`'s algorithm on `backend`.

  Args:
    backend: One of `round_executor.BACKENDS`.
    net: The hypernetwork.
    config: The run's hyperparameters (its `backend` and `tff_workers` are
      not read: `backend` and `workers` choose).
    constants: The rounds' constants (`process.round_constants`).
    num_users: N, the embedding table's rows.
    workers: 'host:port' of each running TFF worker: for DISTRIBUTED only,
      which needs them.

  Returns:
    Its `round_executor.RoundExecutor`; `next` takes a `Cohort`.

  Raises:
    ValueError: An unknown backend, or workers given for any backend but
      DISTRIBUTED or not for it.
    ConnectionError: A worker does not answer.
  """
  round_executor.check_backend(backend, workers)
  args = (net, config, constants, num_users)
  if backend == round_executor.DIRECT:
    return direct_backend.DirectRound(*args)
  if backend == round_executor.DISTRIBUTED:
    # Imported when used, as before: only a run over workers needs them.
    from tff_hdp.udp import distributed  # pylint: disable=g-import-not-at-top
    return distributed.DistributedRound(*args, workers=tuple(workers))
  return tff_backend.TffRound(*args)
