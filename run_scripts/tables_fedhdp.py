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
"""Tabulates our runs next to paper 001's published numbers.

    python run_scripts/tables_fedhdp.py --results_dir=results
    python run_scripts/tables_fedhdp.py --results_dir=results/table8 --table=8

Reads every `results.json` under --results_dir (recursively; written by
`run_fedhdp.py` or `sweep_fedhdp.py`) and writes, per dataset, a table in the
papers' layout (Algorithm | hyperparam. | Acc_g% | Acc_g,p% | Acc_g,np% |
Delta_g% | Acc_l,p% | Acc_l,np% | Delta_l% | epsilon | paper table) whose
cells read `ours / paper [ours - paper]`: the paper's row is the one with the
same dataset, algorithm, r and lambdas in
`tff_hdp/fedhdp/reference/paper001_tables.csv` (see `tff_hdp.fedhdp.paper_tables`), and
our epsilon of each private group is set against the caption's epsilon. A run
the paper does not report (e.g. the offline digits dataset) keeps only our
numbers.

Under each Markdown table, the adaptive clip norm S^t of each private run
over its rounds (mean, largest, last): a round's noise is z S^t.

Writes to --output_dir `comparison.md`, `comparison.tex` and `comparison.csv`
(`comparison_table<N>.*` with --table; the CSV has separate columns for ours,
the paper's and the difference of every metric and variance) and prints the
Markdown. Rows are sorted (dataset, lambdas, algorithm, r, seed, file), so
identical results directories give byte-identical tables. Bad input is
refused with one line and exit status 2 before anything is written.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
import csv
import io
from typing import Any, Optional, Sequence

from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import output_dirs
from tff_hdp.fedhdp import paper_tables
from tff_hdp import tables
from tff_hdp.fedhdp import table_rows

_RESULTS_DIR = flags.DEFINE_string(
    'results_dir', None, 'Directory searched recursively for results.json.')
_TABLE = flags.DEFINE_integer(
    'table', None, 'Compare with this table of paper 001 only (2, 3, 8, 9, '
    '10 or 11). Default: the dataset\'s appendix table (8-11), else 2-3.')
_OUTPUT_DIR = flags.DEFINE_string(
    'output_dir', None, 'Where the tables are written. Default: '
    '<results_dir>/tables.')

HEADER = table_rows.HEADER + ('Paper',)
# Table cell -> (mean metric, variance metric or None).
_CELLS = (('acc_g', None), ('acc_g_p', 'acc_g_p_var'),
          ('acc_g_np', 'acc_g_np_var'), ('delta_g', None),
          ('acc_l_p', 'acc_l_p_var'), ('acc_l_np', 'acc_l_np_var'),
          ('delta_l', None))
LEGEND = ('Each cell: ours / paper [ours - paper]; (x) = 100 x variance of '
          'the per-client accuracy across clients; - = not applicable. '
          'epsilon: the paper\'s is its Poisson approximation; ours is a '
          'bound for our run\'s sampling, marked r1 when under replace-one '
          'neighbours (a fixed cohort) and ~ when only the Poisson '
          'approximation.')


def _number(value: Optional[float]) -> str:
  return '-' if value is None else f'{value:.2f}'


def _variance(value: float) -> str:
  return f'{value:.2f}' if value >= 0.01 else f'{value:.3f}'


def _ours(metrics, mean: str, var: Optional[str]) -> str:
  value = metrics.get(mean)
  if value is None:
    return '-'
  text = f'{value:.2f}'
  if var is not None and metrics.get(var) is not None:
    text += f'({_variance(metrics[var])})'
  return text


def _paper(row: paper_tables.PaperRow, mean: str, var: Optional[str]) -> str:
  text = row.printed[mean]
  if not text:
    return '-'
  if var is not None and row.printed[var]:
    text += f'({row.printed[var]})'
  return text


def _difference(ours: Optional[float], paper: Optional[float]) -> str:
  return '' if ours is None or paper is None else f' [{ours - paper:+.2f}]'


def _epsilon_mark(record) -> str:
  """'r1' for a replace-one bound, '~' for the Poisson approximation."""
  privacy = record.get('privacy') or {}
  if not privacy.get('is_bound', True):
    return '~'
  return 'r1' if privacy.get('sampling') == 'fixed cohort' else ''


def _epsilon_cell(comparisons: Sequence[paper_tables.Comparison],
                  mark: str = '') -> str:
  if not comparisons:
    return '-'
  if len(comparisons) == 1:
    ours = f'{comparisons[0].ours:.2f}{mark}'
  else:
    ours = ', '.join(f'{c.metric.split("/", 1)[1]}={c.ours:.2f}{mark}'
                     for c in comparisons)
  paper = comparisons[0].paper
  if paper is None:
    return ours
  return (f'{ours} / {comparisons[0].paper_printed}' +
          _difference(max(c.ours for c in comparisons), paper))


def display_row(run: paper_tables.Run,
                row: Optional[paper_tables.PaperRow]) -> list[str]:
  """One row of the Markdown / LaTeX table."""
  record = run.record
  name, hyper = table_rows.run_row(record)[:2]
  if 'seed' in record['config']:
    hyper += f" seed={record['config']['seed']}"
  metrics = record['metrics']
  cells = [name, hyper]
  for mean, var in _CELLS:
    ours = _ours(metrics, mean, var)
    if row is None or (ours == '-' and not row.printed[mean]):
      cells.append(ours)
    else:
      cells.append(f'{ours} / {_paper(row, mean, var)}' + _difference(
          metrics.get(mean), row.values[mean]))
  cells.append(_epsilon_cell(paper_tables.compare_epsilon(record),
                            _epsilon_mark(record)))
  cells.append(str(row.table) if row else '-')
  return cells


def _csv_number(value: Any) -> str:
  if value is None:
    return ''
  if isinstance(value, (list, tuple)):
    return ';'.join(_csv_number(v) for v in value)
  if isinstance(value, bool):
    return str(value).lower()
  if isinstance(value, float):
    return f'{value:.10g}'
  return str(value)


CSV_COLUMNS = (('source', 'run_index', 'name', 'dataset', 'paper_table',
                'algorithm', 'ditto', 'r', 'lambda_p', 'lambda_np', 'seed',
                'rounds', 'clients_per_round', 'delta') + tuple(
                    f'{prefix}{m}' for m in paper_tables.METRICS
                    for prefix in ('', 'paper_', 'diff_')) +
               ('epsilon', 'paper_epsilon', 'paper_delta', 'diff_epsilon'))


def csv_row(run: paper_tables.Run,
            row: Optional[paper_tables.PaperRow]) -> list[str]:
  """One row of the CSV: ours, the paper's and the difference, separately."""
  record, config = run.record, run.record['config']
  out = [run.source, str(run.index), str(record.get('name', '')),
         paper_tables.record_dataset(record), str(row.table) if row else '',
         config['algorithm'], _csv_number(config.get('ditto')),
         _csv_number(config.get('ratio'))
         if paper_tables.owns(config, 'ratio') else '',
         _csv_number(config.get('lambda_p')),
         _csv_number(config.get('lambda_np')),
         _csv_number(config.get('seed')), _csv_number(config.get('rounds')),
         _csv_number(config.get('clients_per_round')),
         _csv_number(config.get('delta'))]
  for c in paper_tables.compare_metrics(record, row):
    out += [_csv_number(c.ours), c.paper_printed, _csv_number(c.difference)]
  epsilon = paper_tables.compare_epsilon(record)
  privacy = paper_tables.PAPER_PRIVACY.get(paper_tables.record_dataset(record))
  out.append(';'.join(f'{c.metric.split("/", 1)[1]}={_csv_number(c.ours)}'
                      for c in epsilon))
  out += [f'{privacy[0]:g}' if privacy and epsilon else '',
          f'{privacy[1]:g}' if privacy and epsilon else '']
  out.append(_csv_number(max(c.difference for c in epsilon))
             if epsilon and epsilon[0].difference is not None else '')
  return out


