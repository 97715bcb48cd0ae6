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
"""Theory of FedHDP: closed forms and simulators (paper 001, Sec. 3, App. A-B).

Federated linear regression and point estimation with heterogeneous
differential privacy, where FedHDP is Bayes optimal. Pure numpy (and scipy for
one numerical minimisation); importing this package does not import
TensorFlow.

  data_model          alpha^2 and tau^2 of eqs. (6)-(7) (`DataModel`), what
                      the personal risks and the simulators take about the
                      clients' data.
  server_aggregation  r*, the server's variance for FedHDP at any r, at r*,
                      HDP-FedAvg and DP-FedAvg, and the gaps (79)-(81).
  personalization     lambda*_np, lambda*_p (Theorem 8), Lemma 3, Table 4, and
                      the personal model's risk at any r and lambda.
  multi_level         l privacy levels (Appendix A.6): r_i*, server variance,
                      personal risk and a numerical lambda_j*.
  simulation          Monte-Carlo simulators of Algorithms 1 and 3 (of the
                      privacy `Groups` they are given).

Spec: section 8 of FEDHDP.md. Figures: run_scripts/theory_fedhdp.py.
"""

from tff_hdp.theory.data_model import DataModel
from tff_hdp.theory.multi_level import group_variances
from tff_hdp.theory.multi_level import group_weights
from tff_hdp.theory.multi_level import multi_level_bayes_local_risk
from tff_hdp.theory.multi_level import multi_level_local_risk
from tff_hdp.theory.multi_level import multi_level_optimal_lambda
from tff_hdp.theory.multi_level import multi_level_optimal_server_variance
from tff_hdp.theory.multi_level import multi_level_server_variance
from tff_hdp.theory.multi_level import optimal_ratios
from tff_hdp.theory.personalization import bayes_local_risk
from tff_hdp.theory.personalization import local_risk
from tff_hdp.theory.personalization import optimal_lambda
from tff_hdp.theory.personalization import optimal_lambda_homogeneous_privacy
from tff_hdp.theory.personalization import optimal_lambda_no_privacy
from tff_hdp.theory.personalization import optimal_lambda_np
from tff_hdp.theory.personalization import optimal_lambda_p
from tff_hdp.theory.personalization import optimal_lambdas_two_level
from tff_hdp.theory.server_aggregation import dp_fedavg_server_variance
from tff_hdp.theory.server_aggregation import gap_dp_fedavg_hdp_fedavg
from tff_hdp.theory.server_aggregation import gap_dp_fedavg_optimal
from tff_hdp.theory.server_aggregation import gap_hdp_fedavg_optimal
from tff_hdp.theory.server_aggregation import hdp_fedavg_server_variance
from tff_hdp.theory.server_aggregation import num_private
from tff_hdp.theory.server_aggregation import optimal_ratio
from tff_hdp.theory.server_aggregation import optimal_server_variance
from tff_hdp.theory.server_aggregation import server_variance
from tff_hdp.theory.simulation import Groups
from tff_hdp.theory.simulation import simulate_linear_regression
from tff_hdp.theory.simulation import simulate_point_estimation
from tff_hdp.theory.simulation import SimulationResult
