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
"""Robust-HDP's round on each backend, and its cohort (paper 003).

    executor = executors.build_executor(config.round_backend, ...)
    state = executor.initialize(key)
    output = executor.next(state, executors.Cohort(data, info))

One round of Algorithm 1: every client i of the cohort runs DP-SGD with its
own (b_i, z_i) and its key of the round and sends its noised update
Delta_i; the rule's server step weighs the rows of M = [Delta_1 | ... |
Delta_n] (RPCA's w_i proportional to 1 / sigma^_i^2 for Robust-HDP) and
theta^{t+1} = theta^t + sum_i w_i Delta_i. The three backends
(`round_executor.RoundExecutor`) compute it alike:
`tff_backend.TffRound` (TFF's runtime), `direct_backend.DirectRound`
(plain TensorFlow, bit for bit the same) and `distributed.DistributedRound`
(TFF over workers). tests/test_round_executors.py holds them to one
contract.
"""

from typing import Any, Mapping, NamedTuple, Optional, Sequence

from tff_hdp import models
from tff_hdp import round_executor
from tff_hdp.robust_hdp import aggregator as aggregator_lib
from tff_hdp.robust_hdp import direct_backend
from tff_hdp.robust_hdp import dp_sgd
from tff_hdp.robust_hdp import tff_backend


class Cohort(NamedTuple):
  """The clients of one round, the same on every backend.

  Attributes:
    data: Per client, its N_i training examples: (x_i, y_i) arrays, x_i
      [N_i, *input_shape] and y_i [N_i] the labels, or the one-element
      dataset `direct_backend.client_dataset(x_i, y_i)` makes of them.
      DP-SGD samples its batches from all N_i.
    info: Per client, in `data`'s order, {'index': i, its row of M (the
      rule's client i, in [0, n), at most once a round), 'batch_size': b_i
      (the expected Poisson batch), 'noise_multiplier': z_i (float32; 0
      adds no noise: a clip-only run)} (`process.CLIENT_INFO_TYPE`).
    weighing_info: None (the rule weighs the updates sent), or a clip-only
      run's: per client, `info` with its calibrated z_i. The clients then
      also compute the noised updates they would have sent, from the same
      model and keys, and the rule weighs those, while the model moves by
      the clipped ones (`RobustHdpConfig.clip_only`). The direct backend
      only; the others refuse it.
  """
  data: Sequence[Any]
  info: Sequence[Mapping[str, Any]]
  weighing_info: Optional[Sequence[Mapping[str, Any]]] = None

  def check(self, backend: str) -> None:
    """Raises ValueError, in one line, unless the round on `backend` (one
    of `round_executor.BACKENDS`) can run this cohort."""
    if len(self.data) != len(self.info):
      raise ValueError(f'Cohort: {len(self.data)} clients\' data but '
                       f'{len(self.info)} infos; give one info per client')
    if self.weighing_info is None:
      return
    if backend != round_executor.DIRECT:
      raise ValueError(
          'Cohort.weighing_info (a clip-only run weighing the noised '
          f'updates) runs on backend {round_executor.DIRECT!r} only, not '
          f'{backend!r}; allowed there: None')
    if len(self.weighing_info) != len(self.info):
      raise ValueError(f'Cohort: {len(self.weighing_info)} weighing infos '
                       f'for {len(self.info)} clients; give one per client')


def build_executor(backend: str,
                   spec: models.ModelSpec,
                   initial_weights,
                   aggregator: aggregator_lib.NoiseAwareAggregationFactory,
                   *,
                   settings: dp_sgd.DpSgdSettings,
                   private: bool = True,
                   workers: Sequence[str] = ()
                   ) -> round_executor.RoundExecutor:
  """The round of `aggregator`'s rule on `backend`.

  Args:
    backend: One of `round_executor.BACKENDS`.
    spec: The model.
    initial_weights: theta^0.
    aggregator: The rule's server step, for its n clients.
    settings: The clients' DP-SGD (c, eta_l, K, the batch sampling).
    private: Whether the clients clip and add noise (the rule's `private`);
      False: plain SGD.
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
  kwargs = dict(settings=settings, private=private)
  if backend == round_executor.DIRECT:
    return direct_backend.DirectRound(spec, initial_weights, aggregator,
                                      **kwargs)
  if backend == round_executor.DISTRIBUTED:
    from tff_hdp.robust_hdp import distributed  # pylint: disable=g-import-not-at-top
    return distributed.DistributedRound(spec, initial_weights, aggregator,
                                        workers=workers, **kwargs)
  return tff_backend.TffRound(spec, initial_weights, aggregator, **kwargs)
