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
"""How a subpackage exports its public API lazily (shared).

    _PUBLIC = {'tff_hdp.fedhdp.process': ('build_fedhdp_process', ...), ...}
    __all__, __getattr__ = public_api.lazy(__name__, _PUBLIC)

A public name is imported from its module when first used (PEP 562), so
importing a package stays TensorFlow-free for the binaries' flag checks and
`from package import submodule` keeps working. TensorFlow-free.
"""

import importlib
from typing import Callable, Mapping, Sequence


def lazy(package: str, public: Mapping[str, Sequence[str]],
         subpackages: Sequence[str] = ()
         ) -> tuple[list[str], Callable[[str], object]]:
  """(`__all__`, the module's `__getattr__`) for `public`: module -> the
  public names it defines; `subpackages`, public too, are imported when
  first used (a system's algorithms: `robust_hdp.rules.Pfa(rank=3)`)."""
  module_of = {name: module for module, names in public.items()
               for name in names}

  def __getattr__(name):  # pylint: disable=invalid-name
    if name in module_of:
      return getattr(importlib.import_module(module_of[name]), name)
    if name in subpackages:
      return importlib.import_module(f'{package}.{name}')
    raise AttributeError(f'module {package!r} has no attribute {name!r}')

  return sorted(module_of) + sorted(subpackages), __getattr__
