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
"""UDP-Alg (paper 004, Algorithm 1): clipped, weighted, noised; user-level
(epsilon, delta)-DP of the hypernetwork."""

import dataclasses

from tff_hdp.udp import algorithm
from tff_hdp.udp import algorithm_registry


@algorithm_registry.register
@dataclasses.dataclass(frozen=True)
class Udp(algorithm.Algorithm):
  name = 'udp'
  label = 'UDP-Alg'
  role = 'proposed'
  private = True
  clips = True
