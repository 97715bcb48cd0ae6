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
"""The package's HDP-Bench methods, one file each; each file registers its
methods (`tff_hdp.bench.registry.register`, the path a method of yours
takes too) when imported, in this order.

- `robust_hdp_rules`: every Robust-HDP rule (`tff_hdp.robust_hdp.rules`,
  and any registered later; untrusted server, sample-level).
- `fedhdp_levels`: paper 001's FedHDP, HDP-FedAvg and DP-FedAvg at the
  minimum epsilon (trusted server, client-level, privacy levels).
- `individual_sampling`: individualized client sampling rates (Boenisch et
  al. 2023; Lange et al. 2025), client-level.
- `individual_scale`: individualized client clip norms (Boenisch et al.
  2023, Scale), client-level.
- `udp_min_epsilon`: paper 004's UDP-Alg at the minimum epsilon
  (personalized, user-level).
"""

# pylint: disable=unused-import
from tff_hdp.bench import registry
from tff_hdp.bench.methods import robust_hdp_rules
from tff_hdp.bench.methods import fedhdp_levels
from tff_hdp.bench.methods import individual_sampling
from tff_hdp.bench.methods import individual_scale
from tff_hdp.bench.methods import udp_min_epsilon

# The registry's, with the package's methods registered first: what
# `tff_hdp.bench` exports (a reader of the registry imports this package).
register = registry.register
registered = registry.registered
get = registry.get
load_file = registry.load_file
