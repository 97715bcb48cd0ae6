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
"""UDP-Alg's variants by name, a leaf (a `tff_hdp.registry.Registry`).

The package's variants (`tff_hdp.udp.algorithms`, one file each) register
here when that package is imported; the readers import it beside this
module. TensorFlow-free.
"""

from tff_hdp import registry
from tff_hdp.udp import algorithm as algorithm_lib

_REGISTRY: registry.Registry[algorithm_lib.Algorithm] = registry.Registry(
    'algorithm', algorithm_lib.Algorithm, 'import tff_hdp.udp.algorithms')

register = _REGISTRY.register
watch = _REGISTRY.watch
unregister = _REGISTRY.unregister  # Tests' variants.
names = _REGISTRY.names  # In the order they registered.
with_role = _REGISTRY.with_role
get = _REGISTRY.get  # A one-line ValueError naming the registered ones.
