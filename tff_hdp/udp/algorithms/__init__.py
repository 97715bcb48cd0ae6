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
"""UDP-Alg's variants, one file each; importing this package registers them
(`algorithm_registry`)."""

from tff_hdp.udp.algorithms.udp import Udp
from tff_hdp.udp.algorithms.clip_only import ClipOnly
from tff_hdp.udp.algorithms.noiseless import Noiseless
from tff_hdp.udp.algorithms.pfedhn import PFedHn

__all__ = ['Udp', 'ClipOnly', 'Noiseless', 'PFedHn']
