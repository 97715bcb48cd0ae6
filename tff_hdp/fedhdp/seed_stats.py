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

`markdown_rows` prints the per-row analyses of
docs/results/paper001_rows.md: the Non-Private row clipped as Algorithm 2
clips (`clipped_non_private`), FedHDP's gain at a changed setting
(`setting_gains`), Table 2's personal models and variances against the
paper's cells (`cells`, `variance_ratios`), what sampling a client's few
test images gives the variance (`local_test_sizes`, `sampling_variance`,
`images_needed`), the personal models on every held-out image with their
runs' global model over the rounds (`evaluations`, `paper_cell`), and the
opted-out clients' standard errors (`standard_error`).
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
  """A kept run, the command line of its file, the folder it was read
  from and its file's preset (its `num_clients`, ...; None if it has
  none)."""
  run: paper_tables.Run
  argv: tuple[str, ...]
  folder: str
  preset: Optional[Mapping[str, Any]] = None


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
      found = json.load(f)
    argv, preset = found.get('argv'), found.get('preset')
    mine = [run for run in runs if run.source == source]
    if not isinstance(argv, list) or not all(isinstance(a, str)
                                             for a in argv):
      raise ValueError(f'{path}: no argv (a list of strings)')
    if len(mine) != 1:
      raise ValueError(f'{path}: {len(mine)} runs in one file; its argv '
                       'cannot say which is which')
    out.append(Kept(mine[0], tuple(argv), directory,
                    preset if isinstance(preset, dict) else None))
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


# The per-row analyses (docs/results/paper001_rows.md): the non-private
# row clipped, gains at a changed setting, the global model over the
# rounds, the personal models against the paper's cells, what the local
# test sets' size does to the variances, the personal models on every
# held-out image, and the opted-out clients' standard errors.


def clipped_non_private(table_runs: Sequence[Kept], kept: Sequence[Kept]
                        ) -> list[tuple[Row, Ablation]]:
  """(Non-Private row, DP-FedAvg with only the noise off) of each pair of
  a Table 2 Non-Private row and a noise-off DP-FedAvg setting of `kept`:
  the non-private row clipped as Algorithm 2 clips, beside it unclipped."""
  unclipped = [row for row in rows([k.run for k in table_runs])
               if row.algorithm == 'non_private']
  clipped = [a for a in ablations(table_runs, kept)
             if a.algorithm == 'dp_fedavg' and
             a.setting == ('--noise_multiplier=0',)]
  return [(row, a) for a in clipped for row in unclipped]


@dataclasses.dataclass(frozen=True)
class SettingGain:
  """FedHDP − DP-FedAvg at one changed setting of one folder and block,
  over the seeds both ran, beside Table 2's gain at the same seeds."""
  folder: str
  dataset: str
  r: Optional[float]
  setting: tuple[str, ...]
  per_seed: dict[int, float]
  table: dict[int, float]  # Table 2's FedHDP − DP-FedAvg at those seeds.

  @property
  def mean(self) -> float:
    return statistics.fmean(self.per_seed.values())

  @property
  def table_mean(self) -> float:
    return statistics.fmean(self.table.values())


def setting_gains(found: Sequence[Ablation]) -> list[SettingGain]:
  """`SettingGain` of every setting (`ablations`) that both DP-FedAvg and
  FedHDP ran in one folder and block at a common seed."""
  out = []
  for fedhdp in (a for a in found if a.algorithm == 'fedhdp'):
    for dp in found:
      if (dp.algorithm, dp.folder, dp.dataset, dp.setting) != (
          'dp_fedavg', fedhdp.folder, fedhdp.dataset, fedhdp.setting):
        continue
      seeds = sorted(set(fedhdp.acc_g) & set(dp.acc_g) &
                     set(fedhdp.table.acc_g) & set(dp.table.acc_g))
      if seeds:
        out.append(SettingGain(
            fedhdp.folder, fedhdp.dataset, fedhdp.r, fedhdp.setting,
            {s: fedhdp.acc_g[s] - dp.acc_g[s] for s in seeds},
            {s: fedhdp.table.acc_g[s] - dp.table.acc_g[s] for s in seeds}))
  return out


def evaluations(record: Mapping[str, Any], at: Sequence[int] = (250, 400),
                last: int = 8) -> tuple[dict[int, Optional[float]],
                                        list[float]]:
  """The global model's accuracy (%) in the rounds `at` (None where it was
  not evaluated) and in its `last` evaluations, from the run's history."""
  found = [(h['round'], 100.0 * h['accuracy']) for h in record['history']
           if h.get('accuracy') is not None]
  by_round = dict(found)
  return ({r: by_round.get(r) for r in at},
          [accuracy for _, accuracy in found[-last:]])


