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
"""What an algorithm of paper 001 is: one object, one interface.

Paper 001 (Section 4, Algorithm 2) averages each privacy group on its own,
with its noise, and combines the groups with weights w_i proportional to
r_i N_i^t. Its algorithms (Section 5) differ in which groups a run has and
in who belongs to which: FedHDP keeps the levels and the opt-outs apart and
weighs them by r; HDP-FedAvg the same with r = 1; DP-FedAvg puts everyone
at the strictest level; Non-Private averages everyone without clipping or
noise. An algorithm is a frozen dataclass that owns its settings and says
both:

    @dataclasses.dataclass(frozen=True)
    class OptOutsOnly(algorithm.Algorithm):
      name = 'opt_outs_only'
      label = 'Opt-outs only'

      def combine(self, private, non_private):
        return (dataclasses.replace(non_private),)

      def assign(self, opted_out, levels, num_levels):
        return np.zeros(len(opted_out), np.int32)

    algorithm_registry.register(OptOutsOnly())   # in its own file

`combine` takes the private levels' groups (each with its z_i, z_eff,
Ditto's lambda_p, r_i = 1) and the opt-outs' group, and returns the run's
groups; `assign` maps each client to one of them. The config, the
builders, the drivers, the tables and HDP-Bench read these; nothing else
in the package names an algorithm. TensorFlow-free.
"""

import abc
import dataclasses
from typing import Optional, Sequence

import numpy as np

from tff_hdp import registry
from tff_hdp.fedhdp import privacy_groups

ROLES = registry.ROLES


@dataclasses.dataclass(frozen=True)
class Algorithm(abc.ABC):
  """One of paper 001's algorithms, or yours (module doc).

  Class attributes:
    name: Its name in the registry, `--algorithm` and results.
    label: Its row's name in tables.
    role: What it is in a comparison (`registry.ROLES`): FedHDP is
      'proposed', the private baselines 'baseline', Non-Private the
      'reference'; one of yours is a 'baseline' unless it says otherwise.
    noised: False when no group adds noise (Non-Private: nothing is
      accounted).
    one_group: True when every client is in one group (DP-FedAvg,
      Non-Private): HDP-Bench then puts every private client at the
      strictest epsilon.
  """
  name = ''
  label = ''
  role = 'baseline'
  noised = True
  one_group = False

  def configured(self, config) -> 'Algorithm':
    """This algorithm with the settings of `config` (a `FedHdpConfig`, or
    a recorded one read back as attributes) that it owns, e.g. FedHDP's r;
    by default itself."""
    del config
    return self

  def config_fields(self) -> dict:
    """The `FedHdpConfig` fields its settings fill (a run records them
    there), e.g. {'ratio': 0.1}; by default none."""
    return {}

  def run_suffix(self) -> str:
    """What its settings add to a run's name (FedHDP: '_r0.1')."""
    return ''

  def table_settings(self) -> list[str]:
    """Its settings in a table's hyperparameter cell (FedHDP: 'r=0.1')."""
    return []

  @abc.abstractmethod
  def combine(self, private: Sequence[privacy_groups.PrivacyGroup],
              non_private: privacy_groups.PrivacyGroup
              ) -> tuple[privacy_groups.PrivacyGroup, ...]:
    """The run's groups, from the private levels' groups (level 0, the
    strictest, first; each with r = 1) and the opt-outs' group."""

  def assign(self, opted_out: np.ndarray, levels: np.ndarray,
             num_levels: int) -> np.ndarray:
    """int32 group id of each client in `combine`'s groups: by default its
    level, or `num_levels` (the opt-outs' group, after the levels) if it
    opted out."""
    return np.where(opted_out, num_levels, levels).astype(np.int32)


def single_group(opted_out: np.ndarray) -> np.ndarray:
  """Every client in group 0 (the single-group baselines)."""
  return np.zeros(np.shape(opted_out), np.int32)


def check_ratios(ratio, levels: Optional[int] = None) -> tuple[float, ...]:
  """r as a tuple, or a one-line ValueError: each in [0, 1], one value or
  one per level."""
  ratios = tuple(np.atleast_1d(ratio).tolist())
  if not ratios or not all(0.0 <= r <= 1.0 for r in ratios):
    raise ValueError(f'r must be in [0, 1], got {ratio}')
  if levels is not None and len(ratios) not in (1, levels):
    raise ValueError(f'r must give one value or one per level ({levels}), '
                     f'got {len(ratios)}')
  return ratios
