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
"""FedHDP (paper 001, Algorithm 2): the levels and the opt-outs averaged
apart and combined with w_i proportional to r_i N_i^t, r_i in [0, 1] for
private level i against the opt-outs' 1 (the paper's r; 0.1 by default,
`FedHdpConfig.ratio`), so that the less noisy group weighs more."""

import dataclasses
from typing import Union

from tff_hdp.fedhdp import algorithm
from tff_hdp.fedhdp import algorithm_registry


@algorithm_registry.register
@dataclasses.dataclass(frozen=True)
class FedHdp(algorithm.Algorithm):
  """Attributes: ratio, r: one value for every level or one per level,
  each in [0, 1] (0: the private clients are never sent the model)."""
  name = 'fedhdp'
  label = 'FedHDP'
  role = 'proposed'
  ratio: Union[float, tuple[float, ...]] = 0.1

  def __post_init__(self):
    algorithm.check_ratios(self.ratio)

  def configured(self, config):
    return FedHdp(ratio=config.ratio)

  def config_fields(self):
    return {'ratio': self.ratio}

  def run_suffix(self):
    return '_r' + '_'.join(f'{r:g}' for r in algorithm.check_ratios(
        self.ratio))

  def table_settings(self):
    return [f'r={self.ratio}']

  def combine(self, private, non_private):
    ratios = algorithm.check_ratios(self.ratio, len(private))
    if len(ratios) == 1:
      ratios *= len(private)
    return tuple(dataclasses.replace(g, ratio=r)
                 for g, r in zip(private, ratios)) + (non_private,)
