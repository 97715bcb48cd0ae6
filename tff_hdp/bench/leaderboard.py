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
"""HDP-Bench's leaderboards: one per population and guarantee family.

Each method's row holds its accuracy on every preference distribution (the
mean +- std over seeds of the clients' mean local test accuracy), their mean
(the rank's key), whether every client's budget was met in every run (the
epsilon each client's ledger spent against the one it asked for), the
largest spent / asked, what its server must know, its guarantee in words and
its wall time. A method whose ledger ever spent more than a client asked is
marked invalid and never ranked; a reference without a guarantee (Non-private)
is shown, never ranked. A method refused everywhere reads refused in every
column, one refused on some distributions reads refused there and is not
ranked; the reasons are listed beneath the table, and budgets are checked
only on the runs that ran. Markdown, JSON and a matplotlib picture (a row of
panels per population, one per family: groups of bars per distribution,
the seeds' spread, the non-private reference and chance level).
TensorFlow-free.
"""

import collections
import dataclasses
import math
from typing import Any, Optional, Sequence

import numpy as np

from tff_hdp import tables
from tff_hdp.bench import method as method_lib


@dataclasses.dataclass(frozen=True)
class RunResult:
  """One run: a method on one preference distribution with one seed.

  Attributes:
    method: The method's name.
    preferences: The distribution's name.
    seed: The public seed.
    accuracy: Mean local test accuracy (%), or None if the method refused.
    spent: Per client, the epsilon its run's ledger spent (inf: none).
    asked: Per client, its epsilon_i (inf: opted out).
    planned: Per client, the epsilon of the calibrated mechanism.
    seconds: Wall time of the run, with its share of the calibration's
      (which serves every seed of the distribution).
    refused: Why the method could not run these preferences on this
      population, or None.
    population: The population's name (`tff_hdp.bench.population`).
  """
  method: str
  preferences: str
  seed: int
  accuracy: Optional[float]
  spent: tuple[float, ...] = ()
  asked: tuple[float, ...] = ()
  planned: tuple[float, ...] = ()
  seconds: float = 0.0
  refused: Optional[str] = None
  population: str = ''

  @property
  def budgets_met(self) -> bool:
    return method_lib.budgets_met(self.spent, self.asked)

  @property
  def worst_ratio(self) -> float:
    """max_i spent_i / asked_i over the clients who asked for privacy."""
    ratios = [s / a for s, a in zip(self.spent, self.asked)
              if math.isfinite(a)]
    return max(ratios) if ratios else 0.0

  def to_json(self) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v)
            for k, v in dataclasses.asdict(self).items()}

  @classmethod
  def from_json(cls, record: dict[str, Any]) -> 'RunResult':
    return cls(**{k: (tuple(float(x) for x in v) if isinstance(v, list)
                      else v) for k, v in record.items()})


@dataclasses.dataclass
class Row:
  """A method's line of its family's leaderboard."""
  method: str
  guarantee: str
  server_knows: str
  threat_model: str
  reference: bool  # A row without a guarantee: shown, never ranked.
  accuracy: dict[str, tuple[float, float, int]]  # Per distribution: mean, std, seeds.
  budgets_met: bool
  worst_ratio: float
  seconds: float
  refused: dict[str, str]  # Per refused distribution, why.
  rank: Optional[int] = None

  @property
  def mean_accuracy(self) -> float:
    values = [m for m, _, _ in self.accuracy.values()]
    return float(np.mean(values)) if values else math.nan

  @property
  def valid(self) -> bool:
    return self.budgets_met and not self.reference

  @property
  def ran(self) -> bool:
    """Whether it ran on some distribution (its budgets are checked)."""
    return bool(self.accuracy)

  @property
  def ranked_on_all(self) -> bool:
    """Whether it ran on every distribution: its mean is comparable."""
    return self.ran and not self.refused


