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
"""Non-private FedAvg: the clients run plain SGD (no clipping, no noise) and
w_i = N_i / sum_j N_j. A reference without a guarantee, not a rule of
Table 1; its server is told N_i."""

from tff_hdp.robust_hdp import rule
from tff_hdp.robust_hdp import rule_registry


class NonPrivate(rule.FixedWeightRule):
  """FedAvg of plain SGD updates, weighed by the number of examples."""

  name = 'non_private'
  label = 'Non-private'
  role = 'reference'
  server_knows = 'N_i'
  private = False

  def calibration_epsilons(self, epsilons):
    return [None] * len(epsilons)

  def fixed_weights(self, side):
    return list(side.num_examples)


rule_registry.register(NonPrivate())
