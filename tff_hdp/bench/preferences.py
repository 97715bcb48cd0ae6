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
- `read_csv(path)`: a CSV you bring. One row per client in data order, a
  column `epsilon` (a number > 0, or `inf` for a client who opts out) and
  optionally `batch_size` (an integer >= 1); or, with a column `fraction`
  beside them, a `Mixture`: each row a share of the clients.
- `MIXTURES`: paper 001's levels, 95% private at its non-IID MNIST epsilon
  3.6 and 5% who opt out (Section 5, Table 8).
- `assign(mixture, num_clients, seed)`: a mixture for any number of clients:
  round(fraction x n) clients per row (largest remainders, so that they sum
  to n), who is which drawn by a permutation from the public `seed`. The
  draw decides who asks for what, not any noise: it is public, and the
  benchmark writes it out.

Every mistake is one line naming the file, the row and what is allowed.
TensorFlow-free.
"""

import csv
import dataclasses
import math
import os
from typing import Optional, Union

import numpy as np

from tff_hdp.bench import method
from tff_hdp.robust_hdp import privacy_preferences

DISTRIBUTIONS = privacy_preferences.DISTRIBUTIONS
CLIENT_COUNTS = privacy_preferences.CLIENT_COUNTS


@dataclasses.dataclass(frozen=True)
class Mixture:
  """Preferences as shares of a population of any size.

  Attributes:
    name: Its name in the leaderboard.
    fractions: Per row, the share of the clients (> 0, summing to 1).
    epsilons: Per row, their epsilon (> 0, `method.OPT_OUT` to opt out).
    batch_sizes: Per row, their DP-SGD b (>= 1), or None for the setting's.
  """
  name: str
  fractions: tuple[float, ...]
  epsilons: tuple[float, ...]
  batch_sizes: Optional[tuple[int, ...]] = None

  def __post_init__(self):
    rows = len(self.fractions)
    if not rows or len(self.epsilons) != rows or (
        self.batch_sizes is not None and len(self.batch_sizes) != rows):
      raise ValueError(f'mixture {self.name!r}: one fraction, epsilon (and '
                       'batch size) per row, and at least one row')
    if not all(f > 0 for f in self.fractions) or not math.isclose(
        sum(self.fractions), 1.0, abs_tol=1e-6):
      raise ValueError(f'mixture {self.name!r}: fractions must be > 0 and '
                       f'sum to 1, got {list(self.fractions)}')
    if not all(e > 0 for e in self.epsilons):
      raise ValueError(f'mixture {self.name!r}: every epsilon must be > 0 '
                       f'(inf to opt out), got {list(self.epsilons)}')
    if not any(math.isfinite(e) for e in self.epsilons):
      raise ValueError(f'mixture {self.name!r}: every row opts out (epsilon '
                       'inf); a benchmark of private methods needs a finite '
                       'epsilon')

  def words(self) -> str:
    """'0.95 at epsilon 3.6, 0.05 opt out'."""
    return ', '.join(
        f'{f:g} ' + (f'at epsilon {e:g}' if math.isfinite(e) else 'opt out') +
        ('' if self.batch_sizes is None else f' (b {self.batch_sizes[i]})')
        for i, (f, e) in enumerate(zip(self.fractions, self.epsilons)))


MIXTURES = {
    # Paper 001, Section 5: two levels, private or opted out, with 5% of
    # the clients opting out; Table 8's non-IID MNIST epsilon at delta 1e-4.
    'paper001': Mixture('paper001', (0.95, 0.05), (3.6, method.OPT_OUT)),
}


def mixture(name: str) -> Mixture:
  """The built-in mixture `name`, or a one-line ValueError naming them."""
  if name not in MIXTURES:
    raise ValueError(f'unknown mixture {name!r}; built in: '
                     f'{", ".join(MIXTURES)} (or a CSV with a fraction '
                     'column)')
  return MIXTURES[name]


def assign(mix: Mixture, num_clients: int, seed: int) -> method.Preferences:
  """`mix` for `num_clients` clients, who is which drawn from the public
  `seed` (module doc)."""
  if num_clients < 1:
    raise ValueError(f'num_clients must be >= 1, got {num_clients}')
  exact = np.asarray(mix.fractions) * num_clients
  counts = np.floor(exact).astype(np.int64)
  # Largest remainders first (the earlier row on a tie).
  order = sorted(range(len(counts)), key=lambda i: (counts[i] - exact[i], i))
  for i in order[:num_clients - int(counts.sum())]:
    counts[i] += 1
  rows = np.random.default_rng(seed).permutation(
      np.repeat(np.arange(len(counts)), counts))
  if not any(math.isfinite(mix.epsilons[r]) for r in rows):
    raise ValueError(f'mixture {mix.name!r} leaves no private client among '
                     f'{num_clients}')
  return method.Preferences(
      mix.name, tuple(float(mix.epsilons[r]) for r in rows),
      None if mix.batch_sizes is None else
      tuple(int(mix.batch_sizes[r]) for r in rows),
      origin=f'mixture {mix.name} ({mix.words()}) for {num_clients} clients, '
             f'drawn with public seed {seed}')


def distribution(name: str, num_clients: int) -> method.Preferences:
  """Dist `name` (dist1 ... dist9) of paper 003 for `num_clients`."""
  epsilons, batch_sizes = privacy_preferences.load_distribution(name,
                                                                num_clients)
  return method.Preferences(
      name, tuple(epsilons), tuple(batch_sizes),
      origin=f"paper 003's {name} for {num_clients} clients")


def _number(path, row_number, row, column, parse, allowed):
  """`parse` of the row's `column`, or a one-line ValueError."""
  text = (row.get(column) or '').strip()
  try:
    value = parse(text)
  except ValueError:
    value = None
  if value is None or not value > 0:  # NaN fails too.
    raise ValueError(f'{path}, row {row_number}: {column} must be '
                     f'{allowed}, got {text!r}')
  return value