def leaderboards(results: Sequence[RunResult],
                 methods: dict[str, method_lib.Method]
                 ) -> dict[str, list[Row]]:
  """Per guarantee family, its rows, ranked: valid rows that ran on every
  distribution by mean accuracy (1 = best), then the others unranked (the
  invalid, the references, and those refused somewhere)."""
  by_method = collections.defaultdict(list)
  for r in results:
    by_method[r.method].append(r)
  boards = collections.defaultdict(list)
  for name, runs in by_method.items():
    m = methods[name]
    accuracy = {}
    for prefs in dict.fromkeys(r.preferences for r in runs):
      values = [r.accuracy for r in runs
                if r.preferences == prefs and r.accuracy is not None]
      if values:
        accuracy[prefs] = (float(np.mean(values)), float(np.std(values)),
                           len(values))
    ran = [r for r in runs if r.refused is None]
    boards[m.guarantee.family].append(Row(
        method=name, guarantee=m.guarantee.words(),
        server_knows=m.server_knows, threat_model=m.threat_model,
        reference=m.guarantee.kind == 'none', accuracy=accuracy,
        budgets_met=all(r.budgets_met for r in ran),
        worst_ratio=max((r.worst_ratio for r in ran), default=0.0),
        seconds=sum(r.seconds for r in runs),
        refused={r.preferences: r.refused for r in runs if r.refused}))
  for rows in boards.values():
    valid = sorted((r for r in rows if r.valid and r.ranked_on_all),
                   key=lambda r: -r.mean_accuracy)
    for rank, row in enumerate(valid, start=1):
      row.rank = rank
    rows.sort(key=lambda r: (r.rank is None, r.rank or 0, -r.mean_accuracy
                             if r.accuracy else 0.0))
  return dict(boards)


def _cell(entry: Optional[tuple[float, float, int]]) -> str:
  if entry is None:
    return '-'
  mean, std, seeds = entry
  return f'{mean:.1f} ± {std:.1f}' if seeds > 1 else f'{mean:.1f}'


REFUSED = 'refused'


def _row_cells(row: Row, distributions: Sequence[str]) -> list[str]:
  """A row's cells after its name: a row that ran nowhere reads refused in
  every one; one refused somewhere is ranked nowhere and its mean is over
  the distributions it ran."""
  if not row.ran and row.refused:
    return [REFUSED] * (len(distributions) + 7)
  rank = (str(row.rank) if row.rank is not None else
          'ref.' if row.reference else 'invalid' if not row.budgets_met
          else REFUSED + ' in part' if row.refused else '-')
  mean = (f'{row.mean_accuracy:.1f}' if row.ran else '-') + (
      f' ({len(row.accuracy)} of {len(distributions)})'
      if row.refused and row.ran else '')
  return ([rank] +
          [REFUSED if d in row.refused else _cell(row.accuracy.get(d))
           for d in distributions] +
          [mean,
           '- (no privacy)' if row.reference else
           'yes' if row.budgets_met else 'NO',
           '∞' if math.isinf(row.worst_ratio) else f'{row.worst_ratio:.3f}',
           row.server_knows, row.guarantee, f'{row.seconds:.0f}'])


def refusals(rows: Sequence[Row]) -> list[str]:
  """One line per refused method and reason: the distributions and why."""
  lines = []
  for row in rows:
    by_reason = collections.defaultdict(list)
    for distribution, reason in row.refused.items():
      by_reason[reason].append(distribution)
    lines += [f'{row.method} refused {", ".join(names)}: {reason}'
              for reason, names in by_reason.items()]
  return lines


def markdown(boards: dict[str, list[Row]], distributions: Sequence[str]
             ) -> str:
  """The leaderboards as Markdown: a heading and a table per family, and
  beneath a table why each refused row was refused."""
  parts = []
  for family, rows in boards.items():
    header = (['rank', 'method'] + [f'{d} acc%' for d in distributions] +
              ['mean acc%', 'every budget met', 'max spent/asked',
               'server knows', 'guarantee', 'wall s'])
    table = []
    for row in rows:
      cells = _row_cells(row, distributions)
      table.append(cells[:1] + [row.method] + cells[1:])
    notes = ''.join(f'\n- {line}' for line in refusals(rows))
    parts.append(f'### {family}\n\n' +
                 tables.format_markdown(table, header).rstrip('\n') +
                 (f'\n\nRefused:\n{notes}' if notes else ''))
  return '\n\n'.join(parts) + '\n'


