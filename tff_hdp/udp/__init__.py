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
"""UDP-Alg (paper 004): user-level DP for hypernetwork personalized FL.

Nemala, Lai and Phan, "Differential Privacy in HyperNetworks for Personalized
Federated Learning" (CIKM 2023), on pFedHN's HyperNetFL (Shamsian et al.,
ICML 2021).

- `hypernetwork`: h(phi, v) generating a target network's weights, and the
  cohort's vector-Jacobian products, batched over users.
- `hypernetfl`: one round of Algorithm 1 in plain TensorFlow (local SGD,
  VJPs, clipping, TF Privacy's weighted fixed-denominator estimator, noise,
  the updates of phi and the embeddings).
- `config`, `training`: the run configuration and the driver.
- `presets`: the settings per dataset (paper 004's, and ours offline), the
  paper's sigma as z, pFedHN's round scaling.
- `table_rows`: the comparison table of a run's results and its claim line.
- `paper_tables`: the paper's quoted numbers beside ours.

Threat model and what the guarantee covers (precise where the paper is not):

- *Trusted server, user-level.* The server holds phi and every embedding
  v_u. Adding or removing one user (all its data) changes the noised
  estimator of grad phi by at most max_u(w_u) S / (q W) (Lemma 3.1), and the
  noise has stddev z times that, so each round is a Poisson-subsampled
  Gaussian mechanism of rate q and multiplier z, composed over T rounds by
  the project's RDP accountant (`tff_hdp.privacy.accounting`; delta 1e-5 by
  default). **phi** (every iterate) is (epsilon, delta) user-level DP.
- *The embeddings are not covered by the noise.* v_u is updated from user
  u's own unnoised Delta_u, so v_u, and theta_u = h(phi, v_u), also depend on
  user u's own data. What holds is the joint ("billboard") guarantee: the
  collection of all *other* users' embeddings and models, together with phi,
  is (epsilon, delta)-DP with respect to user u. Released to anyone but user
  u, theta_u is not private with respect to user u. The paper calls all of
  it DP by post-processing; it is not.
- *Sign.* The paper writes Delta = theta^K - theta and phi <- phi -
  lambda grad, which would ascend the users' losses; we use pFedHN's
  Delta = theta - theta^K, so phi and v descend.
- *Weights.* max_u(w_u) and W = sum_u w_u are computed over all users from
  their data sizes and treated as public constants of the run (as in McMahan
  et al. 2018's fixed-denominator estimator).

Public API (docs/api.md): `UdpConfig`, `build_udp_process`,
`build_data_source`.
"""

from tff_hdp import public_api

# The public API (the rest may change), imported when first used: importing
# the package stays TensorFlow-free for the binaries' flag checks.
_PUBLIC = {
    'tff_hdp.udp.config': ('UdpConfig',),
    'tff_hdp.udp.process': ('build_udp_process', 'build_data_source'),
}
__all__, __getattr__ = public_api.lazy(__name__, _PUBLIC)
