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
"""FedHDP (paper 001): Aldaghri, Mahdavifar and Beirami, *Federated Learning with
Heterogeneous Differential Privacy* (first published as FeO2).

Everything specific to the paper's Algorithm 2: the client update with Ditto
(`client_update`), privacy groups (`privacy_groups`), the per-group noisy
averages and their combination (`group_aggregation`), adaptive clipping's
split of z_eff into value and clip-count noise (`clip_noise`), the
`tff.aggregators` factory (`hdp_factory`) and iterative process
(`process`), the round on the TFF, direct and distributed backends
(`executors`: its cohort and `build_executor`), the driver
(`training.train`), the metrics of the paper's tables (`evaluation`,
`table_rows`, `paper_tables`) and the presets of Tables 5 and 7 (`presets`).
The server is trusted: it adds the noise.

Public API (docs/api_systems.md): `FedHdpConfig`, `build_fedhdp_process`,
`build_data_source`, `client_element`, `global_weights`.
"""

from tff_hdp import public_api

# The public API (the rest may change), imported when first used: importing
# the package stays TensorFlow-free for the binaries' flag checks.
_PUBLIC = {
    'tff_hdp.fedhdp.config': ('FedHdpConfig',),
    'tff_hdp.fedhdp.process': ('build_fedhdp_process', 'build_data_source',
                               'client_element'),
}
__all__, __getattr__ = public_api.lazy(__name__, _PUBLIC, ('algorithms',))