def _title(dataset: str, runs, table: Optional[int]) -> str:
  privacy = paper_tables.PAPER_PRIVACY.get(dataset)
  if privacy is None:
    source = 'not reported in paper 001'
  elif table is not None:
    source = (f'paper 001 Table {table}' if dataset in
              paper_tables.TABLE_DATASETS[table] else
              f'not in paper 001 Table {table}')
  else:
    appendix = [t for t in (8, 9, 10, 11)
                if dataset in paper_tables.TABLE_DATASETS[t]][0]
    source = f'paper 001 Table {appendix} (else Tables 2-3)'
  if privacy is not None:
    source += f', (epsilon, delta) = ({privacy[0]:g}, {privacy[1]:g})'

  def values(key):
    found = sorted({_csv_number(r.record['config'].get(key)) for r in runs})
    return ','.join(v for v in found if v) or '-'

  return (f'{dataset}: {source}; runs={len(runs)} rounds={values("rounds")} '
          f'clients_per_round={values("clients_per_round")} '
          f'delta={values("delta")} seeds={values("seed")}')


def build(runs: Sequence[paper_tables.Run], reference,
          table: Optional[int]) -> tuple[str, str, str]:
  """The Markdown, LaTeX and CSV texts."""
  runs = sorted(runs, key=paper_tables.run_sort_key)
  groups = {}
  for run in runs:
    groups.setdefault(paper_tables.record_dataset(run.record), []).append(run)
  markdown, latex = [], []
  buffer = io.StringIO()
  writer = csv.writer(buffer, lineterminator='\n')
  writer.writerow(CSV_COLUMNS)
  for dataset, group in groups.items():
    matches = [paper_tables.match_record(reference, r.record, table)
               for r in group]
    title = _title(dataset, group, table)
    rows = [display_row(r, m) for r, m in zip(group, matches)]
    notes = [line(r.record for r in group) for line in (
        table_rows.clip_norm_line, table_rows.personal_pool_line)]
    markdown.append(f'### {title}\n\n{LEGEND}\n\n' +
                    tables.format_markdown(rows, HEADER) + '\n' +
                    ''.join(f'\n{note}\n' for note in notes if note))
    latex.append(tables.format_latex(rows, HEADER, f'{title}. {LEGEND}') +
                 '\n')
    for r, m in zip(group, matches):
      writer.writerow(csv_row(r, m))
  header = '% Generated by run_scripts/tables_fedhdp.py\n'
  return '\n'.join(markdown), header + '\n'.join(latex), buffer.getvalue()