@dataclasses.dataclass(frozen=True)
class Cells:
  """One Table 2 row's cells of one metric (e.g. 'acc_l_p'): ours per seed
  and the paper's, each with 100 × the variance across clients (the
  paper's as printed)."""
  dataset: str
  algorithm: str
  r: Optional[float]
  metric: str
  ours: dict[int, float]
  var: dict[int, Optional[float]]
  paper: float
  paper_var: str

  @property
  def gaps(self) -> dict[int, float]:
    return {s: a - self.paper for s, a in self.ours.items()}


def cells(runs: Sequence[paper_tables.Run], metric: str) -> list[Cells]:
  """Each Table 2 row's `metric` over its seeds beside the paper's cell
  (rows where either has none are left out)."""
  out = []
  for paper, records in _by_row(runs):
    ours = {s: r['metrics'].get(metric) for s, r in records.items()}
    if None in ours.values() or paper.values.get(metric) is None:
      continue
    out.append(Cells(paper.dataset, paper.algorithm, paper.r, metric,
                     {s: float(a) for s, a in ours.items()},
                     {s: r['metrics'].get(metric + '_var')
                      for s, r in records.items()},
                     paper.values[metric],
                     paper.printed.get(metric + '_var', '')))
  return out


def variance_ratios(found: Sequence[Cells]) -> list[float]:
  """Our variance over the paper's, for every seed of every cell where
  both have one (the paper's printed to 0.001 or 0.01)."""
  return [v / float(c.paper_var) for c in found for v in c.var.values()
          if v is not None and c.paper_var and float(c.paper_var) > 0]


def local_test_sizes(pool_size: Mapping[Any, int],
                   clients_per_label: int) -> list[int]:
  """Each client's number of local test images when every label's held-out
  images (`pool_size`: label -> count) are split evenly among its
  `clients_per_label` clients, the first ones taking one more
  (`np.array_split`, as `federated_data` splits them)."""
  return [count // clients_per_label +
          (1 if k < count % clients_per_label else 0)
          for count in pool_size.values() for k in range(clients_per_label)]


def sampling_variance(p: float, mean_inverse_size: float) -> float:
  """100 × the variance across clients that sampling a client's test
  images alone gives an accuracy p (a fraction): the mean over clients of
  p(1 − p)/n_k, with `mean_inverse_size` the mean of 1/n_k."""
  return 100.0 * p * (1.0 - p) * mean_inverse_size


def images_needed(p: float, variance: float) -> float:
  """How many test images a client would need for sampling alone to give
  no more than `variance` (100 × the variance, as printed) at accuracy p:
  p(1 − p) / (variance / 100)."""
  return p * (1.0 - p) / (variance / 100.0)


def standard_error(variance: float, clients: int) -> float:
  """The standard error, in points, of a mean over `clients` clients whose
  accuracies vary by `variance` (100 × the variance of the fraction):
  100 √(v / n), v = variance / 100."""
  return 100.0 * math.sqrt(variance / 100.0 / clients)


def paper_cell(reference: Sequence[paper_tables.PaperRow],
               record: Mapping[str, Any]
               ) -> Optional[paper_tables.PaperRow]:
  """The paper's row of a run's setting: Table 2's, else its appendix
  table's (Table 8 on MNIST, where λ varies). The Non-Private baseline has
  no private clients, so only its λ_np is matched."""
  config = record['config']
  lambda_np = float(config['lambda_np'])
  lambda_p = (lambda_np if config['algorithm'] == 'non_private' else
              float(config['lambda_p']))
  for table in (2, None):
    row = paper_tables.find_row(
        reference, dataset=paper_tables.record_dataset(record),
        algorithm=config['algorithm'],
        r=paper_tables.recorded_ratio(config), lambda_p=lambda_p,
        lambda_np=lambda_np, table=table)
    if row is not None:
      return row
  return None


def _range(values: Sequence[float], signed: bool = False) -> str:
  """'a to b': signed, from the largest value to the smallest (as
  `summary`); else from the smallest to the largest. One value alone."""
  if signed:
    first, second = _signed(max(values)), _signed(min(values))
  else:
    first, second = f'{min(values):.2f}', f'{max(values):.2f}'
  return first if first == second else f'{first} to {second}'


def _spread(values: Mapping[int, float]) -> float:
  return max(values.values()) - min(values.values())


