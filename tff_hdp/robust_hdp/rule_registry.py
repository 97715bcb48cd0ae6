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
"""The Robust-HDP rules by name, a leaf (a `tff_hdp.registry.Registry`).

    rule_registry.register(MyRule())    # or @rule_registry.register

The package's rules (`tff_hdp.robust_hdp.rules`, one file each) register
here when that package is imported; a rule from outside registers the same
way, as Opacus registers its accountants. The readers (the configuration's
check of `algorithm`, the driver and `build_robust_hdp_process`, the
binaries' `--algorithm`, HDP-Bench, which `watch`es the registry and runs
every rule as a sample-level method) import `tff_hdp.robust_hdp.rules`
beside this module: it imports nothing of theirs, so no import comes back
to it. TensorFlow-free.
"""

from tff_hdp import registry
from tff_hdp.robust_hdp import rule as rule_lib

_REGISTRY: registry.Registry[rule_lib.Rule] = registry.Registry(
    'rule', rule_lib.Rule, 'import tff_hdp.robust_hdp.rules',
    required=('name', 'label', 'server_knows'))

# A rule registers (an instance, or a class without arguments: usable as a
# class decorator) and every watcher is told; a one-line TypeError if it is
# not a `Rule` or lacks its name, label or server_knows, a ValueError for a
# role outside `registry.ROLES` or a name another class holds.
register = _REGISTRY.register
# Calls a callback with every rule registered so far, then with each later.
watch = _REGISTRY.watch
unregister = _REGISTRY.unregister  # Tests' rules.
# Every rule's name, in the order they registered (the package's, in their
# files' order, when `tff_hdp.robust_hdp.rules` is imported).
names = _REGISTRY.names
with_role = _REGISTRY.with_role
# The rule called a name, or a one-line ValueError naming the registered.
get = _REGISTRY.get
