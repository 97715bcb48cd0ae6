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
"""Robust-HDP (paper 003, Algorithm 1, lines 7-11): w_i = (1/sigma^_i^2) /
sum_j (1/sigma^_j^2), sigma^_i^2 = ||S_{:,i}||^2 / p from robust PCA of
M = [Delta_1 | ... | Delta_n] = L + S. Its server is told nothing: the
weights are a function of the updates alone
(`aggregation_rules.robust_hdp_weights`), the Oracle's weights estimated."""

from tff_hdp.robust_hdp import rule
from tff_hdp.robust_hdp import rule_registry


class RobustHdp(rule.Rule):
  """Inverse-variance weights from robust PCA's noise estimates."""

  name = 'robust_hdp'
  label = 'Robust-HDP'
  role = 'proposed'
  server_knows = 'nothing'
  estimates_from_updates = True

  def __init__(self, rpca_options=None):
    """`rpca_options`: robust PCA's settings (`rule.rpca_options`)."""
    self.rpca_options = dict(rpca_options or {})

  def configured(self, config):
    return type(self)(rule.rpca_options(config))

  def min_cohort(self, num_clients):
    # Robust PCA separates the updates' common low-rank part from each
    # client's noise: two clients at least (one, if there is only one).
    return min(2, num_clients)

  def weights(self, updates, told):
    del told  # Told nothing.
    from tff_hdp.robust_hdp import aggregation_rules  # pylint: disable=g-import-not-at-top
    return aggregation_rules.robust_hdp_weights(updates, **self.rpca_options)


rule_registry.register(RobustHdp())
