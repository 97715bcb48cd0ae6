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
  udp/         UDP-Alg (Nemala, Lai and Phan, CIKM 2023): user-level DP for
               hypernetwork-based personalized FL (HyperNetFL).

and the pieces every system uses beside them: `models`, `privacy`
(accounting), `data` (federated data, sampling), `checkpoint`, `runtime` (the
TFF execution context) and `tables`.

This top-level module deliberately imports nothing heavy: `tff_hdp.theory` is
numpy-only and must import without TensorFlow.
"""

import os

# TensorFlow's oneDNN kernels, asked for before TensorFlow is imported (the
# setting is read then; a user's own value wins). TensorFlow turns them on by
# default only on CPUs with AVX-512 VNNI or newer; on others (e.g. AVX2) its
# own kernels run, which have no gradient for the grouped convolutions of
# FedHDP's direct backend's batched CNN (`fedhdp.batched_models` then falls
# back to a slower form) and are slower for the clients' small convolutions.
# Without effect on a GPU.
os.environ.setdefault('TF_ENABLE_ONEDNN_OPTS', '1')

__version__ = '0.1.0'
