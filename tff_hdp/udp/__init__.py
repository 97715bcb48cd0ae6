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
- `executors`: the round on each backend (`direct_backend`,
  `tff_backend`, `distributed`) and its cohort.
- `config`, `training`: the run configuration and the driver.
- `presets`: the settings per dataset (paper 004's, and ours offline), the
  paper's sigma as z, pFedHN's round scaling.
- `table_rows`: the comparison table of a run's results and its claim line.
- `paper_tables`: the paper's quoted numbers beside ours.

Threat model (trusted server, user-level): adding or removing one user (all
its data) moves the noised estimator of grad phi by at most
max_u(w_u) S / (q W) (Lemma 3.1; max_u(w_u) and W = sum_u w_u are public
constants of the run, from all users' data sizes, as in McMahan et al.
2018), and the noise has stddev z times that: T Poisson-subsampled Gaussian
rounds, composed by `tff_hdp.privacy.accounting` (delta 1e-5 by default),
so **phi** (every iterate) is (epsilon, delta) user-level DP. The embeddings
move with their user's unnoised update: only phi with every *other* user's
embedding and model is DP with respect to user u ("billboard"), not all of
it by post-processing as the paper says. The sign of Delta is pFedHN's
(`hypernetfl`). Precisely: docs/privacy.md, "UDP-Alg (paper 004)".
Public API (docs/api_systems.md): `UdpConfig`, `build_udp_process`,
`build_data_source`.
"""

from tff_hdp import public_api

# The public API (the rest may change), imported when first used: importing
# the package stays TensorFlow-free for the binaries' flag checks.
_PUBLIC = {
    'tff_hdp.udp.config': ('UdpConfig',),
    'tff_hdp.udp.process': ('build_udp_process', 'build_data_source'),
}
__all__, __getattr__ = public_api.lazy(__name__, _PUBLIC, ('algorithms',))
