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
"""Paper 001's Table 2 rows over seeds, computed from kept runs (TF-free).

The full-scale pages state seed means, spreads, gaps to the paper's cells
and FedHDP's gain over DP-FedAvg; every one of them is computed here from
the runs' `results.json` (`paper_tables.load_runs`), never by hand:

- `rows`: per (block, algorithm, r), each seed's Acc_g and mean clip norm
  S^t, their mean, the spread (largest minus smallest), the paper's cell
  and the mean's distance from it;
- `gains`: FedHDP − DP-FedAvg in each block over the seeds both ran, per
  seed and on average, beside the paper's.

`markdown` prints both tables; run_scripts/stats_fedhdp.py is the command,
and docs/results/paper001.md holds its output (a test checks they agree).
"""

import collections
import dataclasses
import statistics
from typing import Optional, Sequence

from tff_hdp.fedhdp import algorithm_registry
from tff_hdp.fedhdp import paper_tables

BLOCKS = {'mnist': 'non-IID MNIST', 'skewed_mnist': 'skewed non-IID MNIST'}
LABELS = {name: algorithm_registry.get(name).label
          for name in paper_tables.ALGORITHMS}


@dataclasses.dataclass(frozen=True)
class Row:
  """One row of Table 2 over the seeds it ran."""
  dataset: str
  algorithm: str
  r: Optional[float]
  acc_g: dict[int, float]  # Per seed.
  clip: dict[int, Optional[float]]  # Per seed: the mean S^t (None: none).
  paper: Optional[float]

  @property
  def mean(self) -> float:
    return statistics.fmean(self.acc_g.values())

  @property
  def spread(self) -> float:
    return max(self.acc_g.values()) - min(self.acc_g.values())


def _mean_clip(record) -> Optional[float]:
  clips = [h['clip_norm'] for h in record['history'] if 'clip_norm' in h]
  return statistics.fmean(clips) if clips else None


def rows(runs: Sequence[paper_tables.Run]) -> list[Row]:
  """Table 2's rows (runs matching a Table 2 cell, with Ditto), each over
  its seeds, in the paper's order of blocks and algorithms."""
  reference = paper_tables.load_reference()
  found = collections.defaultdict(dict)
  for run in runs:
    row = paper_tables.match_record(reference, run.record, table=2)
    if row is None:
      continue
    config = run.record['config']
    key = (row.dataset, row.algorithm, row.r, row.values['acc_g'])
    seed = int(config['seed'])
    if seed in found[key]:
      raise ValueError(f'{run.source}: a second run of {key[:3]} at seed '
                       f'{seed}')
    found[key][seed] = run.record
  order = {a: i for i, a in enumerate(LABELS)}
  out = []
  for (dataset, algorithm, r, paper), records in sorted(
      found.items(), key=lambda kv: (list(BLOCKS).index(kv[0][0]),
                                     order[kv[0][1]], kv[0][2] or 0)):
    seeds = sorted(records)
    out.append(Row(dataset, algorithm, r,
                   {s: float(records[s]['metrics']['acc_g']) for s in seeds},
                   {s: _mean_clip(records[s]) for s in seeds}, paper))
  return out


@dataclasses.dataclass(frozen=True)
class Gain:
  """FedHDP − DP-FedAvg in one block, over the seeds both ran."""
  dataset: str
  r: float
  per_seed: dict[int, float]
  paper: Optional[float]

  @property
  def mean(self) -> float:
    return statistics.fmean(self.per_seed.values())


def gains(table: Sequence[Row]) -> list[Gain]:
  out = []
  for dataset in BLOCKS:
    dp = [r for r in table if r.dataset == dataset and
          r.algorithm == 'dp_fedavg']
    for fedhdp in [r for r in table if r.dataset == dataset and
                   r.algorithm == 'fedhdp']:
      if not dp:
        continue
      seeds = sorted(set(fedhdp.acc_g) & set(dp[0].acc_g))
      if not seeds:
        continue
      paper = (None if fedhdp.paper is None or dp[0].paper is None else
               fedhdp.paper - dp[0].paper)
      out.append(Gain(dataset, fedhdp.r, {
          s: fedhdp.acc_g[s] - dp[0].acc_g[s] for s in seeds}, paper))
  return out