def _setting_text(setting: Sequence[str]) -> str:
  return ' '.join(f'`{s}`' for s in setting) if setting else 'as Table 2'


def _clipped_lines(pairs: Sequence[tuple[Row, Ablation]]) -> list[str]:
  if not pairs:
    return []
  lines = ['The Non-Private row clipped as Algorithm 2 clips (DP-FedAvg with '
           'the noise off: every update clipped at the adaptive S^t, no '
           'noise) beside the paper\'s Non-Private cell and our unclipped '
           'row, Acc_g % over seeds:', '',
           '| block | paper | unclipped, mean | mean − paper | spread | '
           'clipped, no noise: block | mean | paper − mean | spread |',
           '|---|---|---|---|---|---|---|---|---|']
  for row, off in pairs:
    lines.append(
        f'| {BLOCKS[row.dataset]} | {_optional(row.paper)} | '
        f'{row.mean:.2f} | {_optional(row.mean - row.paper, True)} | '
        f'{row.spread:.2f} | {BLOCKS[off.dataset]} | {off.mean:.2f} | '
        f'{_optional(row.paper - off.mean, True)} | '
        f'{_spread(off.acc_g):.2f} |')
  return lines


def _gain_lines(found: Sequence[SettingGain]) -> list[str]:
  if not found:
    return []
  lines = ['FedHDP − DP-FedAvg, Acc_g %, at a changed setting over the seeds '
           'both ran, beside Table 2\'s at the same seeds:', '',
           '| folder | block | row | setting | per seed | mean | Table 2, '
           'same seeds |', '|---|---|---|---|---|---|---|']
  for gain in found:
    per_seed = ', '.join(f'{_signed(g)} ({s})'
                         for s, g in gain.per_seed.items())
    lines.append(f'| `{gain.folder}` | {BLOCKS[gain.dataset]} | '
                 f'{_name(gain)} | {_setting_text(gain.setting)} | '
                 f'{per_seed} | {_signed(gain.mean)} | '
                 f'{_signed(gain.table_mean)} |')
  return lines


_CELL_NAMES = {'acc_g_p': 'Acc_g,p', 'acc_g_np': 'Acc_g,np',
               'acc_l_p': 'Acc_l,p', 'acc_l_np': 'Acc_l,np'}


def _cells_lines(runs: Sequence[paper_tables.Run]) -> list[str]:
  """Table 2's personal models against the paper's cells, and every cell's
  variance against the paper's, summed up (tables_fedhdp.py prints each
  cell)."""
  found = cells(runs, 'acc_l_p') + cells(runs, 'acc_l_np')
  if not found:
    return []
  gaps = [g for c in found for g in c.gaps.values()]
  count = sum(len(records) for _, records in _by_row(runs))
  lines = [f'Table 2\'s personal models ({len(gaps)} Acc_l cells of {count} '
           f'runs): ours − paper from {_range(gaps, True)}, ours under the '
           f'paper\'s in {sum(g < 0 for g in gaps)} of {len(gaps)}; the '
           f'paper\'s cells from {_range([c.paper for c in found])}.']
  ratios = variance_ratios([c for m in _CELL_NAMES for c in cells(runs, m)])
  if ratios:
    lines.append(f'Every Table 2 cell with a variance ({len(ratios)}: '
                 f'{", ".join(_CELL_NAMES.values())}): ours {min(ratios):.1f} '
                 f'to {max(ratios):.1f} times the paper\'s.')
  return lines


def _split(entries: Sequence[tuple[Kept, tuple[str, ...]]]
           ) -> Optional[tuple[Mapping[str, int], int]]:
  """The held-out images of each label (`personal_models`' pool_size) and
  the clients of each label (the preset's), from the first run that
  records both; None if none does."""
  for k, _ in entries:
    pools = (k.run.record.get('personal_models') or {}).get('pool_size')
    preset = k.preset or {}
    if pools and preset.get('num_clients') and preset.get('num_classes'):
      return pools, int(preset['num_clients']) // int(preset['num_classes'])
  return None


def _seed_list(values: Mapping[int, Optional[float]], digits: int = 2
               ) -> str:
  return ', '.join(('–' if v is None else f'{v:.{digits}f}') + f' ({s})'
                   for s, v in values.items())


