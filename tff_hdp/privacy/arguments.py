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
"""Argument checks of the accountants: one-line ValueErrors naming the
argument and its allowed range (`accounting`, `pld`). TensorFlow-free."""

import math
import numbers


def as_real(value, name: str) -> float:
  """`value` as a float; bools, non-numbers and nan are refused."""
  if isinstance(value, bool) or not isinstance(value, numbers.Real):
    raise ValueError(f'{name} must be a real number, got {value!r}')
  value = float(value)
  if math.isnan(value):
    raise ValueError(f'{name} must be a real number, got nan')
  return value


def check_delta(delta, name: str = 'delta') -> float:
  delta = as_real(delta, name)
  if not 0.0 < delta < 1.0:
    raise ValueError(f'{name} must be in (0, 1), got {delta!r}')
  return delta


def check_positive(value, name: str) -> float:
  """A finite number > 0 (an epsilon, a tolerance, an interval)."""
  value = as_real(value, name)
  if not 0.0 < value < math.inf:
    raise ValueError(f'{name} must be > 0 and finite, got {value!r}')
  return value


def check_sampling_rate(q, name: str = 'sampling_rate') -> float:
  q = as_real(q, name)
  if not 0.0 <= q <= 1.0:
    raise ValueError(f'{name} must be in [0, 1], got {q!r}')
  return q


def check_noise(z, name: str = 'noise_multiplier') -> float:
  z = as_real(z, name)
  if not 0.0 <= z < math.inf:
    raise ValueError(f'{name} must be >= 0 and finite, got {z!r}')
  return z


def check_count(n, name: str) -> int:
  """An integer >= 0; a whole float (3.0) is accepted, a bool is not."""
  if isinstance(n, bool) or not isinstance(n, numbers.Real) or not (
      isinstance(n, numbers.Integral) or float(n).is_integer()):
    raise ValueError(f'{name} must be an integer >= 0, got {n!r}')
  n = int(n)
  if n < 0:
    raise ValueError(f'{name} must be an integer >= 0, got {n!r}')
  return n
