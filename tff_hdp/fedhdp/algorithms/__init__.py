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
"""Paper 001's algorithms, one file each; importing this package registers
them (`algorithm_registry`), in the order of its tables' rows."""

from tff_hdp.fedhdp.algorithms.non_private import NonPrivate
from tff_hdp.fedhdp.algorithms.dp_fedavg import DpFedAvg
from tff_hdp.fedhdp.algorithms.hdp_fedavg import HdpFedAvg
from tff_hdp.fedhdp.algorithms.fedhdp import FedHdp

__all__ = ['NonPrivate', 'DpFedAvg', 'HdpFedAvg', 'FedHdp', 'PAPER_001']

# Paper 001's algorithms by name, in its tables' order (the registry holds
# these and any of yours).
PAPER_001 = ('non_private', 'dp_fedavg', 'hdp_fedavg', 'fedhdp')