@dataclasses.dataclass(frozen=True)
class Costs:
  """What clipping and the noise cost a block's private row, Acc_g % over
  seeds: the Non-Private row (unclipped, no noise), the row with the noise
  off (clipped as Algorithm 2 clips, the adaptive clip as run) and the row
  as run."""
  dataset: str
  algorithm: str
  r: Optional[float]
  unclipped: float  # Non-Private's mean.
  clip_only: dict[int, float]  # Per seed, the noise-off run's Acc_g.
  noised: float  # The row's mean.

  @property
  def clip_only_mean(self) -> float:
    return statistics.fmean(self.clip_only.values())

  @property
  def clipping(self) -> float:
    return self.unclipped - self.clip_only_mean

  @property
  def noise(self) -> float:
    return self.clip_only_mean - self.noised


def costs(table: Sequence[Row], noise_off: Sequence[paper_tables.Run]
          ) -> list[Costs]:
  """`Costs` of every private row of `table` that has noise-off runs
  (`noise_off`: runs whose z_eff is 0, otherwise the row's setting)."""
  found = collections.defaultdict(dict)
  for run in noise_off:
    config = run.record['config']
    if config.get('noise_multiplier') not in (0, 0.0, [0.0], [0]):
      continue
    dataset = ('skewed_mnist' if config.get('skewed_optout') else
               run.record.get('dataset'))
    r = (paper_tables.single_ratio(config.get('ratio'))
         if config['algorithm'] == 'fedhdp' else None)
    found[(dataset, config['algorithm'], r)][int(config['seed'])] = float(
        run.record['metrics']['acc_g'])
  out = []
  for row in table:
    clip_only = found.get((row.dataset, row.algorithm, row.r))
    unclipped = [u for u in table if u.dataset == row.dataset and
                 u.algorithm == 'non_private']
    if clip_only and unclipped:
      out.append(Costs(row.dataset, row.algorithm, row.r, unclipped[0].mean,
                       dict(sorted(clip_only.items())), row.mean))
  return out


def _signed(x: float) -> str:
  return f'{x:+.2f}'.replace('-', '−')


def _name(row_or_gain) -> str:
  algorithm = getattr(row_or_gain, 'algorithm', 'fedhdp')
  r = row_or_gain.r
  return LABELS[algorithm] + (f' (r = {r:g})' if algorithm == 'fedhdp' and
                              r is not None else '')


def markdown(runs: Sequence[paper_tables.Run],
             noise_off: Sequence[paper_tables.Run] = ()) -> str:
  """The tables, as Markdown: the rows over seeds, the gains, and (given
  noise-off runs) what clipping and the noise cost."""
  table = rows(runs)
  lines = [
      '| block | row | Acc_g % per seed | mean | spread | paper | mean − '
      'paper | mean S^t per seed |', '|---|---|---|---|---|---|---|---|']
  for row in table:
    per_seed = ', '.join(f'{a:.2f} ({s})' for s, a in row.acc_g.items())
    clips = ', '.join('–' if c is None else f'{c:.2f}'
                      for c in row.clip.values())
    paper = '–' if row.paper is None else f'{row.paper:.2f}'
    gap = '–' if row.paper is None else _signed(row.mean - row.paper)
    lines.append(f'| {BLOCKS[row.dataset]} | {_name(row)} | {per_seed} | '
                 f'{row.mean:.2f} | {row.spread:.2f} | {paper} | {gap} | '
                 f'{clips} |')
  lines += ['', '| block | FedHDP − DP-FedAvg, seeds both ran | per seed | '
            'mean | paper |', '|---|---|---|---|---|']
  for gain in gains(table):
    per_seed = ', '.join(f'{_signed(g)} ({s})'
                         for s, g in gain.per_seed.items())
    paper = '–' if gain.paper is None else _signed(gain.paper)
    lines.append(f'| {BLOCKS[gain.dataset]} | {_name(gain)}, seeds '
                 f'{", ".join(map(str, gain.per_seed))} | {per_seed} | '
                 f'{_signed(gain.mean)} | {paper} |')
  measured = costs(table, noise_off)
  if measured:
    lines += ['', '| block | row | Non-Private (mean) | noise off, per seed '
              '| noise off (mean) | as run (mean) | clipping costs | the '
              'noise costs |', '|---|---|---|---|---|---|---|---|']
  for cost in measured:
    per_seed = ', '.join(f'{a:.2f} ({s})' for s, a in cost.clip_only.items())
    lines.append(f'| {BLOCKS[cost.dataset]} | {_name(cost)} | '
                 f'{cost.unclipped:.2f} | {per_seed} | '
                 f'{cost.clip_only_mean:.2f} | {cost.noised:.2f} | '
                 f'{cost.clipping:.2f} | {cost.noise:.2f} |')
  return '\n'.join(lines)