def main(argv):
  cli.check_no_arguments(argv)
  results_dir = _RESULTS_DIR.value
  output_dirs.check_results_dir(results_dir)
  table = _TABLE.value
  cli.check(table is None or table in paper_tables.TABLES,
            f'--table must be one of '
            f'{", ".join(map(str, paper_tables.TABLES))}, got {table}')
  runs = output_dirs.load_runs(results_dir, paper_tables.load_runs)
  if not os.path.isfile(paper_tables.REFERENCE_CSV):
    raise cli.UsageError(f'reference file {paper_tables.REFERENCE_CSV} is '
                         'missing')
  reference = paper_tables.load_reference()
  markdown, latex, csv_text = build(runs, reference, table)

  output_dir = _OUTPUT_DIR.value or os.path.join(results_dir, 'tables')
  stem = 'comparison' if table is None else f'comparison_table{table}'
  os.makedirs(output_dir, exist_ok=True)
  for extension, text in (('md', markdown), ('tex', latex),
                          ('csv', csv_text)):
    with open(os.path.join(output_dir, f'{stem}.{extension}'), 'w',
              encoding='utf-8', newline='') as f:
      f.write(text)
  print(markdown)
  print(f'wrote {os.path.join(output_dir, stem)}.{{md,tex,csv}}')


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