def _sampling_lines(runs: Sequence[paper_tables.Run],
                    entries: Sequence[tuple[Kept, tuple[str, ...]]]
                    ) -> list[str]:
  split = _split(entries)
  found = cells(runs, 'acc_g_p')
  if split is None or not found:
    return []
  pools, per_label = split
  sizes = local_test_sizes(pools, per_label)
  mean_inverse = statistics.fmean(1.0 / n for n in sizes)
  lines = [f'A client\'s local test set: {min(sizes)} to {max(sizes)} images '
           f'(its label\'s {min(pools.values())} to {max(pools.values())} '
           f'held-out images split evenly among the label\'s {per_label} '
           f'clients); the mean of 1/n_k over the {len(sizes)} clients: '
           f'{mean_inverse:.4f}. Sampling its n_k test images alone gives a '
           'client\'s accuracy p the variance p(1 − p)/n_k; beside it, 100 × '
           'the variance across clients measured, ours (per seed) and the '
           'paper\'s:', '',
           '| block | row | p (Acc_g,p) | sampling: 100 × mean p(1 − p)/n_k | '
           'measured: 100 × variance | sampling / measured | paper: p | '
           'paper: 100 × variance | test images a client the paper\'s needs, '
           'p(1 − p) / variance |', '|---|---|---|---|---|---|---|---|---|']
  shares = []
  for c in found:
    sampling = {s: sampling_variance(a / 100.0, mean_inverse)
                for s, a in c.ours.items()}
    share = {s: sampling[s] / c.var[s] if c.var[s] else None
             for s in c.ours}
    shares += [v for v in share.values() if v is not None]
    needs = (images_needed(c.paper / 100.0, float(c.paper_var))
             if c.paper_var and float(c.paper_var) > 0 else None)
    lines.append(
        f'| {BLOCKS[c.dataset]} | {_name(c)} | '
        f'{_seed_list({s: a / 100.0 for s, a in c.ours.items()}, 4)} | '
        f'{_seed_list(sampling)} | {_seed_list(c.var)} | '
        f'{_seed_list(share)} | {c.paper / 100.0:.4f} | '
        f'{c.paper_var or "–"} | {_optional(needs)} |')
  if shares:
    lines += ['', f'Sampling / measured over these {len(shares)} runs: '
              f'{_range(shares)}.']
  return lines


def _personal_line(k: Kept, setting: tuple[str, ...],
                   reference: Sequence[paper_tables.PaperRow]) -> str:
  """One run's row of `_personal_lines`."""
  record, block = k.run.record, k.run.record['personal_models']
  metric = _acc_l_metric(record['config']['algorithm'])
  group = metric.rpartition('_')[2]
  pool, own = block[f'acc_l_pool_{group}'], block[f'acc_l_train_{group}']
  missed = block.get('most_missed') or []
  first = (f'{missed[0][0]} ({missed[0][1]}), {100 * missed[0][2]:.1f}'
           if missed else '–')
  nine = ('–' if len(missed) < 2 else
          f'{100 * min(m[2] for m in missed[1:10]):.1f} to '
          f'{100 * max(m[2] for m in missed[1:10]):.1f}')
  paper = paper_cell(reference, record)
  cell = None if paper is None else paper.values.get(metric)
  ours = record['metrics'].get(metric)
  rounds, recent = evaluations(record, (250, 400, 500), 8)
  swing = ('–' if not recent else f'{min(recent):.2f} to {max(recent):.2f} '
           f'({max(recent) - min(recent):.2f})')
  return (
      f'| {_setting_text(setting)} | {record["config"]["seed"]} | '
      f'{_optional(ours)} | {_optional(pool)} | '
      f'{_optional(None if pool is None else 100 - pool)} | '
      f'{_optional(own)} | '
      f'{block.get("images_holding_90pct_of_misses", "–")} | {first} | '
      f'{nine} | '
      + ('–' if cell is None else f'{cell:.2f} (Table {paper.table})') +
      f' | {_optional(None if None in (cell, ours) else ours - cell, True)}'
      f' | {", ".join(_optional(v) for v in rounds.values())} | {swing} |')


