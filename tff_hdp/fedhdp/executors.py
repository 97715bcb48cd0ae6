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
"""FedHDP's round on each backend, and its cohort (paper 001, Algorithm 2).

    executor = executors.build_executor(config.round_backend, ...)
    state = executor.initialize(key)
    output = executor.next(state, executors.Cohort(data, info, personal))

One round of Algorithm 2: every client j of the cohort runs ClientUpdate
from theta^t (E epochs of SGD, and Ditto's personal step from its theta_j,p
when on); the server clips each update to S^t, sums the clipped updates of
each privacy group i and adds that group's noise,
    Delta_i = (sum_{j in C_i} Clip(Delta_j, S^t) + N(0, (z_i S^t)^2 I)) / n_i,
combines them, Delta^t = sum_i w_i Delta_i, updates the clip norm from the
noised clip count, and theta^{t+1} = theta^t + Delta^t. The three backends
(`round_executor.RoundExecutor`) compute it alike from the same noise key:
`tff_backend.TffRound` (TFF's runtime: `process.py`'s LearningProcess),
`direct_backend.DirectRound` (plain TensorFlow, the cohort stacked) and
`distributed.DistributedRound` (TFF over workers, the noise added at the
server). `RoundOutput.clients` holds the cohort's trained Ditto models, in
its order; tests/test_round_executors.py holds the three to one contract.
"""

from typing import Any, Mapping, NamedTuple, Sequence

from tff_hdp import models
from tff_hdp import round_executor
from tff_hdp.fedhdp import direct_backend
from tff_hdp.fedhdp import hdp_factory
from tff_hdp.fedhdp import tff_backend


class Cohort(NamedTuple):
  """The clients of one round, the same on every backend.

  Attributes:
    data: Per client, its training examples in this round's order: (x_j,
      y_j) arrays, x_j [n_j, *input_shape] float32 and y_j [n_j] int32
      labels. Every backend batches them in this order, `batch_size` at a
      time (the last batch may be smaller), for each of the E epochs; a
      client without examples takes no step.
    info: Per client, in `data`'s order, {'group': i, its privacy group's
      index (its query, its clip-count slot and Ditto's lambda_i),
      'client_id': j (with the round, the seed of its dropout masks)}, both
      int32 (`process.CLIENT_INFO_TYPE`).
    personal: Per client, in `data`'s order, the Ditto model theta_j,p its
      personal step starts from (arrays shaped as the model's weights: the
      driver's stored model, or theta^t). Without Ditto, handed back as
      given.
  """
  data: Sequence[tuple[Any, Any]]
  info: Sequence[Mapping[str, Any]]
  personal: Sequence[Sequence[Any]]

  def check(self) -> None:
    """Raises ValueError, in one line, unless every client has its data,
    its info and its personal model."""
    if not len(self.data) == len(self.info) == len(self.personal):
      raise ValueError(
          f'Cohort: {len(self.data)} clients\' data, {len(self.info)} infos '
          f'and {len(self.personal)} personal models; give one of each per '
          'client')


def build_executor(backend: str,
                   spec: models.ModelSpec,
                   initial_weights,
                   factory: hdp_factory.HeterogeneousDPFactory,
                   *,
                   settings: tff_backend.ClientSettings,
                   workers: Sequence[str] = ()
                   ) -> round_executor.RoundExecutor:
  """Algorithm 2's round on `backend`.

  Args:
    backend: One of `round_executor.BACKENDS`.
    spec: The model.
    initial_weights: theta^0.
    factory: The heterogeneous-DP aggregation (its groups, clip and noise);
      its noise key is the state's.
    settings: What every client does (E, B, the learning rates, Ditto).
    workers: 'host:port' of each running TFF worker: for DISTRIBUTED only,
      which needs them.

  Returns:
    Its `round_executor.RoundExecutor`; `next` takes a `Cohort`.

  Raises:
    ValueError: An unknown backend, workers given for any backend but
      DISTRIBUTED or not for it, or inconsistent settings.
    ConnectionError: A worker does not answer.
  """
  round_executor.check_backend(backend, workers)
  if backend == round_executor.DIRECT:
    return direct_backend.DirectRound(spec, initial_weights, factory,
                                      settings)
  if backend == round_executor.DISTRIBUTED:
    from tff_hdp.fedhdp import distributed  # pylint: disable=g-import-not-at-top
    return distributed.DistributedRound(spec, initial_weights, factory,
                                        settings, list(workers))
  return tff_backend.TffRound(spec, initial_weights, factory, settings)
