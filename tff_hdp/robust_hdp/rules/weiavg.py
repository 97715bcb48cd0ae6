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
"""WeiAvg (Liu et al., VLDB 2021; paper 003, Table 1): w_i = epsilon_i /
sum_j epsilon_j. Its server is told every client's epsilon_i."""

from tff_hdp.robust_hdp import rule
from tff_hdp.robust_hdp import rule_registry


class WeiAvg(rule.FixedWeightRule):
  """Weighs each update by its client's epsilon_i."""

  name = 'weiavg'
  label = 'WeiAvg'
  server_knows = 'epsilon_i'
  needs_every_epsilon = True

  def fixed_weights(self, side):
    return list(side.epsilons)


rule_registry.register(WeiAvg())
