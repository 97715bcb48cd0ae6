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
"""The Robust-HDP rules by name, a leaf: a dict, `register` and `get`.

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

from typing import Callable, Union

from tff_hdp.robust_hdp import rule as rule_lib

_RULES: dict[str, rule_lib.Rule] = {}
_WATCHERS: list[Callable[[rule_lib.Rule], None]] = []


def register(rule: Union[rule_lib.Rule, type]):
  """Registers a `Rule` (an instance, or a class without arguments, which
  is instantiated: usable as a class decorator); returns its argument.
  Every watcher is told.

  Raises:
    TypeError: If it is not a `Rule`, or lacks a name, label or
      server_knows.
    ValueError: If a rule of another class has its name.
  """
  instance = rule() if isinstance(rule, type) else rule
  if not isinstance(instance, rule_lib.Rule):
    raise TypeError('register takes a tff_hdp.robust_hdp.rule.Rule, got '
                    f'{type(instance).__name__}')
  for attribute in ('name', 'label', 'server_knows'):
    if not isinstance(getattr(instance, attribute, None), str):
      raise TypeError(f'rule {type(instance).__name__} has no {attribute} '
                      '(a string)')
  if instance.role not in rule_lib.ROLES:
    raise ValueError(f'rule {instance.name}: role must be one of '
                     f'{", ".join(rule_lib.ROLES)}, got {instance.role!r}')
  known = _RULES.get(instance.name)
  if known is not None and type(known) is not type(instance):
    raise ValueError(f'a rule named {instance.name!r} is already registered '
                     f'({type(known).__name__})')
  _RULES[instance.name] = instance
  for watcher in _WATCHERS:
    watcher(instance)
  return rule


def watch(callback: Callable[[rule_lib.Rule], None]) -> None:
  """Calls `callback` with every rule registered so far, then with each
  one registered later."""
  _WATCHERS.append(callback)
  for rule in list(_RULES.values()):
    callback(rule)


def unregister(name: str) -> None:
  """Removes the rule called `name` (tests' rules)."""
  _RULES.pop(name, None)


def names() -> tuple[str, ...]:
  """Every rule's name, in the order they registered (the package's, in
  their files' order, when `tff_hdp.robust_hdp.rules` is imported)."""
  return tuple(_RULES)


def get(name: str) -> rule_lib.Rule:
  """The rule called `name`, or a one-line ValueError naming the
  registered ones."""
  if name not in _RULES:
    known = ', '.join(_RULES) or 'none (import tff_hdp.robust_hdp.rules)'
    raise ValueError(f'unknown rule {name!r}; registered: {known}')
  return _RULES[name]
