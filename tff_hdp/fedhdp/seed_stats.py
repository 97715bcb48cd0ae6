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
  seed and on average, beside the paper's;
- `costs`: what clipping and the noise cost a row that also ran with the
  noise off;
- `ablations`: runs of a Table 2 row with some of its flags changed (the
  setting is read from each file's `argv`), each setting over its seeds
  beside the Table 2 row at the same seeds and the paper's cell, and
  `noise_costs`: what the noise costs at a setting that also ran with the
  noise off.

`markdown` prints the first three, `markdown_ablations` a summary of
Table 2 (`summary`) and the ablations; run_scripts/stats_fedhdp.py is the
command, and docs/results/paper001.md holds its output (tests check they
agree).
"""

import collections
import dataclasses
import json
import math
import os
import statistics
from typing import Any, Mapping, Optional, Sequence

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


def _by_row(runs: Sequence[paper_tables.Run]
            ) -> list[tuple[paper_tables.PaperRow, dict[int, Mapping]]]:
  """The Table 2 cell each run matches (with Ditto) and that row's records
  by seed, in the paper's order of blocks and algorithms."""
  reference = paper_tables.load_reference()
  found = {}
  for run in runs:
    row = paper_tables.match_record(reference, run.record, table=2)
    if row is None:
      continue
    key = (row.dataset, row.algorithm, row.r, row.values['acc_g'])
    records = found.setdefault(key, (row, {}))[1]
    seed = int(run.record['config']['seed'])
    if seed in records:
      raise ValueError(f'{run.source}: a second run of {key[:3]} at seed '
                       f'{seed}')
    records[seed] = run.record
  order = {a: i for i, a in enumerate(LABELS)}
  keys = sorted(found, key=lambda k: (list(BLOCKS).index(k[0]), order[k[1]],
                                      k[2] or 0))
  return [(found[k][0], dict(sorted(found[k][1].items()))) for k in keys]


def rows(runs: Sequence[paper_tables.Run]) -> list[Row]:
  """Table 2's rows (runs matching a Table 2 cell, with Ditto), each over
  its seeds, in the paper's order of blocks and algorithms."""
  return [Row(paper.dataset, paper.algorithm, paper.r,
              {s: float(r['metrics']['acc_g']) for s, r in records.items()},
              {s: _mean_clip(r) for s, r in records.items()},
              paper.values['acc_g'])
          for paper, records in _by_row(runs)]


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
    r = paper_tables.recorded_ratio(config)
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


def _label(algorithm: str, r: Optional[float]) -> str:
  return LABELS[algorithm] + (f' (r = {r:g})' if algorithm == 'fedhdp' and
                              r is not None else '')


def _name(row_or_gain) -> str:
  return _label(getattr(row_or_gain, 'algorithm', 'fedhdp'), row_or_gain.r)


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


# Ablations: runs of a Table 2 row with some of its flags changed, kept in
# folders of their own (docs/runs/paper_scale_fixed_clip, ...).

# Flags that do not change what a run computes, or that every run varies.
_IGNORED_FLAGS = frozenset({'seed', 'output_dir', 'progress', 'noprogress'})
# The settings every Table 2 run shares, as `setting_line` prints them.
SETTING_KEYS = ('rounds', 'clients_per_round', 'sampling_rate',
                'poisson_sampling', 'denominators', 'model', 'local_epochs',
                'batch_size', 'learning_rate', 'personal_learning_rate',
                'lr_decay_factor', 'lr_decay_rounds', 'initial_clip',
                'clip_learning_rate', 'target_quantile', 'noise_multiplier',
                'delta', 'optout_fraction', 'lambda_p', 'lambda_np')


@dataclasses.dataclass(frozen=True)
class Kept:
  """A kept run, the command line of its file and the folder it was read
  from."""
  run: paper_tables.Run
  argv: tuple[str, ...]
  folder: str


def load_kept(directory: str) -> list[Kept]:
  """Every run under `directory` with its file's `argv`.

  Raises:
    ValueError: One line naming the file if it is not a results file, has
      no argv, or holds more than one run (its argv would not say which).
  """
  out = []
  runs = paper_tables.load_runs(directory)
  for source in sorted({run.source for run in runs}):
    path = os.path.join(directory, source)
    with open(path, encoding='utf-8') as f:
      argv = json.load(f).get('argv')
    mine = [run for run in runs if run.source == source]
    if not isinstance(argv, list) or not all(isinstance(a, str)
                                             for a in argv):
      raise ValueError(f'{path}: no argv (a list of strings)')
    if len(mine) != 1:
      raise ValueError(f'{path}: {len(mine)} runs in one file; its argv '
                       'cannot say which is which')
    out.append(Kept(mine[0], tuple(argv), directory))
  return out


def flags_of(argv: Sequence[str]) -> dict[str, str]:
  """The flags of a command line, the last of a repeated flag winning,
  without those that change nothing a run computes (`_IGNORED_FLAGS`)."""
  flags = {}
  for arg in argv:
    if arg.startswith('--'):
      name, _, value = arg[2:].partition('=')
      flags[name] = value
  return {k: v for k, v in flags.items() if k not in _IGNORED_FLAGS}


def _key(record) -> tuple[str, str, Optional[float]]:
  config = record['config']
  return (paper_tables.record_dataset(record), config['algorithm'],
          paper_tables.recorded_ratio(config))


@dataclasses.dataclass(frozen=True)
class Ablation:
  """One changed setting of one Table 2 row, over the seeds it ran.

  `setting` holds the flags whose value differs from the Table 2 runs'
  command (`--name=value`, sorted); `acc_l` is the personal models'
  accuracy of the private clients (Acc_l,p), or of the opted-out ones
  (Acc_l,np) for Non-Private.
  """
  folder: str
  dataset: str
  algorithm: str
  r: Optional[float]
  setting: tuple[str, ...]
  acc_g: dict[int, float]
  acc_l: dict[int, Optional[float]]
  clip: dict[int, Optional[float]]  # Mean S^t.
  clip_max: dict[int, Optional[float]]  # Largest S^t.
  table: Row  # The Table 2 row it changes.
  paper_acc_l: Optional[float]

  @property
  def mean(self) -> float:
    return statistics.fmean(self.acc_g.values())

  @property
  def acc_l_mean(self) -> Optional[float]:
    values = list(self.acc_l.values())
    return None if None in values else statistics.fmean(values)

  @property
  def table_mean(self) -> Optional[float]:
    """The Table 2 row's mean over the seeds this setting ran (None if it
    ran none of them)."""
    same = [self.table.acc_g[s] for s in self.acc_g if s in self.table.acc_g]
    return statistics.fmean(same) if same else None

  @property
  def noise_off(self) -> bool:
    return any(s.startswith('--noise_multiplier=') and
               float(s.partition('=')[2]) == 0 for s in self.setting)


def _acc_l_metric(algorithm: str) -> str:
  return 'acc_l_np' if algorithm == 'non_private' else 'acc_l_p'


def _max_clip(record) -> Optional[float]:
  clips = [h['clip_norm'] for h in record['history'] if 'clip_norm' in h]
  return max(clips) if clips else None


def settings(table_runs: Sequence[Kept], kept: Sequence[Kept]
             ) -> list[tuple[Kept, tuple[str, ...]]]:
  """Each run of `kept` with its setting: what its command changed from
  the command of the Table 2 runs (`table_runs`) of the same block,
  algorithm and r (`--name=value`, sorted).

  Raises:
    ValueError: If a run's row has no Table 2 run.
  """
  table = {(row.dataset, row.algorithm, row.r)
           for row in rows([k.run for k in table_runs])}
  baseline = {}
  for k in table_runs:
    if _key(k.run.record) in table:
      baseline.setdefault(_key(k.run.record), flags_of(k.argv))
  out = []
  for k in kept:
    key = _key(k.run.record)
    if key not in table:
      raise ValueError(f'{os.path.join(k.folder, k.run.source)}: no Table 2 '
                       f'run of {key[0]} {key[1]}'
                       + ('' if key[2] is None else f' r={key[2]:g}'))
    flags, base = flags_of(k.argv), baseline[key]
    out.append((k, tuple(sorted(
        [f'--{n}={v}' if v else f'--{n}' for n, v in flags.items()
         if base.get(n) != v] +
        [f'--{n} (not given)' for n in base if n not in flags]))))
  return out


def ablations(table_runs: Sequence[Kept], kept: Sequence[Kept]
              ) -> list[Ablation]:
  """The runs of `kept` grouped by folder, Table 2 row and setting
  (`settings`), in the order of their folders and then of the paper's
  blocks and algorithms.

  Raises:
    ValueError: If a run's row has no Table 2 run, or a setting ran twice
      at one seed.
  """
  table = {(row.dataset, row.algorithm, row.r): row
           for row in rows([k.run for k in table_runs])}
  reference = [row for row in paper_tables.load_reference()
               if row.table == 2]
  found = collections.defaultdict(dict)
  for k, setting in settings(table_runs, kept):
    key = _key(k.run.record)
    seed = int(k.run.record['config']['seed'])
    group = found[(k.folder, key, setting)]
    if seed in group:
      raise ValueError(f'{os.path.join(k.folder, k.run.source)}: a second '
                       f'run of {" ".join(setting)} at seed {seed}')
    group[seed] = k.run.record
  folders = list(dict.fromkeys(k.folder for k in kept))
  order = {a: i for i, a in enumerate(LABELS)}
  out = []
  for (folder, key, setting), records in sorted(
      found.items(), key=lambda kv: (
          folders.index(kv[0][0]), list(BLOCKS).index(kv[0][1][0]),
          order[kv[0][1][1]], kv[0][1][2] or 0, kv[0][2])):
    dataset, algorithm, r = key
    seeds = sorted(records)
    metric = _acc_l_metric(algorithm)
    paper = [row for row in reference if row.dataset == dataset and
             row.algorithm == algorithm and
             (r is None or row.r is None or math.isclose(row.r, r))]
    out.append(Ablation(
        folder, dataset, algorithm, r, setting,
        {s: float(records[s]['metrics']['acc_g']) for s in seeds},
        {s: records[s]['metrics'].get(metric) for s in seeds},
        {s: _mean_clip(records[s]) for s in seeds},
        {s: _max_clip(records[s]) for s in seeds}, table[key],
        paper[0].values[metric] if paper else None))
  return out


@dataclasses.dataclass(frozen=True)
class NoiseCost:
  """What the noise costs at one setting: the runs with the noise off
  (`--noise_multiplier=0`) against those with the same setting and the
  noise on (a Table 2 row when the rest of the setting is empty)."""
  off: Ablation
  on: dict[int, float]  # Per seed, Acc_g with the noise on.

  @property
  def on_mean(self) -> float:
    return statistics.fmean(self.on.values())

  @property
  def cost(self) -> float:
    return self.off.mean - self.on_mean


def noise_costs(found: Sequence[Ablation]) -> list[NoiseCost]:
  out = []
  for off in found:
    if not off.noise_off:
      continue
    rest = tuple(s for s in off.setting
                 if not s.startswith('--noise_multiplier='))
    key = (off.dataset, off.algorithm, off.r)
    if not rest:
      out.append(NoiseCost(off, dict(off.table.acc_g)))
      continue
    on = {}
    for other in found:
      if (other.dataset, other.algorithm, other.r) == key and (
          other.setting == rest):
        on.update(other.acc_g)
    if on:
      out.append(NoiseCost(off, dict(sorted(on.items()))))
  return out


def _format(value: Any) -> str:
  if isinstance(value, bool):
    return str(value).lower()
  if isinstance(value, float):
    return f'{value:g}'
  return str(value)


def setting_line(table_runs: Sequence[Kept]) -> str:
  """The configuration every Table 2 run of `table_runs` shares
  (`SETTING_KEYS`)."""
  reference = paper_tables.load_reference()
  table_runs = [k for k in table_runs if paper_tables.match_record(
      reference, k.run.record, table=2) is not None]
  shared = []
  for key in SETTING_KEYS:
    values = {json.dumps(k.run.record['config'].get(key)) for k in table_runs}
    if len(values) == 1:
      shared.append(
          f'{key}={_format(table_runs[0].run.record["config"].get(key))}')
  return (f'Every Table 2 run ({len(table_runs)}) has ' + ', '.join(shared)
          + '; a setting below is what a run\'s command changed from its '
          'Table 2 row\'s.')


def summary(table: Sequence[Row]) -> list[str]:
  """Lines summing up Table 2's rows: the private runs' distance from the
  paper's cells, each block's means over the seeds FedHDP and DP-FedAvg
  both ran, and what privacy costs in the paper's own cells."""
  gaps = [a - row.paper for row in table
          if row.algorithm != 'non_private' and row.paper is not None
          for a in row.acc_g.values()]
  lines = []
  if gaps:
    lines.append(f'Table 2\'s private runs ({len(gaps)}): Acc_g − paper from '
                 f'{_signed(max(gaps))} to {_signed(min(gaps))}, mean '
                 f'{_signed(statistics.fmean(gaps))}.')
  lines += ['', '| block | row | seeds both ran | DP-FedAvg, mean | the '
            'row, mean | paper: Non-Private − DP-FedAvg |',
            '|---|---|---|---|---|---|']
  for gain in gains(table):
    dp, fedhdp = (
        [r for r in table if r.dataset == gain.dataset and
         r.algorithm == name and (name != 'fedhdp' or r.r == gain.r)][0]
        for name in ('dp_fedavg', 'fedhdp'))
    seeds = list(gain.per_seed)
    private = [r for r in table if r.dataset == gain.dataset and
               r.algorithm == 'non_private']
    cost = (None if not private or private[0].paper is None or
            dp.paper is None else private[0].paper - dp.paper)
    lines.append(
        f'| {BLOCKS[gain.dataset]} | {_name(fedhdp)} | '
        f'{", ".join(map(str, seeds))} | '
        f'{statistics.fmean(dp.acc_g[s] for s in seeds):.2f} | '
        f'{statistics.fmean(fedhdp.acc_g[s] for s in seeds):.2f} | '
        f'{_optional(cost)} |')
  return lines


def _per_seed(values: Mapping[int, Optional[float]]) -> str:
  return ', '.join(('–' if v is None else f'{v:.2f}') + f' ({s})'
                   for s, v in values.items())


def _optional(value: Optional[float], signed: bool = False) -> str:
  if value is None:
    return '–'
  return _signed(value) if signed else f'{value:.2f}'


def markdown_ablations(table_runs: Sequence[Kept],
                       kept: Sequence[Kept]) -> str:
  """The ablations of `kept`, as Markdown: a table per folder, then what
  the noise costs wherever a setting ran with the noise off."""
  found = ablations(table_runs, kept)
  lines = summary(rows([k.run for k in table_runs]))
  lines += ['', setting_line(table_runs)]
  for folder in dict.fromkeys(a.folder for a in found):
    lines += ['', f'`{folder}`:', '',
              '| block | row | setting | Acc_g % per seed | mean | Table 2, '
              'same seeds | mean − paper | Acc_l % per seed | Acc_l mean − '
              'paper | mean S^t per seed | largest S^t per seed |',
              '|---|---|---|---|---|---|---|---|---|---|---|']
    for a in (a for a in found if a.folder == folder):
      setting = (' '.join(f'`{s}`' for s in a.setting) if a.setting else
                 'as Table 2')
      table_mean = a.table_mean
      paper_gap = (None if a.table.paper is None else a.mean - a.table.paper)
      acc_l_gap = (None if a.acc_l_mean is None or a.paper_acc_l is None
                   else a.acc_l_mean - a.paper_acc_l)
      lines.append(
          f'| {BLOCKS[a.dataset]} | {_name(a)} | {setting} | '
          f'{_per_seed(a.acc_g)} | {a.mean:.2f} | {_optional(table_mean)} | '
          f'{_optional(paper_gap, True)} | {_per_seed(a.acc_l)} | '
          f'{_optional(acc_l_gap, True)} | {_per_seed(a.clip)} | '
          f'{_per_seed(a.clip_max)} |')
  costs_found = noise_costs(found)
  if costs_found:
    lines += ['', '| block | row | setting, the noise on | noise on, per seed '
              '| mean | noise off, per seed | mean | the noise costs |',
              '|---|---|---|---|---|---|---|---|']
  for cost in costs_found:
    rest = [s for s in cost.off.setting
            if not s.startswith('--noise_multiplier=')]
    setting = ' '.join(f'`{s}`' for s in rest) if rest else 'as Table 2'
    lines.append(f'| {BLOCKS[cost.off.dataset]} | {_name(cost.off)} | '
                 f'{setting} | {_per_seed(cost.on)} | {cost.on_mean:.2f} | '
                 f'{_per_seed(cost.off.acc_g)} | {cost.off.mean:.2f} | '
                 f'{cost.cost:.2f} |')
  return '\n'.join(lines)
