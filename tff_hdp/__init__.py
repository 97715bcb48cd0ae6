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
"""tff_hdp: federated learning with heterogeneous differential privacy.

Reference implementations on TensorFlow Federated, one subpackage per paper:

  fedhdp/      FedHDP (Aldaghri, Mahdavifar and Beirami, "Federated Learning
               with Heterogeneous Differential Privacy"; first published as
               FeO2): a trusted server, per-group noise, Ditto personal models.
  theory/      FedHDP's theory (closed forms and simulators), numpy only.
  robust_hdp/  Robust-HDP (Malekmohammadi, Yu and Cao, ICML 2024): an
               untrusted server, DP-SGD clients with their own epsilon and
               batch size, updates weighted by the noise RPCA finds in them.
  udp/         UDP-Alg (Nemala, Lai and Phan, CIKM 2023) -- not built yet.

and the pieces every system uses beside them: `models`, `privacy`
(accounting), `data` (federated data, sampling), `checkpoint`, `runtime` (the
TFF execution context) and `tables`.

This top-level module deliberately imports nothing heavy: `tff_hdp.theory` is
numpy-only and must import without TensorFlow.
"""

__version__ = '0.1.0'
