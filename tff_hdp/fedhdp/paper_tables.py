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
"""Paper 001's published result tables, and our runs compared against them.

The reference file `tff_hdp/fedhdp/reference/paper001_tables.csv` (package
data, read with `importlib.resources`) transcribes
Tables 2 and 3 (summaries) and 8-11 (full grids over r and lambda) of paper
001: one row per published row, every algorithm "+Ditto", numbers as printed
(percent; `*_var` is the parenthesised 100 x variance across clients), empty
where the paper prints '-'. In Tables 8-11 every row carries the lambda of its
block header (lambda_p = lambda_np); in Tables 2-3 the baselines list one
lambda only (lambda_np for Non-Private, lambda_p for DP-FedAvg) and the other
is empty.

A run is matched to a paper row by (dataset, algorithm, r, lambda_p,
lambda_np): the baselines (Non-Private, DP-FedAvg, HDP-FedAvg) ignore r, and a
lambda the paper row leaves empty is not compared. Without a table number the
appendix table of the dataset (8-11) is searched first, then the summary table
(2-3), which holds the one FMNIST row with lambda_p != lambda_np. The privacy
of each table is its caption's (epsilon, delta): (3.6, 1e-4) for (skewed)
non-IID MNIST, (0.6, 1e-4) for FMNIST, (4.1, 1e-4) for FEMNIST.

Also here: reading every `results.json` under a directory (written by
`run_scripts/run_fedhdp.py`), which the table and plot binaries share.
TensorFlow-free.
"""

import csv
import dataclasses
from importlib import resources
import json
import math
import os
import pathlib
from typing import Any, Mapping, Optional, Sequence

from tff_hdp.fedhdp import algorithm_registry
from tff_hdp.fedhdp import algorithms

# Package data (setup.py's package_data), found wherever tff_hdp is installed.
REFERENCE_CSV = (resources.files('tff_hdp.fedhdp') / 'reference' /
                 'paper001_tables.csv')

# The reference file's columns, in order.
COLUMNS = ('table', 'dataset', 'algorithm', 'r', 'lambda_p', 'lambda_np',
           'acc_g', 'acc_g_p', 'acc_g_p_var', 'acc_g_np', 'acc_g_np_var',
           'delta_g', 'acc_l_p', 'acc_l_p_var', 'acc_l_np', 'acc_l_np_var',
           'delta_l')
# The metric columns of paper 001's tables, in the papers' column order.
METRICS = COLUMNS[6:]

DATASETS = ('mnist', 'skewed_mnist', 'fmnist', 'femnist')
# The algorithms in the papers' row order; the baselines (every role but
# 'proposed') are the rows without a tuned r.
ALGORITHMS = algorithms.PAPER_001
BASELINES = tuple(name for name in ALGORITHMS
                  if algorithm_registry.get(name).role != 'proposed')

# Which datasets each table reports.
TABLE_DATASETS = {
    2: ('mnist', 'skewed_mnist'),
    3: ('fmnist', 'femnist'),
    8: ('mnist',),
    9: ('skewed_mnist',),
    10: ('fmnist',),
    11: ('femnist',),
}
TABLES = tuple(sorted(TABLE_DATASETS))
# Search order when no table is given: the full grid first, then the summary.
_TABLE_ORDER = (8, 9, 10, 11, 2, 3)

# (epsilon, delta) of each dataset's private clients: the captions of
# Tables 2-3 and 8-11.
PAPER_PRIVACY = {
    'mnist': (3.6, 1e-4),
    'skewed_mnist': (3.6, 1e-4),
    'fmnist': (0.6, 1e-4),
    'femnist': (4.1, 1e-4),
}


@dataclasses.dataclass(frozen=True)
class PaperRow:
  """One published row.

  Attributes:
    table: Table number (2, 3, 8, 9, 10 or 11).
    dataset: One of `DATASETS`.
    algorithm: One of `ALGORITHMS` (all with Ditto).
    r: FedHDP's ratio; None for the baselines.
    lambda_p: Ditto lambda of private clients; None where not printed.
    lambda_np: Ditto lambda of non-private clients; None where not printed.
    values: Metric name (`METRICS`) -> float, or None for '-'.
    printed: Metric name -> the number as printed ('' for '-').
  """

  table: int
  dataset: str
  algorithm: str
  r: Optional[float]
  lambda_p: Optional[float]
  lambda_np: Optional[float]
  values: Mapping[str, Optional[float]]
  printed: Mapping[str, str]


def _float_or_none(text: str) -> Optional[float]:
  return float(text) if text != '' else None


