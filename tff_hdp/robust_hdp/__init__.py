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
"""Robust-HDP (paper 003): Malekmohammadi, Yu and Cao, *Noise-Aware Algorithm
for Heterogeneous Differentially Private Federated Learning* (ICML 2024).

Threat model: the server is untrusted. Every client runs DP-SGD on its own
data with its own epsilon_i and batch size b_i (sample-level DP for its
dataset) and sends only its noisy update; the server never learns epsilon_i,
b_i or N_i. Robust-HDP weighs the updates by 1/sigma^_i^2, the noise variance
robust PCA finds in each (`rpca`, `aggregation_rules.robust_hdp_weights`,
which receives the updates alone).

  dp_sgd               a client's DP-SGD round (eqs. (1), (6)), plain TF
  rpca                 principal component pursuit, sigma^_i^2 (Alg. 1, 7-10)
  rule, rule_registry  what an aggregation rule is; the rules by name
  rules/               the aggregation rules, one file each
  aggregation_rules    the rules' shared maths, eq. (7)'s sigma_i^2, noise power
  privacy_preferences  Dist1-Dist9, and z_i from epsilon_i by the accountant
  aggregator           any rule as a `tff.aggregators` factory
  process              the round as a `tff.learning.templates.LearningProcess`
  executors            the round on each backend (tff_backend, direct_backend,
                       distributed) and its Cohort
  training             the driver: one run, one results record
  presets              the paper's setting (authors' code) and the default
  table_rows           the comparison table of a run's results, claim line
  paper_tables         Table 2 as the paper prints it (and its setting)
  noise_power          Table 2 computed

Public API (docs/api_systems.md): `RobustHdpConfig`, `build_robust_hdp_process`,
`build_data_source`, `client_element`, `global_weights`.
"""

from tff_hdp import public_api

# The public API (the rest may change), imported when first used: importing
# the package stays TensorFlow-free for the binaries' flag checks.
_PUBLIC = {
    'tff_hdp.robust_hdp.config': ('RobustHdpConfig',),
    'tff_hdp.robust_hdp.process': ('build_robust_hdp_process',
                                   'build_data_source', 'client_element'),
}
__all__, __getattr__ = public_api.lazy(__name__, _PUBLIC, ('rules',))
