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
"""The methods HDP-Bench knows, a leaf: a dict, `register` and `get`, as
Opacus registers its grad samplers and accountants: every method registers
itself, the package's and yours alike.

    bench.register(MyMethod())      # or @bench.register on the class

A method is one file that calls `register` when imported: the package's
(`tff_hdp.bench.methods`, one file each, which its readers import beside
this module, so that no import comes back here), and a file of yours that
the binary's --extra_methods imports. A Robust-HDP rule registered in
`tff_hdp.robust_hdp.rule_registry` is a method too
(`methods.robust_hdp_rules` watches that registry). TensorFlow-free.
"""

import importlib.util
import os
import sys
from typing import Union

from tff_hdp.bench import method as method_lib

_REGISTERED: dict[str, method_lib.Method] = {}


def register(method: Union[method_lib.Method, type]):
  """Registers a `Method` (an instance, or a class without arguments, which
  is instantiated: usable as a class decorator); returns its argument.

  Raises:
    TypeError: If it is not a `Method`.
    ValueError: If another method has its name.
  """
  instance = method() if isinstance(method, type) else method
  if not isinstance(instance, method_lib.Method):
    raise TypeError('register takes a tff_hdp.bench.Method, got '
                    f'{type(instance).__name__}')
  for attribute in ('name', 'threat_model', 'guarantee', 'server_knows'):
    if not hasattr(instance, attribute):
      raise TypeError(f'method {type(instance).__name__} has no {attribute}')
  known = _REGISTERED
  if instance.name in known and type(known[instance.name]) is not type(
      instance):
    raise ValueError(f'a method named {instance.name!r} is already '
                     f'registered ({type(known[instance.name]).__name__})')
  _REGISTERED[instance.name] = instance
  return method


def load_file(path: str) -> None:
  """Imports the Python file `path`, whose import registers its methods.

  Raises:
    FileNotFoundError: If there is no such file.
  """
  if not os.path.isfile(path):
    raise FileNotFoundError(f'no such file {path}')
  spec = importlib.util.spec_from_file_location(
      f'hdp_bench_extra_{len(sys.modules)}', path)
  module = importlib.util.module_from_spec(spec)
  sys.modules[spec.name] = module  # Where its classes say they are from.
  spec.loader.exec_module(module)


def unregister(name: str) -> None:
  """Removes the method called `name` (tests' toy methods)."""
  _REGISTERED.pop(name, None)


def registered() -> dict[str, method_lib.Method]:
  """Every method by name, in the order they registered (the package's, in
  their files' order, when `tff_hdp.bench.methods` is imported)."""
  return dict(_REGISTERED)


def get(names) -> list[method_lib.Method]:
  """The methods called `names`, or a one-line ValueError naming an
  unknown one and the registered ones."""
  known = registered()
  unknown = [n for n in names if n not in known]
  if unknown:
    raise ValueError(f'unknown method {unknown[0]!r}; registered: '
                     f'{", ".join(known) or "none (import tff_hdp.bench.methods)"}')
  return [known[n] for n in names]