def to_json(boards: dict[str, list[Row]],
            results: Sequence[RunResult]) -> dict[str, Any]:
  """The leaderboards and every run, for results.json."""
  return {
      'leaderboards': {
          family: [dict(dataclasses.asdict(row),
                        mean_accuracy=row.mean_accuracy, valid=row.valid)
                   for row in rows]
          for family, rows in boards.items()},
      'runs': [r.to_json() for r in results],
  }


@dataclasses.dataclass(frozen=True)
class Panel:
  """One population's leaderboards, for `plot`: a row of panels.

  Attributes:
    population: Its name.
    boards: `leaderboards`' of its runs.
    distributions: Its preferences' names, in order.
    chance: Chance accuracy (%) of its task (100 / classes).
  """
  population: str
  boards: dict[str, list[Row]]
  distributions: tuple[str, ...]
  chance: float


def _references(panel: Panel, family: str) -> list[Row]:
  """The reference rows drawn in a family's panel: its own, else every
  reference of the population."""
  own = [r for r in panel.boards.get(family, ()) if r.reference and r.ran]
  return own or [r for rows in panel.boards.values() for r in rows
                 if r.reference and r.ran]


def _draw_panel(ax, panel: Panel, family: str) -> None:
  """Groups of bars (one group per distribution, one bar per ranked or
  unranked method, the spread over seeds where there are several), the
  population's non-private reference over each group and chance level."""
  rows = [r for r in panel.boards.get(family, ()) if not r.reference]
  x = np.arange(len(panel.distributions))
  width = 0.8 / max(1, len(rows))
  for k, row in enumerate(rows):
    offsets = x - 0.4 + (k + 0.5) * width
    means = [row.accuracy.get(d, (np.nan, 0, 0))[0]
             for d in panel.distributions]
    # NaN draws no error bar (one seed has no spread to show).
    spread = [row.accuracy[d][1] if row.accuracy.get(d, (0, 0, 1))[2] > 1
              else np.nan for d in panel.distributions]
    label = row.method + ('' if row.rank is not None else
                          ' (invalid)' if not row.budgets_met else
                          ' (refused)' if row.refused else '')
    ax.bar(offsets, means, width, yerr=spread, capsize=2, label=label,
           hatch=None if row.budgets_met else '//')
    for offset, d in zip(offsets, panel.distributions):
      if d in row.refused:
        ax.text(offset, 1, REFUSED, rotation=90, ha='center', va='bottom',
                fontsize=6)
  for j, ref in enumerate(_references(panel, family)):
    for i, d in enumerate(panel.distributions):
      if d in ref.accuracy:
        ax.hlines(ref.accuracy[d][0], i - 0.45, i + 0.45, colors='black',
                  linestyles=('--', '-.', ':')[j % 3],
                  label=f'{ref.method} (no privacy)' if i == 0 else None)
  ax.axhline(panel.chance, color='gray', linestyle=':', label='chance')
  ax.set_title(f'{panel.population}: {family}', fontsize=9)
  ax.set_xticks(x, panel.distributions)
  ax.set_xlabel('privacy preferences')
  ax.set_ylim(0, 100)
  ax.grid(alpha=0.3, axis='y')
  ax.legend(fontsize=6)


def plot(panels: Sequence[Panel], path: str, title: str = '') -> None:
  """Accuracy per method per distribution (PNG): one row of panels per
  population, one column per guarantee family."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
  families = list(dict.fromkeys(f for p in panels for f in p.boards))
  fig, axes = plt.subplots(len(panels), len(families),
                           figsize=(6 * len(families), 4.5 * len(panels)),
                           squeeze=False)
  for panel, row_axes in zip(panels, axes):
    for ax, family in zip(row_axes, families):
      _draw_panel(ax, panel, family)
    row_axes[0].set_ylabel('mean local test accuracy (%)')
  if title:
    fig.suptitle(title, fontsize=9)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)