def load_reference(path: Optional[str] = None) -> tuple[PaperRow, ...]:
  """Reads the transcription of paper 001's tables.

  Args:
    path: The CSV file (default: the package's reference file,
      `REFERENCE_CSV`).

  Returns:
    The rows in file order.

  Raises:
    ValueError: If the header is not `COLUMNS` or a cell is not a number.
  """
  source = REFERENCE_CSV if path is None else pathlib.Path(path)
  with source.open(newline='', encoding='utf-8') as f:
    reader = csv.reader(f)
    header = tuple(next(reader))
    if header != COLUMNS:
      raise ValueError(f'{source}: columns must be {",".join(COLUMNS)}, got '
                       f'{",".join(header)}')
    rows = []
    for line, cells in enumerate(reader, start=2):
      record = dict(zip(COLUMNS, cells))
      try:
        rows.append(PaperRow(
            table=int(record['table']),
            dataset=record['dataset'],
            algorithm=record['algorithm'],
            r=_float_or_none(record['r']),
            lambda_p=_float_or_none(record['lambda_p']),
            lambda_np=_float_or_none(record['lambda_np']),
            values={m: _float_or_none(record[m]) for m in METRICS},
            printed={m: record[m] for m in METRICS}))
      except ValueError as e:
        raise ValueError(f'{source}:{line}: {e}') from None
  return tuple(rows)


def _same(a: float, b: float) -> bool:
  return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def single_ratio(ratio: Any) -> Optional[float]:
  """FedHDP's r of a config (a number or one per level); None if several."""
  ratios = ratio if isinstance(ratio, (list, tuple)) else [ratio]
  if not ratios or any(not _same(float(r), float(ratios[0])) for r in ratios):
    return None
  return float(ratios[0])


def owns(config: Mapping[str, Any], field: str) -> bool:
  """Whether a recorded run's algorithm owns the config field `field` (its
  `config_fields` name it: FedHDP's 'ratio'); False if unregistered."""
  name = config.get('algorithm')
  return (name in algorithm_registry.names() and
          field in algorithm_registry.get(name).config_fields())


def recorded_ratio(config: Mapping[str, Any]) -> Optional[float]:
  """The single combination ratio r a recorded run's algorithm owns, else
  None (an algorithm without r, or one r per level)."""
  return single_ratio(config.get('ratio')) if owns(config, 'ratio') else None


def find_row(rows: Sequence[PaperRow],
             *,
             dataset: str,
             algorithm: str,
             r: Optional[float],
             lambda_p: float,
             lambda_np: float,
             table: Optional[int] = None) -> Optional[PaperRow]:
  """The paper row reporting a configuration, or None.

  Args:
    rows: From `load_reference`.
    dataset: One of `DATASETS` (others never match).
    algorithm: One of `ALGORITHMS`.
    r: FedHDP's ratio; ignored for the baselines.
    lambda_p: Our Ditto lambda of private clients.
    lambda_np: Our Ditto lambda of non-private clients.
    table: Search this table only; default: the dataset's appendix table
      (8-11), then Tables 2-3.

  Returns:
    The first matching row in search order.
  """
  if table is not None and table not in TABLE_DATASETS:
    raise ValueError(f'table must be one of {", ".join(map(str, TABLES))}, '
                     f'got {table}')
  order = (table,) if table is not None else _TABLE_ORDER
  for number in order:
    for row in rows:
      if (row.table != number or row.dataset != dataset or
          row.algorithm != algorithm):
        continue
      if algorithm not in BASELINES and (
          r is None or row.r is None or not _same(row.r, r)):
        continue
      if row.lambda_p is not None and not _same(row.lambda_p, lambda_p):
        continue
      if row.lambda_np is not None and not _same(row.lambda_np, lambda_np):
        continue
      return row
  return None


def record_dataset(record: Mapping[str, Any]) -> str:
  """The dataset name of a results record.

  A non-IID MNIST run with opt-outs drawn among digit-7 clients is the skewed
  dataset of Table 9, whichever name it was loaded under.
  """
  dataset = record.get('dataset', '')
  if dataset == 'mnist' and record.get('config', {}).get('skewed_optout'):
    return 'skewed_mnist'
  return dataset


def match_record(rows: Sequence[PaperRow],
                 record: Mapping[str, Any],
                 table: Optional[int] = None) -> Optional[PaperRow]:
  """The paper row for a results record of `tff_hdp.fedhdp.training.train`, or None.

  Runs without Ditto never match: every published row is "+Ditto".
  """
  config = record['config']
  if not config.get('ditto', True):
    return None
  algorithm = config['algorithm']
  r = recorded_ratio(config)
  if owns(config, 'ratio') and r is None:
    return None
  return find_row(rows, dataset=record_dataset(record), algorithm=algorithm,
                  r=r, lambda_p=float(config['lambda_p']),
                  lambda_np=float(config['lambda_np']), table=table)


