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
"""Federated data and client sampling shared by every system.

`federated_data.FederatedData` holds per-client train and test arrays (the
loaders of `tff_hdp.datasets`, the repository's `datasets/`, return it);
`sampling` draws the round's cohort from a generator seeded by (seed, round).

Public API (docs/api.md): `to_federated_data`, `in_client_order`,
`PoissonClientSource`.
"""

from tff_hdp import public_api

# The public API (the rest may change), imported when first used: importing
# the package stays TensorFlow-free for the binaries' flag checks.
_PUBLIC = {
    'tff_hdp.data.client_data': ('to_federated_data', 'in_client_order',
                                 'PoissonClientSource'),
}
__all__, __getattr__ = public_api.lazy(__name__, _PUBLIC)
