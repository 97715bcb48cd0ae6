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
"""DP-FedAvg (paper 001, Section 5): every client, opt-outs too, at the
strictest privacy level, one group (reported as 'private', as the papers'
tables do)."""

import dataclasses

from tff_hdp.fedhdp import algorithm
from tff_hdp.fedhdp import algorithm_registry
from tff_hdp.fedhdp import privacy_groups


@algorithm_registry.register
@dataclasses.dataclass(frozen=True)
class DpFedAvg(algorithm.Algorithm):
  """One group: the noisiest level's z for everyone."""
  name = 'dp_fedavg'
  label = 'DP-FedAvg'
  one_group = True

  def combine(self, private, non_private):
    del non_private
    strictest = max(private, key=lambda g: g.noise_multiplier)
    return (dataclasses.replace(strictest, name=privacy_groups.PRIVATE,
                                ratio=1.0),)

  def assign(self, opted_out, levels, num_levels):
    return algorithm.single_group(opted_out)
