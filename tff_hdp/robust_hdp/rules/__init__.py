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
"""Robust-HDP's aggregation rules, one file each; importing this package
registers them (`rule_registry`) in this order.

| rule        | w_i                                      | the server knows |
|-------------|------------------------------------------|------------------|
| robust_hdp  | 1/sigma^_i^2 (robust PCA), normalised     | nothing          |
| weiavg      | epsilon_i / sum_j epsilon_j              | epsilon_i        |
| pfa         | weiavg after a projection                | epsilon_i        |
| dpfedavg    | N_i / sum_j N_j                          | N_i              |
| min_epsilon | N_i / sum_j N_j, all at z(eps_min)       | epsilon_min      |
| oracle      | 1/sigma_i^2 (eq. (7)), normalised         | everything       |
| step_aware  | ||L_{:,i}|| / sigma^_i^2, normalised      | nothing          |
| non_private | N_i / sum_j N_j, clients run SGD         | N_i              |

The first six and non-private training are paper 003's (Table 1, Table 2);
the step-aware rule is ours (its file derives it).
"""

# pylint: disable=unused-import
from tff_hdp.robust_hdp.rules import robust_hdp
from tff_hdp.robust_hdp.rules import weiavg
from tff_hdp.robust_hdp.rules import pfa
from tff_hdp.robust_hdp.rules import dpfedavg
from tff_hdp.robust_hdp.rules import min_epsilon
from tff_hdp.robust_hdp.rules import oracle
from tff_hdp.robust_hdp.rules import step_aware
from tff_hdp.robust_hdp.rules import non_private
# pylint: enable=unused-import

# The rules as objects, e.g. `rule=robust_hdp.rules.Pfa(rank=3)`.
RobustHdp = robust_hdp.RobustHdp
WeiAvg = weiavg.WeiAvg
Pfa = pfa.Pfa
DpFedAvg = dpfedavg.DpFedAvg
MinEpsilon = min_epsilon.MinEpsilon
Oracle = oracle.Oracle
StepAware = step_aware.StepAware
NonPrivate = non_private.NonPrivate
