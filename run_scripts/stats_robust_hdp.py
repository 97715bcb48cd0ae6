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
"""Paper 003's runs at the authors' scale, from kept runs: every accuracy,
noise power, difference and ratio the full-scale pages state.

    python run_scripts/stats_robust_hdp.py \
        --results_dirs=docs/runs/paper_scale_robust,docs/runs/paper_scale_robust_clip_only

Reads every `results.json` under each of --results_dirs (recursively; runs
of `run_robust_hdp.py`) and prints, as Markdown:

- one row per rule and run: the clients' mean local test accuracy (std
  over clients), the mean, lowest and highest of its last 10 evaluations
  and their spread (the last round's cell is one draw among them), the
  noise power of the aggregate (`table_rows.run_row`'s), what the server is
  told, the ε the clients achieved and the run's wall time;
- per run (a distribution, seed and number of rounds; clip-only runs
  apart), each rule against the run's first rule in the registry's order
  (Robust-HDP when it ran): the difference of accuracy and of the last-10
  mean, and the ratio of noise powers;
- each rule run at more than one seed: its accuracy per seed and mean.

With --table2 it prints instead paper 003's Table 2 as the runs measured
it (`run_robust_hdp.py --calibration_rounds=200`, a few rounds each): per
rule and distribution the mean over the recorded rounds of the aggregate's
noise power, beside the paper's cell; Robust-HDP against the Oracle in
percent; and the paper's cells over ours. (`table2_robust_hdp.py` prints
these rows to two decimals under the analytic ones, which take minutes.)

docs/results/paper003_full_scale.md and paper003_fmnist.md hold its outputs;
tests/test_prose_numbers.py checks that they do, and that their text
states no number these blocks do not print. Bad input is refused with one
line and exit status 2. TensorFlow-free.
"""

import collections
import json
import os
import statistics
from typing import Any, Mapping, Sequence

# pylint: disable=g-import-not-at-top,wrong-import-position
from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
from tff_hdp.robust_hdp import paper_tables
from tff_hdp.robust_hdp import rule_registry
# Imports the rules, which registers them.
from tff_hdp.robust_hdp import table_rows

_RESULTS_DIRS = flags.DEFINE_list(
    'results_dirs', None,
    'Directories searched recursively for the results.json of '
    'run_robust_hdp.py runs.')
_TABLE2 = flags.DEFINE_bool(
    'table2', False,
    'Print instead paper 003\'s Table 2 as the runs measured it: each '
    'rule\'s noise power per distribution, the mean over the rounds a run '
    'recorded, beside the paper\'s cell; Robust-HDP against the Oracle; '
    'the paper\'s cell over ours.')

LATE_EVALUATIONS = 10
_KEYS = ('config', 'metrics', 'history', 'clients')


def load(directory: str) -> list[tuple[str, Mapping[str, Any]]]:
  """(folder, record) of every run under `directory`, in path order.

  Raises:
    ValueError: One line naming the file if one is not a results file of
      run_robust_hdp.py or names a rule that is not registered.
  """
  out = []
  for root, dirs, files in sorted(os.walk(directory)):
    dirs.sort()
    if 'results.json' not in files:
      continue
    path = os.path.join(root, 'results.json')
    try:
      with open(path, encoding='utf-8') as f:
        content = json.load(f)
      records = content.get('runs')
    except (OSError, ValueError, AttributeError) as e:
      raise ValueError(f'{path}: not a results file ({e})') from None
    if not isinstance(records, list):
      raise ValueError(f'{path}: expected an object with a "runs" list')
    for record in records:
      missing = [k for k in _KEYS if k not in record]
      if missing:
        raise ValueError(f'{path}: a run lacks {", ".join(missing)}')
      algorithm = record['config'].get('algorithm')
      if algorithm not in rule_registry.names():
        raise ValueError(f'{path}: {algorithm!r} is not a Robust-HDP rule '
                         f'({", ".join(rule_registry.names())})')
      # The file's provenance (commit, CPU, matmul peak), where recorded.
      out.append((directory, dict(record,
                                  provenance=content.get('provenance'))))
  return out


def _run(record) -> tuple[str, str, int, int, bool]:
  config = record['config']
  return (record.get('dataset', ''), config['distribution'],
          int(config['seed']), int(config['rounds']),
          bool(config.get('clip_only')))


def _run_name(run) -> str:
  dataset, distribution, seed, rounds, clip_only = run
  return (f'{dataset} {distribution}, seed {seed}, {rounds} rounds' +
          (', noise off' if clip_only else ''))