def read_csv(path: str) -> Union[method.Preferences, Mixture]:
  """Your preferences from a CSV (module doc): one row per client, or, with
  a `fraction` column, a `Mixture` named after the file.

  Raises:
    ValueError: One line: a missing file or column, a bad value, fractions
      that do not sum to 1, or every client opting out.
  """
  if not os.path.isfile(path):
    raise ValueError(f'{path}: no such preferences file')
  name = os.path.splitext(os.path.basename(path))[0]
  columns = {'epsilon': [], 'batch_size': [], 'fraction': []}
  with open(path, newline='', encoding='utf-8') as f:
    reader = csv.DictReader(f)
    fields = reader.fieldnames or []
    if 'epsilon' not in fields:
      raise ValueError(f'{path}: needs a column epsilon (and optionally '
                       'batch_size, and fraction for a mixture), got columns '
                       f'{fields}')
    for row_number, row in enumerate(reader, start=2):
      columns['epsilon'].append(_number(
          path, row_number, row, 'epsilon', float,
          'a number > 0 (or inf to opt out)'))
      if 'batch_size' in fields:
        columns['batch_size'].append(_number(
            path, row_number, row, 'batch_size',
            lambda t: int(t) if t.isdigit() else None, 'an integer >= 1'))
      if 'fraction' in fields:
        columns['fraction'].append(_number(
            path, row_number, row, 'fraction', float,
            'a number in (0, 1], the share of the clients'))
  epsilons = tuple(columns['epsilon'])
  batch_sizes = tuple(columns['batch_size']) or None
  if not epsilons:
    raise ValueError(f'{path}: no rows of preferences')
  if not any(math.isfinite(e) for e in epsilons):
    raise ValueError(f'{path}: every client opts out (epsilon inf); a '
                     'benchmark of private methods needs a finite epsilon')
  if 'fraction' in fields:
    try:
      return Mixture(name, tuple(columns['fraction']), epsilons, batch_sizes)
    except ValueError as e:
      raise ValueError(f'{path}: {e}') from None
  return method.Preferences(name, epsilons, batch_sizes,
                            origin=f'{path}, one row per client')


def from_csv(path: str, num_clients: int,
             seed: int = 0) -> method.Preferences:
  """`read_csv`'s preferences for `num_clients` clients: a mixture drawn
  with the public `seed` (`assign`), or one row per client.

  Raises:
    ValueError: `read_csv`'s, or a number of rows other than `num_clients`.
  """
  found = read_csv(path)
  if isinstance(found, Mixture):
    return assign(found, num_clients, seed)
  if found.num_clients != num_clients:
    raise ValueError(f'{path}: {found.num_clients} rows of preferences for '
                     f'{num_clients} clients (one row per client, or a '
                     'fraction column for a mixture)')
  return found


def describe(preferences: method.Preferences) -> str:
  """'name: n clients, epsilon min..max[, k opt out]'."""
  finite = [e for e in preferences.epsilons if math.isfinite(e)]
  opt_outs = preferences.num_clients - len(finite)
  return (f'{preferences.name}: {preferences.num_clients} clients, epsilon '
          f'{min(finite):g}..{max(finite):g}' +
          (f', {opt_outs} opt out' if opt_outs else ''))


def to_csv(preferences: method.Preferences, path: str) -> None:
  """Writes `preferences` one row per client (client, epsilon, batch_size
  if any): a file `read_csv` reads back as the same preferences."""
  with open(path, 'w', newline='', encoding='utf-8') as f:
    writer = csv.writer(f)
    writer.writerow(['client', 'epsilon'] +
                    ([] if preferences.batch_sizes is None else
                     ['batch_size']))
    for i, epsilon in enumerate(preferences.epsilons):
      writer.writerow([i, repr(float(epsilon))] +
                      ([] if preferences.batch_sizes is None else
                       [preferences.batch_sizes[i]]))
