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
"""HDP-Bench's leaderboards: one per guarantee family, from the runs.

Each method's row holds its accuracy on every preference distribution (the
mean +- std over seeds of the clients' mean local test accuracy), their mean
(the rank's key), whether every client's budget was met in every run (the
epsilon each client's ledger spent against the one it asked for), the
largest spent / asked, what its server must know, its guarantee in words and
its wall time. A method whose ledger ever spent more than a client asked is
marked invalid and never ranked; a reference without a guarantee (Non-private)
is shown, never ranked. Markdown, JSON and a matplotlib picture (one panel
per family). TensorFlow-free.
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
    refused: Why the method could not run these preferences, or None.
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
  refused: dict[str, str]
  rank: Optional[int] = None

  @property
  def mean_accuracy(self) -> float:
    values = [m for m, _, _ in self.accuracy.values()]
    return float(np.mean(values)) if values else math.nan

  @property
  def valid(self) -> bool:
    return self.budgets_met and not self.reference


def leaderboards(results: Sequence[RunResult],
                 methods: dict[str, method_lib.Method]
                 ) -> dict[str, list[Row]]:
  """Per guarantee family, its rows, ranked: valid rows by mean accuracy
  (1 = best), then the invalid and reference rows unranked."""
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
    valid = sorted((r for r in rows if r.valid and r.accuracy),
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


def markdown(boards: dict[str, list[Row]], distributions: Sequence[str]
             ) -> str:
  """The leaderboards as Markdown: a heading and a table per family."""
  parts = []
  for family, rows in boards.items():
    header = (['rank', 'method'] + [f'{d} acc%' for d in distributions] +
              ['mean acc%', 'every budget met', 'max spent/asked',
               'server knows', 'guarantee', 'wall s'])
    table = []
    for row in rows:
      rank = (str(row.rank) if row.rank is not None else
              'ref.' if row.reference else 'invalid' if not row.budgets_met
              else '-')
      table.append([rank, row.method] +
                   [_cell(row.accuracy.get(d)) if d not in row.refused
                    else 'refused' for d in distributions] +
                   [f'{row.mean_accuracy:.1f}' if row.accuracy else '-',
                    '- (no privacy)' if row.reference else
                    'yes' if row.budgets_met else 'NO',
                    '∞' if math.isinf(row.worst_ratio) else
                    f'{row.worst_ratio:.3f}',
                    row.server_knows, row.guarantee, f'{row.seconds:.0f}'])
    parts.append(f'### {family}\n\n' +
                 tables.format_markdown(table, header))
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


def plot(boards: dict[str, list[Row]], distributions: Sequence[str],
         path: str, title: str = '') -> None:
  """Accuracy per method per distribution, one panel per family (PNG)."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
  families = list(boards)
  fig, axes = plt.subplots(1, len(families), figsize=(6 * len(families), 4.5),
                           squeeze=False, sharey=True)
  x = np.arange(len(distributions))
  for ax, family in zip(axes[0], families):
    for row in boards[family]:
      means = [row.accuracy.get(d, (np.nan, 0, 0))[0] for d in distributions]
      stds = [row.accuracy.get(d, (0, np.nan, 0))[1] for d in distributions]
      label = row.method + ('' if row.valid else
                            ' (ref.)' if row.reference else ' (invalid)')
      ax.errorbar(x, means, yerr=stds, marker='o', capsize=3, label=label,
                  linestyle='--' if not row.valid else '-')
    ax.set_title(family, fontsize=10)
    ax.set_xticks(x, distributions)
    ax.set_xlabel('privacy preferences')
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
  axes[0][0].set_ylabel('mean local test accuracy (%)')
  if title:
    fig.suptitle(title, fontsize=10)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)
