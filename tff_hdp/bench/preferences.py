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
"""The privacy preferences HDP-Bench runs: paper 003's Dist1-Dist9, or yours.

- `distribution(name, num_clients)`: the authors' realised epsilon_i and b_i
  of Dist1-Dist9 for 20, 40 or 60 clients
  (`tff_hdp.robust_hdp.privacy_preferences`).
- `from_csv(path, num_clients)`: a CSV you bring, one row per client in
  data order, a column `epsilon` (a number > 0, or `inf` for a client who
  opts out) and optionally `batch_size` (an integer >= 1). Every mistake is
  one line naming the file, the row and what is allowed.

TensorFlow-free.
"""

import csv
import math
import os

from tff_hdp.bench import method
from tff_hdp.robust_hdp import privacy_preferences

DISTRIBUTIONS = privacy_preferences.DISTRIBUTIONS


def distribution(name: str, num_clients: int) -> method.Preferences:
  """Dist `name` (dist1 ... dist9) of paper 003 for `num_clients`."""
  epsilons, batch_sizes = privacy_preferences.load_distribution(name,
                                                                num_clients)
  return method.Preferences(name, tuple(epsilons), tuple(batch_sizes))


def from_csv(path: str, num_clients: int) -> method.Preferences:
  """Your preferences from a CSV (module doc), for `num_clients` clients.

  Raises:
    ValueError: One line: a missing file or column, a bad value, or a number
      of rows other than `num_clients`.
  """
  if not os.path.isfile(path):
    raise ValueError(f'{path}: no such preferences file')
  with open(path, newline='', encoding='utf-8') as f:
    reader = csv.DictReader(f)
    fields = reader.fieldnames or []
    if 'epsilon' not in fields:
      raise ValueError(f'{path}: needs a column epsilon (and optionally '
                       f'batch_size), got columns {fields}')
    epsilons, batch_sizes = [], []
    for row_number, row in enumerate(reader, start=2):
      text = (row.get('epsilon') or '').strip()
      try:
        epsilon = float(text)
      except ValueError:
        raise ValueError(f'{path}, row {row_number}: epsilon must be a number '
                         f'> 0 or inf, got {text!r}') from None
      if not epsilon > 0:  # NaN fails too.
        raise ValueError(f'{path}, row {row_number}: epsilon must be > 0 (or '
                         f'inf to opt out), got {text}')
      epsilons.append(epsilon)
      if 'batch_size' in fields:
        text = (row.get('batch_size') or '').strip()
        if not text.isdigit() or int(text) < 1:
          raise ValueError(f'{path}, row {row_number}: batch_size must be an '
                           f'integer >= 1, got {text!r}')
        batch_sizes.append(int(text))
  if len(epsilons) != num_clients:
    raise ValueError(f'{path}: {len(epsilons)} rows of preferences for '
                     f'{num_clients} clients (one row per client)')
  if not any(math.isfinite(e) for e in epsilons):
    raise ValueError(f'{path}: every client opts out (epsilon inf); a '
                     'benchmark of private methods needs a finite epsilon')
  name = os.path.splitext(os.path.basename(path))[0]
  return method.Preferences(name, tuple(epsilons),
                            tuple(batch_sizes) if batch_sizes else None)


def describe(preferences: method.Preferences) -> str:
  """'name: n clients, epsilon min..max[, k opt out]'."""
  finite = [e for e in preferences.epsilons if math.isfinite(e)]
  opt_outs = preferences.num_clients - len(finite)
  return (f'{preferences.name}: {preferences.num_clients} clients, epsilon '
          f'{min(finite):g}..{max(finite):g}' +
          (f', {opt_outs} opt out' if opt_outs else ''))