def _personal_lines(entries: Sequence[tuple[Kept, tuple[str, ...]]]
                    ) -> list[str]:
  found = [(k, s) for k, s in entries
           if k.run.record.get('personal_models')]
  if not found:
    return []
  reference = paper_tables.load_reference()
  folders = ', '.join(f'`{f}`' for f in dict.fromkeys(k.folder
                                                      for k, _ in found))
  lines = [f'The runs with `personal_models` ({folders}): the Ditto models '
           'on every held-out image of their client\'s label and on their '
           'own training images, the test images they miss most (Acc_l: '
           'the opted-out clients\' for Non-Private, else the private '
           'ones\'), and the global model, Acc_g %, in rounds 250, 400 and '
           '500 and over its last 8 evaluations:', '',
           '| setting | seed | Acc_l | every held-out image | missed, % of '
           'them | own training images | test images holding 90% of the '
           'misses | most missed: test image (label), % of its label\'s '
           'models | the next nine, % | paper (table) | Acc_l − paper | '
           'Acc_g in rounds 250, 400, 500 | last 8: lowest to highest '
           '(span) |', '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
  lines += [_personal_line(k, s, reference) for k, s in found]
  # A mean of 100 only if every client's is.
  fitted = sum(k.run.record['personal_models'].get(
      'acc_l_train_' + _acc_l_metric(
          k.run.record['config']['algorithm']).rpartition('_')[2]) == 100.0
               for k, _ in found)
  return lines + ['', f'Every client\'s Ditto model scores 100% on its own '
                  f'training images in {fitted} of these {len(found)} runs.']


def _opted_out_lines(entries: Sequence[tuple[Kept, tuple[str, ...]]]
                     ) -> list[str]:
  groups = collections.defaultdict(dict)
  for k, setting in entries:
    record = k.run.record
    if record['config']['algorithm'] != 'non_private' and record[
        'metrics'].get('acc_l_np_var') is not None:
      groups[(k.folder, _key(record), setting)][
          int(record['config']['seed'])] = record
  if not groups:
    return []
  reference = paper_tables.load_reference()
  lines = ['The opted-out clients\' personal models (Acc_l,np %) in the '
           'private rows, and the standard error of their mean over the n '
           'opted-out clients, 100 √(v/n), v the variance across them of the '
           'accuracy as a fraction (per seed):', '',
           '| folder | block | row | setting | n | Acc_l,np | v | standard '
           'error | paper | (paper − ours) / standard error |',
           '|---|---|---|---|---|---|---|---|---|---|']
  for (folder, (dataset, algorithm, r), setting), records in groups.items():
    records = dict(sorted(records.items()))
    # The seeds' runs share their opted-out clients' count, else none is
    # printed.
    counts = {int(rec.get('setup', {}).get('num_opted_out') or 0)
              for rec in records.values()}
    clients = counts.pop() if len(counts) == 1 else 0
    var = {s: rec['metrics']['acc_l_np_var'] for s, rec in records.items()}
    error = {s: standard_error(v, clients) if clients else None
             for s, v in var.items()}
    paper = paper_cell(reference, next(iter(records.values())))
    cell = None if paper is None else paper.values.get('acc_l_np')
    ours = {s: rec['metrics']['acc_l_np'] for s, rec in records.items()}
    ratio = {s: None if not error[s] or cell is None else
             (cell - ours[s]) / error[s] for s in ours}
    lines.append(
        f'| `{folder}` | {BLOCKS[dataset]} | {_label(algorithm, r)} | '
        f'{_setting_text(setting)} | {clients or "–"} | '
        f'{_seed_list(ours)} | '
        f'{_seed_list({s: v / 100 for s, v in var.items()}, 4)} | '
        f'{_seed_list(error)} | {_optional(cell)} | {_seed_list(ratio)} |')
  return lines


def _ordered(entries: Sequence[tuple[Kept, tuple[str, ...]]]
             ) -> list[tuple[Kept, tuple[str, ...]]]:
  """`entries` by folder (in their order), then in the paper's order of
  blocks and algorithms, then by setting and seed."""
  folders = list(dict.fromkeys(k.folder for k, _ in entries))
  order = {a: i for i, a in enumerate(LABELS)}

  def key(entry):
    k, setting = entry
    dataset, algorithm, r = _key(k.run.record)
    return (folders.index(k.folder), list(BLOCKS).index(dataset),
            order[algorithm], r or 0, setting,
            int(k.run.record['config']['seed']))

  return sorted(entries, key=key)


def markdown_rows(table_runs: Sequence[Kept], kept: Sequence[Kept]) -> str:
  """The per-row analyses of `table_runs` (Table 2) and `kept` (its
  ablations), as Markdown (docs/results/paper001_rows.md)."""
  reference = paper_tables.load_reference()
  table = [k for k in table_runs if paper_tables.match_record(
      reference, k.run.record, table=2) is not None]
  entries = _ordered(settings(table_runs, table + list(kept)))
  runs = [k.run for k in table]
  parts = [
      _clipped_lines(clipped_non_private(table_runs, kept)),
      _gain_lines(setting_gains(ablations(table_runs, kept))),
      _cells_lines(runs), _sampling_lines(runs, entries),
      _personal_lines(entries), _opted_out_lines(entries)]
  return '\n\n'.join('\n'.join(part) for part in parts if part)
