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
"""A registry of one system's algorithms by name, a leaf: `register`, `get`.

Each system keeps its algorithms (FedHDP's, Robust-HDP's rules, UDP-Alg's
variants, HDP-Bench's methods) in one `Registry`, as Opacus keeps its
accountants: an algorithm is an object that says what it is, and registers
from its own file,

    registry.register(MyVariant())       # or @registry.register on a class

The readers (a config's check of its `algorithm` name, the builders, the
binaries' `--algorithm`, tables, claims, sweeps and HDP-Bench) import the
system's package of algorithms beside the registry: the registry imports
nothing of theirs, so no import comes back to it. TensorFlow-free.

Every algorithm declares its `role` in a comparison (`ROLES`), which claims,
sweeps, tables and HDP-Bench read instead of names.
"""

from typing import Callable, Generic, Sequence, TypeVar, Union

# What an algorithm is in a comparison: 'proposed' (the paper's method),
# 'baseline' (a private method the claims compare against), 'oracle' (told
# what no server knows), 'ours' (this package's variant or ablation),
# 'reference' (not private: the ceiling).
ROLES = ('proposed', 'baseline', 'oracle', 'ours', 'reference')

T = TypeVar('T')


class Registry(Generic[T]):
  """Instances of `base` by their `name` (module doc).

  Attributes:
    kind: What is registered, for messages ('rule', 'algorithm', ...).
    base: The class every entry is an instance of.
    hint: How to register the package's own entries, for `get`'s message.
  """

  def __init__(self, kind: str, base: type, hint: str,
               required: Sequence[str] = ('name', 'label')):
    """`required`: the string attributes every entry must have."""
    self.kind = kind
    self.base = base
    self.hint = hint
    self._required = tuple(required)
    self._entries: dict[str, T] = {}
    self._watchers: list[Callable[[T], None]] = []

  def register(self, entry: Union[T, type]):
    """Registers an instance of `base` (or a class without arguments,
    which is instantiated: usable as a class decorator); returns its
    argument. Every watcher is told.

    Raises:
      TypeError: If it is not a `base`, or lacks a required string.
      ValueError: If its role is not one of `ROLES`, or an entry of another
        class has its name.
    """
    instance = entry() if isinstance(entry, type) else entry
    qualified = f'{self.base.__module__}.{self.base.__name__}'
    if not isinstance(instance, self.base):
      raise TypeError(f'register takes a {qualified}, got '
                      f'{type(instance).__name__}')
    for attribute in self._required:
      if not isinstance(getattr(instance, attribute, None), str):
        raise TypeError(f'{self.kind} {type(instance).__name__} has no '
                        f'{attribute} (a string)')
    role = getattr(instance, 'role', None)
    if role not in ROLES:
      raise ValueError(f'{self.kind} {instance.name}: role must be one of '
                       f'{", ".join(ROLES)}, got {role!r}')
    known = self._entries.get(instance.name)
    if known is not None and type(known) is not type(instance):
      raise ValueError(f'a {self.kind} named {instance.name!r} is already '
                       f'registered ({type(known).__name__})')
    self._entries[instance.name] = instance
    for watcher in self._watchers:
      watcher(instance)
    return entry

  def watch(self, callback: Callable[[T], None]) -> None:
    """Calls `callback` with every entry registered so far, then with each
    one registered later."""
    self._watchers.append(callback)
    for instance in list(self._entries.values()):
      callback(instance)

  def unregister(self, name: str) -> None:
    """Removes the entry called `name` (tests' entries)."""
    self._entries.pop(name, None)

  def names(self) -> tuple[str, ...]:
    """Every entry's name, in the order they registered."""
    return tuple(self._entries)

  def with_role(self, *roles: str) -> tuple[T, ...]:
    """The entries whose role is one of `roles`, in registration order."""
    return tuple(e for e in self._entries.values() if e.role in roles)

  def get(self, name: str) -> T:
    """The entry called `name`, or a one-line ValueError naming the
    registered ones."""
    if name not in self._entries:
      known = ', '.join(self._entries) or f'none ({self.hint})'
      raise ValueError(f'unknown {self.kind} {name!r}; registered: {known}')
    return self._entries[name]
