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
"""HDP-Bench: every heterogeneous-DP method on the same clients and the same
privacy preferences, ranked within its guarantee's family (shared by the
three systems).

- `method`: the interface a method implements (`Method`) and what it works
  on (`Setting`, `Preferences`, `Calibration`, `Outcome`, `Guarantee`).
- `registry`: `register` (a method registers itself; yours is one file) and
  `registered`, a leaf; `tff_hdp.bench.register`, `get` and `registered`
  are its, with the package's methods registered first.
- `methods/`: the package's methods, one file each.
- `population`: the populations every method runs on (cross-silo: paper
  003's 20 clients; cross-device: paper 001's non-IID MNIST).
- `preferences`: paper 003's Dist1-Dist9, mixtures for any number of
  clients (paper 001's levels), or a CSV of yours.
- `benchmark`: runs them all (`parallel`: on several worker processes at
  once); `leaderboard`: ranks, Markdown, JSON, picture.

The binary is `run_scripts/hdp_bench.py` (`make bench`); docs/bench.md says
how to add a method.
"""

from tff_hdp import public_api

_PUBLIC = {
    'tff_hdp.bench.method': ('CLIENT_LEVEL', 'Calibration', 'ClientMechanism',
                             'Guarantee', 'Method', 'OPT_OUT', 'Outcome',
                             'Preferences', 'SAMPLE_LEVEL', 'Setting',
                             'USER_LEVEL_PERSONALIZED'),
    # The registry's functions, once the package's methods registered.
    'tff_hdp.bench.methods': ('get', 'load_file', 'register', 'registered'),
}
__all__, __getattr__ = public_api.lazy(__name__, _PUBLIC)
