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
"""Argument checks shared by the `tff_hdp.theory` modules.

Every public function of the package checks its arguments up front and raises
`ValueError` naming the argument and the allowed range (STYLE.md, rule 5).
The checks accept scalars and numpy arrays alike, since the closed forms
broadcast over arrays of parameters.
"""

from typing import Sequence

import numpy as np


def as_float_array(name: str, value) -> np.ndarray:
  """Returns `value` as a float array; raises if it is not finite numbers."""
  try:
    array = np.asarray(value, dtype=np.float64)
  except (TypeError, ValueError) as e:
    raise ValueError(f'{name} must be a number or an array of numbers, '
                     f'got {value!r}') from e
  if np.any(np.isnan(array)):
    raise ValueError(f'{name} must not be NaN, got {value!r}')
  return array


def check_positive(name: str, value) -> np.ndarray:
  """Checks `value > 0` elementwise (infinity allowed) and returns it."""
  array = as_float_array(name, value)
  if np.any(array <= 0):
    raise ValueError(f'{name} must be > 0, got {value!r}')
  return array


def check_nonnegative(name: str, value) -> np.ndarray:
  """Checks `value >= 0` elementwise (infinity allowed) and returns it."""
  array = as_float_array(name, value)
  if np.any(array < 0):
    raise ValueError(f'{name} must be >= 0, got {value!r}')
  return array


def check_fraction(name: str, value) -> np.ndarray:
  """Checks `0 <= value <= 1` elementwise and returns it."""
  array = as_float_array(name, value)
  if np.any((array < 0) | (array > 1)):
    raise ValueError(f'{name} must be in [0, 1], got {value!r}')
  return array


def check_group_sizes(name: str, value) -> np.ndarray:
  """Checks a 1-D sequence of non-negative client counts with a positive sum."""
  array = as_float_array(name, value)
  if array.ndim != 1 or array.size == 0:
    raise ValueError(f'{name} must be a non-empty 1-D sequence, got {value!r}')
  if np.any(array < 0) or array.sum() <= 0:
    raise ValueError(
        f'{name} must be >= 0 with a positive total, got {value!r}')
  return array


def check_integer_sizes(name: str, value) -> np.ndarray:
  """Like `check_group_sizes`, but the counts must be whole numbers."""
  array = check_group_sizes(name, value)
  if np.any(array != np.round(array)):
    raise ValueError(f'{name} must be whole numbers of clients, got {value!r}')
  return array.astype(np.int64)


def check_same_length(names: Sequence[str], *arrays: np.ndarray) -> None:
  """Checks that 1-D per-group arrays all have the same length."""
  lengths = [np.shape(a)[0] if np.ndim(a) else None for a in arrays]
  if any(n is None for n in lengths) or len(set(lengths)) != 1:
    raise ValueError(f'{", ".join(names)} must be 1-D with one entry per '
                     f'privacy group; got lengths {lengths}')


def check_group_index(name: str, group: int, num_groups: int) -> int:
  """Checks that `group` indexes one of `num_groups` privacy groups."""
  if isinstance(group, (bool, np.bool_)) or not isinstance(
      group, (int, np.integer)) or not 0 <= group < num_groups:
    raise ValueError(
        f'{name} must be an integer in [0, {num_groups - 1}], got {group!r}')
  return int(group)
