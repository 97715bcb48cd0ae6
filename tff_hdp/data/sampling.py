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
"""Which clients take part in a round.

The papers give q, the expected fraction of clients per round (Table 5).
Two ways to draw a cohort, each with its own accounting
(`tff_hdp.privacy.accounting`):

- `poisson=True`: each client independently with probability q. The runs of
  all three systems use it (FedHDP's by default), and the Poisson-subsampled
  Gaussian accounting under add/remove-one neighbours is exact for it.
- `poisson=False`: round(qN) clients uniformly without replacement, as TFF
  simulations and paper 001's Algorithm 2 do. It is accounted as sampling
  without replacement under replace-one neighbours, a larger epsilon for the
  same noise.

The cohort is part of the mechanism: amplification by sampling needs it
hidden from whoever sees the outputs. Every round therefore draws from its
own generator under the run's secret key
(`tff_hdp.privacy.mechanism_key.round_rng`), never from the public seed, so
that a run resumed at round t samples exactly what an uninterrupted run
would and nothing the run publishes tells who took part. TensorFlow-free.
"""

import numpy as np


def sample_cohort(num_clients: int, clients_per_round: int,
                  rng: np.random.Generator, *, poisson: bool = False,
                  sampling_rate: float = 0.0) -> np.ndarray:
  """Sorted client ids of one round's cohort.

  Args:
    num_clients: Population size N.
    clients_per_round: Cohort size for uniform sampling (1..N).
    rng: This round's generator.
    poisson: Sample each client independently with `sampling_rate`.
    sampling_rate: q, used when `poisson`.
  """
  if poisson:
    return np.flatnonzero(rng.random(num_clients) < sampling_rate)
  if not 1 <= clients_per_round <= num_clients:
    raise ValueError(f'clients_per_round must be in [1, {num_clients}], got '
                     f'{clients_per_round}')
  return np.sort(rng.choice(num_clients, size=clients_per_round,
                            replace=False))
