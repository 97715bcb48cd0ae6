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
"""HDP-FedAvg (paper 001, Section 5): each level and the opt-outs averaged
apart, combined by their counts (r = 1)."""

import dataclasses

from tff_hdp.fedhdp import algorithm
from tff_hdp.fedhdp import algorithm_registry


@algorithm_registry.register
@dataclasses.dataclass(frozen=True)
class HdpFedAvg(algorithm.Algorithm):
  """The levels' groups and the opt-outs', w_i proportional to N_i^t."""
  name = 'hdp_fedavg'
  label = 'HDP-FedAvg'

  def combine(self, private, non_private):
    return tuple(dataclasses.replace(g, ratio=1.0) for g in private) + (
        non_private,)
