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
"""The datasets by name, a leaf: `register`, `get`, `names`.

    dataset_registry.register(dataset.Dataset(name='mine', ...))

Each dataset file of `tff_hdp.datasets` registers its `Dataset`s when that
package is imported (in the order of its imports, which is the order of
every list of names); a dataset from outside registers the same way. The
readers (the three loaders `load_<system>_data`, the binaries' `--dataset`,
HDP-Bench's populations) import `tff_hdp.datasets`: this module imports
none of them. Not `tff_hdp.registry.Registry`, whose entries declare a role
in a comparison, which a dataset has not. TensorFlow-free.
"""

from typing import Optional

from tff_hdp.datasets import dataset as dataset_lib

_ENTRIES: dict[str, dataset_lib.Dataset] = {}


def register(entry: dataset_lib.Dataset) -> dataset_lib.Dataset:
  """Registers `entry` under its name; returns it.

  Raises:
    TypeError: If it is not a `dataset.Dataset`.
    ValueError: If another dataset holds its name.
  """
  if not isinstance(entry, dataset_lib.Dataset):
    raise TypeError('register takes a tff_hdp.datasets.dataset.Dataset, got '
                    f'{type(entry).__name__}')
  known = _ENTRIES.get(entry.name)
  if known is not None and known != entry:
    raise ValueError(f'a dataset named {entry.name!r} is already registered '
                     f'({known.label})')
  _ENTRIES[entry.name] = entry
  return entry


def unregister(name: str) -> None:
  """Removes the dataset called `name` (tests' datasets)."""
  _ENTRIES.pop(name, None)


def names(system: Optional[str] = None) -> tuple[str, ...]:
  """The names `system` (one of `dataset.SYSTEMS`; None: any) can load, in
  the order they registered."""
  if system is not None and system not in dataset_lib.SYSTEMS:
    raise ValueError(f'unknown system {system!r}; allowed: '
                     f'{", ".join(dataset_lib.SYSTEMS)}')
  return tuple(n for n, e in _ENTRIES.items()
               if system is None or getattr(e, system) is not None)


def get(name: str, system: Optional[str] = None) -> dataset_lib.Dataset:
  """The dataset called `name` that `system` can load, or a one-line
  ValueError naming the allowed ones."""
  allowed = names(system)
  if name not in allowed:
    raise ValueError(f'unknown dataset {name!r}; allowed: '
                     f'{", ".join(allowed)}')
  return _ENTRIES[name]