@dataclasses.dataclass(frozen=True)
class Comparison:
  """One metric of one run next to the paper's.

  Attributes:
    metric: A name of `METRICS`, or 'epsilon'.
    ours: Our value (None where not applicable).
    paper: The paper's value (None where it prints '-' or has no row).
    paper_printed: The paper's number as printed ('' if none).
    difference: ours - paper, or None unless both are known.
  """

  metric: str
  ours: Optional[float]
  paper: Optional[float]
  paper_printed: str
  difference: Optional[float]


def _comparison(metric, ours, paper, printed) -> Comparison:
  ours = None if ours is None else float(ours)
  difference = None if ours is None or paper is None else ours - paper
  return Comparison(metric, ours, paper, printed, difference)


def compare_metrics(record: Mapping[str, Any],
                    row: Optional[PaperRow]) -> list[Comparison]:
  """Our metrics (`METRICS` order) against a paper row (None: no row)."""
  metrics = record['metrics']
  return [
      _comparison(m, metrics.get(m), row.values[m] if row else None,
                  row.printed[m] if row else '') for m in METRICS
  ]


def compare_epsilon(record: Mapping[str, Any]) -> list[Comparison]:
  """Our epsilon per private group against the paper's caption epsilon.

  Non-private runs have no private group and give an empty list; a dataset
  the paper does not report gives comparisons with `paper` None. The metric
  of each entry is 'epsilon/<group>'.
  """
  privacy = PAPER_PRIVACY.get(record_dataset(record))
  paper = privacy[0] if privacy else None
  printed = f'{paper:g}' if privacy else ''
  epsilon = record.get('epsilon') or {}
  return [_comparison(f'epsilon/{group}', epsilon[group], paper, printed)
          for group in sorted(epsilon)]


@dataclasses.dataclass(frozen=True)
class Run:
  """One results record and the file it came from.

  Attributes:
    source: Path of its `results.json`, relative to the results directory
      (forward slashes).
    index: Position of the record in that file's `runs`.
    record: The record (see `tff_hdp.fedhdp.training.train`).
  """

  source: str
  index: int
  record: Mapping[str, Any]


RESULTS_FILE = 'results.json'
_RECORD_KEYS = ('config', 'dataset', 'metrics')


def find_results(results_dir: str) -> list[str]:
  """Every `results.json` under `results_dir`, in sorted relative-path order."""
  found = []
  for root, dirs, files in os.walk(results_dir):
    dirs.sort()
    if RESULTS_FILE in files:
      found.append(os.path.join(root, RESULTS_FILE))
  return sorted(found, key=lambda p: os.path.relpath(p, results_dir).split(
      os.sep))


def load_runs(results_dir: str) -> list[Run]:
  """Reads every run of every `results.json` under `results_dir`.

  Raises:
    ValueError: One line naming the file if one is not a results file
      (`{"runs": [record, ...]}` with config, dataset and metrics).
  """
  runs = []
  for path in find_results(results_dir):
    source = os.path.relpath(path, results_dir).replace(os.sep, '/')
    try:
      with open(path, encoding='utf-8') as f:
        content = json.load(f)
    except (OSError, ValueError) as e:
      raise ValueError(f'{path}: not readable JSON '
                       f'({str(e).splitlines()[0]})') from None
    records = content.get('runs') if isinstance(content, dict) else None
    if not isinstance(records, list):
      raise ValueError(f'{path}: expected an object with a "runs" list')
    for index, record in enumerate(records):
      missing = [k for k in _RECORD_KEYS
                 if not isinstance(record, dict) or k not in record]
      if missing:
        raise ValueError(f'{path}: run {index} lacks {", ".join(missing)}')
      if 'algorithm' not in record['config']:
        raise ValueError(f'{path}: run {index} has no config.algorithm')
      runs.append(Run(source, index, record))
  return runs


def _sortable(value: Any) -> tuple:
  """A key that orders None, numbers and strings without comparing types."""
  if value is None:
    return (0, 0.0, '')
  if isinstance(value, (int, float)):
    return (1, float(value), '')
  if isinstance(value, (list, tuple)):
    return (2, 0.0, json.dumps(list(value)))
  return (3, 0.0, str(value))


def run_sort_key(run: Run) -> tuple:
  """Orders runs as the papers' tables: dataset, lambda block, algorithm, r."""
  config = run.record['config']
  algorithm = config['algorithm']
  dataset = record_dataset(run.record)
  return (DATASETS.index(dataset) if dataset in DATASETS else len(DATASETS),
          dataset,
          _sortable(config.get('lambda_p')),
          _sortable(config.get('lambda_np')),
          ALGORITHMS.index(algorithm) if algorithm in ALGORITHMS else
          len(ALGORITHMS), algorithm,
          _sortable(config.get('ratio') if owns(config, 'ratio') else None),
          _sortable(config.get('seed')),
          _sortable(config.get('rounds')),
          str(run.record.get('name', '')),
          run.source, run.index)
