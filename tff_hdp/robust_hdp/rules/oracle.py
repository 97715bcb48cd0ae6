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
"""The Oracle (paper 003, Table 2, eq. (8)): w_i = (1/sigma_i^2) / sum_j
(1/sigma_j^2), sigma_i^2 the true noise variance of client i's update (eqs.
(7) and (3)), which minimises the aggregate's noise. Its server is told
everything (epsilon_i, b_i, N_i, the accountant): a bound, not a method an
untrusted server can run; Robust-HDP estimates the same weights."""

import numpy as np

from tff_hdp.robust_hdp import rule
from tff_hdp.robust_hdp import rule_registry


class Oracle(rule.FixedWeightRule):
  """Inverse-variance weights from the clients' true noise."""

  name = 'oracle'
  label = 'Oracle'
  role = 'oracle'
  server_knows = 'everything'
  needs_every_epsilon = True

  def fixed_weights(self, side):
    variances = np.asarray(side.variances, np.float64)
    if np.any(variances <= 0):
      raise ValueError('the oracle rule needs every client\'s noise variance '
                       f'> 0, got {variances.tolist()}')
    return 1.0 / variances


rule_registry.register(Oracle())
