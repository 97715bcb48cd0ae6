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
"""FedHDP's adaptive clipping: the noise split of one private group's round.

FedHDP (paper 001, Algorithm 2) adapts the clip norm S^t as TFF's
`DifferentiallyPrivateFactory.gaussian_adaptive` does: in every round each
private group i releases its noised update average,

  Delta_i = (1/N_i) (sum_j Clip(Delta_j, S) + N(0, z_i^2 S^2 I)),

together with the noised clipped count used by adaptive clipping (Andrew,
Thakkar, McMahan, Ramaswamy 2019, "Differentially Private Learning with
Adaptive Clipping", arXiv:1905.03871):

  b = sum_j (1[||Delta_j|| <= S] - 1/2) + N(0, z_b^2).

One client changes the update sum by at most S and the count sum by at most
1/2, so the round is the composition of two Gaussian mechanisms with noise
multipliers z (value) and 2 z_b (count). Their Renyi DP adds up, and since the
RDP of a Gaussian mechanism with noise multiplier s is alpha / (2 s^2), the
pair is exactly as private as one Gaussian mechanism with the *effective* noise
multiplier

  z_eff = (z^-2 + (2 z_b)^-2)^(-1/2).                                     (1)

`split_noise_multiplier` splits a requested z_eff into (z, z_b) as TFF does,
with z_b = 0.05 * clients_per_round by default; paper 001's Table 7 lists
z_eff, and the shared accountant (`tff_hdp.privacy.accounting`) accounts each
round as one subsampled Gaussian at z_eff: give it z_eff, not TFF's float32
DP events (docs/accounting.md). Only FedHDP uses it
(`config.resolve_noise`, `hdp_factory`): Robust-HDP's DP-SGD and UDP-Alg's
round clip to a fixed norm and release one Gaussian. TensorFlow-free.
"""

import math
from typing import Optional, Tuple

from tff_hdp.privacy import arguments

# Relative share of the expected cohort used as the clipped-count noise stddev
# z_b when none is given (TFF's `adaptive_clip_noise_params`).
DEFAULT_CLIPPED_COUNT_STDDEV_FRACTION = 0.05


def default_clipped_count_stddev(clients_per_round: float) -> float:
  """TFF's default clipped-count noise stddev z_b = 0.05 * clients_per_round.

  This is the default of
  `tff.aggregators.DifferentiallyPrivateFactory.gaussian_adaptive` (Andrew et
  al. 2019 recommend z_b ~ n / 20 for an expected cohort of n clients).

  Args:
    clients_per_round: Expected number of clients per round (> 0).

  Returns:
    The stddev of the Gaussian noise added to the clipped count.
  """
  n = arguments.as_real(clients_per_round, 'clients_per_round')
  if not 0.0 < n < math.inf:
    raise ValueError(
        f'clients_per_round must be > 0 and finite, got {clients_per_round!r}')
  return DEFAULT_CLIPPED_COUNT_STDDEV_FRACTION * n


def effective_noise_multiplier(value_noise_multiplier: float,
                               clipped_count_stddev: float) -> float:
  """z_eff = (z^-2 + (2 z_b)^-2)^(-1/2), eq. (1) of the module docstring.

  The value query (sensitivity S, noise z S) and the clipped-count query
  (sensitivity 1/2, noise z_b) compose to a Gaussian mechanism with this noise
  multiplier (Andrew et al. 2019, Sec. 3.1). Either noise being 0 makes the
  round non-private: z_eff = 0.

  Args:
    value_noise_multiplier: z, noise multiplier of the clipped-update sum.
    clipped_count_stddev: z_b, noise stddev of the clipped count.

  Returns:
    The effective noise multiplier z_eff the accountant uses.
  """
  z = arguments.check_noise(value_noise_multiplier, 'value_noise_multiplier')
  zb = arguments.check_noise(clipped_count_stddev, 'clipped_count_stddev')
  if z == 0.0 or zb == 0.0:
    return 0.0
  return (z**-2 + (2.0 * zb)**-2)**-0.5


def split_noise_multiplier(
    effective_noise_multiplier: float,  # pylint: disable=redefined-outer-name
    clipped_count_stddev: Optional[float] = None,
    *,
    clients_per_round: Optional[float] = None,
) -> Tuple[float, float]:
  """Splits z_eff into (value noise z, clipped-count stddev z_b), as TFF does.

  Inverts eq. (1): z = (z_eff^-2 - (2 z_b)^-2)^(-1/2), exactly as
  `tff.aggregators.DifferentiallyPrivateFactory.gaussian_adaptive` (through
  `adaptive_clip_noise_params`) derives the noise multiplier it hands to TF
  Privacy's `QuantileAdaptiveClipSumQuery`. z is always a little larger than
  z_eff; a solution exists only when z_eff < 2 z_b.

  Args:
    effective_noise_multiplier: z_eff >= 0, the value the accountant uses.
    clipped_count_stddev: z_b >= 0. If None, TFF's default
      `default_clipped_count_stddev(clients_per_round)` (or 0 when z_eff = 0).
    clients_per_round: Expected cohort size; needed only when
      `clipped_count_stddev` is None and z_eff > 0.

  Returns:
    `(value_noise_multiplier, clipped_count_stddev)`. With z_eff = 0 (no
    privacy) the value noise is 0.

  Raises:
    ValueError: If z_eff >= 2 z_b (the count alone would spend more than the
      whole budget), or an argument is out of range.
  """
  z_eff = arguments.check_noise(effective_noise_multiplier,
                                'effective_noise_multiplier')
  if clipped_count_stddev is not None:
    clipped_count_stddev = arguments.check_noise(clipped_count_stddev,
                                                 'clipped_count_stddev')
  if z_eff == 0.0:
    return 0.0, (0.0 if clipped_count_stddev is None else clipped_count_stddev)
  if clipped_count_stddev is None:
    if clients_per_round is None:
      raise ValueError('clients_per_round is required when '
                       'clipped_count_stddev is None and the noise is > 0')
    clipped_count_stddev = default_clipped_count_stddev(clients_per_round)
  if z_eff >= 2.0 * clipped_count_stddev:
    raise ValueError(
        f'effective_noise_multiplier must be < 2 * clipped_count_stddev = '
        f'{2.0 * clipped_count_stddev!r}, got {z_eff!r}; raise '
        'clipped_count_stddev (or clients_per_round) or lower the noise')
  z = (z_eff**-2 - (2.0 * clipped_count_stddev)**-2)**-0.5
  return z, clipped_count_stddev


__all__ = [
    'DEFAULT_CLIPPED_COUNT_STDDEV_FRACTION',
    'default_clipped_count_stddev',
    'effective_noise_multiplier',
    'split_noise_multiplier',
]
