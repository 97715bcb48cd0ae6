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
argument and its allowed range (`accounting`, `privacy_ledger`, `pld`, and
FedHDP's `tff_hdp.fedhdp.clip_noise`). TensorFlow-free."""

import math
import numbers
from typing import Optional, Sequence, Tuple


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


def check_orders(orders: Optional[Sequence[float]]) -> Optional[Tuple[float,
                                                                       ...]]:
  """RDP orders: None, or a non-empty sequence of finite numbers > 1."""
  if orders is None:
    return None
  orders = tuple(as_real(a, 'orders') for a in orders)
  if not orders or any(not 1.0 < a < math.inf for a in orders):
    raise ValueError(
        f'orders must be a non-empty list of finite numbers > 1, got {orders}')
  return orders


def check_population(population, sampling_rate: float) -> Optional[int]:
  """N of a fixed cohort, checked: q N must be a whole cohort size n >= 1."""
  if population is None:
    return None
  n = check_count(population, 'population')
  size = sampling_rate * n
  if n < 1 or abs(size - round(size)) > 1e-6 * max(1.0, size) or round(
      size) < 1:
    raise ValueError(f'a fixed cohort needs sampling_rate x population to be '
                     f'a cohort size >= 1, got {sampling_rate!r} x '
                     f'{population!r}')
  return n