def late(record, last: int = LATE_EVALUATIONS):
  """(mean, lowest, highest, first round, last round) of the accuracy over
  the run's last `last` evaluations, or None if it has none."""
  points = [(h['round'], h['accuracy']) for h in record['history']
            if h.get('accuracy') is not None][-last:]
  if not points:
    return None
  values = [v for _, v in points]
  return (statistics.fmean(values), min(values), max(values), points[0][0],
          points[-1][0])


def _achieved(record) -> str:
  if record['config'].get('clip_only'):
    return '– (noise off)'
  achieved = [c['achieved_epsilon'] for c in record['clients']
              if c.get('achieved_epsilon') is not None]
  if not achieved:
    return 'none'
  low, high = min(achieved), max(achieved)
  return (f'{low:.2f}' if f'{low:.2f}' == f'{high:.2f}' else
          f'{low:.2f} to {high:.2f}')


def _sorted(found):
  """By folder (in the order given), run, then the registry's rule order."""
  folders = list(dict.fromkeys(folder for folder, _ in found))
  return sorted(found, key=lambda item: (
      folders.index(item[0]), _run(item[1]),
      rule_registry.names().index(item[1]['config']['algorithm'])))


def runs_table(found: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
  """One row per rule and run."""
  lines = ['| folder | run | rule | accuracy % (std over clients) | last 10 '
           'evaluations: mean (lowest to highest) | their spread | noise '
           'power | server knows | ε achieved | wall | commit, cores, matmul '
           'peak |', '|---|---|---|---|---|---|---|---|---|---|---|']
  for folder, record in _sorted(found):
    m = record['metrics']
    evaluations = late(record)
    if evaluations is None:
      last10 = spread = '–'
    else:
      mean, low, high, first, final = evaluations
      last10 = (f'{mean:.1f} ({low:.1f} to {high:.1f}), rounds {first} to '
                f'{final}')
      spread = f'{high - low:.1f}'
    power = ('–' if m.get('noise_power') is None else
             f"{m['noise_power']:.4g}")
    rule = rule_registry.get(record['config']['algorithm'])
    seconds = record.get('wall_clock_seconds')
    wall = ('–' if seconds is None else
            f'{seconds:,.0f} s ({seconds / 60:.1f} min)')
    lines.append(
        f'| `{folder}` | {_run_name(_run(record))} | '
        f'{table_rows.name(record["config"])} | {m["accuracy"]:.2f} '
        f'({m["accuracy_std"]:.2f}) | {last10} | {spread} | {power} | '
        f'{rule.server_knows} | {_achieved(record)} | {wall} | '
        f'{_provenance(record)} |')
  return lines


def _provenance(record) -> str:
  """The commit, cores and matmul peak a run's file records, or '–'."""
  provenance = record.get('provenance') or {}
  parts = []
  if provenance.get('commit'):
    parts.append(provenance['commit'][:7])
  if provenance.get('cores'):
    parts.append(f"{provenance['cores']} core"
                 + 's' * (provenance['cores'] != 1))
  if provenance.get('matmul_peak_gflops'):
    parts.append(f"{provenance['matmul_peak_gflops']:.1f} GFLOP/s")
  return ', '.join(parts) or '–'


def _signed(x: float) -> str:
  return f'{x:+.2f}'.replace('-', '−')


def against_first_rule(found) -> list[str]:
  """Per run of several rules, each rule against the first one."""
  by_run = collections.defaultdict(dict)
  for _, record in found:
    algorithm = record['config']['algorithm']
    if algorithm in by_run[_run(record)]:
      raise ValueError(f'{_run_name(_run(record))}: {algorithm} ran twice')
    by_run[_run(record)][algorithm] = record
  lines = ['| run, against its first rule | rule | accuracy − the first '
           'rule\'s | last-10 mean − the first rule\'s | noise power ÷ the '
           'first rule\'s |', '|---|---|---|---|---|']
  for run, records in sorted(by_run.items()):
    if len(records) < 2:
      continue
    names = [n for n in rule_registry.names() if n in records]
    first = records[names[0]]
    first_late = late(first)
    first_power = first['metrics'].get('noise_power')
    against = (f'{_run_name(run)}; against '
               f'{table_rows.name(first["config"])}')
    for name in names[1:]:
      record = records[name]
      own_late = late(record)
      power = record['metrics'].get('noise_power')
      lines.append(
          f'| {against} | {table_rows.name(record["config"])} | '
          f'{_signed(record["metrics"]["accuracy"] - first["metrics"]["accuracy"])} | '
          + ('–' if own_late is None or first_late is None else
             _signed(own_late[0] - first_late[0])) + ' | ' +
          ('–' if power is None or not first_power else
           f'{power / first_power:.2f}') + ' |')
  return lines


def over_seeds(found) -> list[str]:
  """Each rule run at several seeds of one setting: accuracy per seed and
  mean."""
  by_rule = collections.defaultdict(dict)
  for _, record in found:
    dataset, distribution, seed, rounds, clip_only = _run(record)
    by_rule[(dataset, distribution, rounds, clip_only,
             record['config']['algorithm'])][seed] = record
  lines = []
  for key, records in sorted(by_rule.items()):
    if len(records) < 2:
      continue
    if not lines:
      lines = ['| run | rule | accuracy % per seed | mean | last-10 mean per '
               'seed |', '|---|---|---|---|---|']
    dataset, distribution, rounds, clip_only, algorithm = key
    seeds = sorted(records)
    name = (f'{dataset} {distribution}, {rounds} rounds' +
            (', noise off' if clip_only else ''))
    per_seed = ', '.join(f'{records[s]["metrics"]["accuracy"]:.2f} ({s})'
                         for s in seeds)
    mean = statistics.fmean(records[s]['metrics']['accuracy']
                            for s in seeds)
    lates = ', '.join(
        ('–' if late(records[s]) is None else
         f'{late(records[s])[0]:.1f}') + f' ({s})' for s in seeds)
    lines.append(f'| {name} | {table_rows.name(records[seeds[0]]["config"])}'
                 f' | {per_seed} | {mean:.2f} | {lates} |')
  return lines


def table2(found) -> str:
  """Table 2 as measured: per rule and distribution, the mean over a run's
  rounds of its aggregate's noise power, the paper's cell in parentheses;
  then Robust-HDP over the Oracle and the paper's cells over ours."""
  measured = collections.defaultdict(dict)
  for _, record in found:
    powers = [h['noise_power'] for h in record['history']
              if h.get('noise_power') is not None]
    algorithm = record['config']['algorithm']
    distribution = record['config']['distribution']
    if not powers:
      continue
    if distribution in measured[algorithm]:
      raise ValueError(f'{algorithm} ran twice on {distribution}')
    measured[algorithm][distribution] = statistics.fmean(powers)
  if not measured:
    raise ValueError('no run records its noise power a round')
  paper = paper_tables.load_reference()
  distributions = sorted({d for cells in measured.values() for d in cells},
                         key=lambda d: int(d[4:]) if d[4:].isdigit() else 0)
  rules = [n for n in rule_registry.names() if n in measured]
  lines = ['| rule, measured (paper) | ' + ' | '.join(
      d.capitalize() for d in distributions) + ' |',
           '|---|' + '---|' * len(distributions)]

  def row(name, cell):
    return f'| {name} | ' + ' | '.join(cell(d) for d in distributions) + ' |'

  for rule in rules:
    cells = measured[rule]
    lines.append(row(rule_registry.get(rule).label, lambda d, c=cells, r=rule: (
        '–' if d not in c else f'{c[d]:.4g}' + (
            f' ({paper[r][d]:.2f})' if d in paper.get(r, {}) else ''))))
  if 'robust_hdp' in measured and 'oracle' in measured:
    r, o = measured['robust_hdp'], measured['oracle']
    lines.append(row('Robust-HDP over the Oracle\'s', lambda d: (
        '–' if d not in r or d not in o else
        f'{100 * (r[d] / o[d] - 1):+.3f}%')))
  for rule in rules:
    cells = measured[rule]
    lines.append(row(f'paper ÷ ours, {rule_registry.get(rule).label}',
                     lambda d, c=cells, r=rule: (
                         '–' if d not in c or d not in paper.get(r, {}) else
                         f'{paper[r][d] / c[d]:.2f}')))
  return '\n'.join(lines)


def markdown(found) -> str:
  lines = runs_table(found)
  compared = against_first_rule(found)
  if len(compared) > 2:
    lines += [''] + compared
  seeds = over_seeds(found)
  if seeds:
    lines += [''] + seeds
  return '\n'.join(lines)


def main(argv: Sequence[str]) -> None:
  cli.check_no_arguments(argv)
  cli.check(bool(_RESULTS_DIRS.value), '--results_dirs is required')
  found = []
  for directory in _RESULTS_DIRS.value:
    cli.check(os.path.isdir(directory),
              f'--results_dirs: {directory} is not a directory')
  try:
    for directory in _RESULTS_DIRS.value:
      runs = load(directory)
      cli.check(bool(runs), f'--results_dirs: no results.json under '
                f'{directory}')
      found += runs
    print(table2(found) if _TABLE2.value else markdown(found))
  except ValueError as e:
    raise cli.UsageError(str(e)) from None


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
