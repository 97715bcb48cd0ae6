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
"""DPFedAvg (paper 003, Table 1): w_i = N_i / sum_j N_j, each client at its
own epsilon_i. Its server is told every client's dataset size N_i."""

from tff_hdp.robust_hdp import rule
from tff_hdp.robust_hdp import rule_registry


class DpFedAvg(rule.FixedWeightRule):
  """Weighs each update by its client's number of examples."""

  name = 'dpfedavg'
  label = 'DPFedAvg'
  server_knows = 'N_i'

  def fixed_weights(self, side):
    return list(side.num_examples)


rule_registry.register(DpFedAvg())
