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
"""Minimum epsilon (paper 003, Table 1): every private client runs DP-SGD at
the noise of the smallest epsilon_i, and w_i = N_i / sum_j N_j. Its server
is told epsilon_min, which every client then meets."""

from tff_hdp.robust_hdp import rule
from tff_hdp.robust_hdp import rule_registry


class MinEpsilon(rule.FixedWeightRule):
  """Every client at min_j epsilon_j, weighed by its number of examples."""

  name = 'min_epsilon'
  label = 'minimum eps'
  server_knows = 'epsilon_min'

  def calibration_epsilons(self, epsilons):
    floor = min(e for e in epsilons if e is not None)
    return [None if e is None else min(e, floor) for e in epsilons]

  def fixed_weights(self, side):
    return list(side.num_examples)


rule_registry.register(MinEpsilon())
