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
"""Runs every row of one of paper 001's result tables.

    python run_scripts/sweep.py --table=10 --data_dir=~/.tff --parallel=2
    python run_scripts/sweep.py --table=8 --rows=0,3 -- --rounds=5

The rows of Tables 2, 3 and 8-11 are those transcribed in
`datasets/reference/paper001_tables.csv`; each row is one run of
`run_experiment.py` with the dataset's preset (Table 7) and the row's
algorithm, r, lambda_p and lambda_np, written to
`<results_dir>/table<N>/<row>/`. Flags after `--` go to every run (e.g. fewer
rounds for a smoke test).

A row whose `results.json` exists is skipped; a row that was interrupted
resumes from its last checkpoint, so a killed sweep started again finishes
with exactly the results of an uninterrupted one. `--parallel=k` runs k rows
at a time (each in its own process); `--shard=i/n` takes every n-th row
starting at i (0-based), to spread a table over n machines.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# pylint: disable=g-import-not-at-top,wrong-import-position
import concurrent.futures
import csv
import dataclasses
import subprocess
from typing import Optional, Sequence

from absl import app
from absl import flags

from run_scripts import cli

REFERENCE_CSV = os.path.join(cli.REPO_ROOT, 'datasets', 'reference',
                             'paper001_tables.csv')
RUN_EXPERIMENT = os.path.join(cli.REPO_ROOT, 'run_scripts',
                              'run_experiment.py')
TABLES = (2, 3, 8, 9, 10, 11)

_TABLE = flags.DEFINE_integer('table', None, 'Table of paper 001: '
                              '2, 3, 8, 9, 10 or 11.')
_ROWS = flags.DEFINE_list('rows', None, 'Row indices (0-based, in the order '
                          '--list prints) to run; default all.')
_RESULTS_DIR = flags.DEFINE_string('results_dir', 'results',
                                   'Root of the results tree.')
_DATA_DIR = flags.DEFINE_string('data_dir', None,
                                'Passed to run_experiment.py --data_dir.')
_PARALLEL = flags.DEFINE_integer('parallel', 1, 'Rows run at the same time.')
_SHARD = flags.DEFINE_string('shard', '0/1', 'i/n: run rows i, i+n, i+2n, ...')
_LIST = flags.DEFINE_bool('list', False, 'Print the rows and exit.')


@dataclasses.dataclass(frozen=True)
class Row:
  """One published row: which run reproduces it."""

  table: int
  dataset: str
  algorithm: str
  r: Optional[str]
  lambda_p: Optional[str]
  lambda_np: Optional[str]

  @property
  def name(self) -> str:
    """Directory name of the row's run, unique within a table."""
    parts = [self.dataset, self.algorithm]
    if self.r:
      parts.append(f'r{self.r}')
    parts.append(f'lp{self.lambda_p or self.lambda_np}')
    parts.append(f'lnp{self.lambda_np or self.lambda_p}')
    return '_'.join(parts)

  def flags(self) -> list[str]:
    # A baseline row of Tables 2/3 prints a single lambda: the lambda of the
    # only group that baseline has; use it for both.
    lp = self.lambda_p or self.lambda_np
    lnp = self.lambda_np or self.lambda_p
    out = [f'--preset={self.dataset}', f'--algorithm={self.algorithm}',
           f'--lambda_p={lp}', f'--lambda_np={lnp}']
    if self.r:
      out.append(f'--r={self.r}')
    return out


def read_rows(table: int, path: str = REFERENCE_CSV) -> list[Row]:
  """The table's rows, in published order, without duplicates."""
  rows, seen = [], set()
  with open(path, newline='') as f:
    for record in csv.DictReader(f):
      if int(record['table']) != table:
        continue
      row = Row(table, record['dataset'], record['algorithm'],
                record['r'] or None, record['lambda_p'] or None,
                record['lambda_np'] or None)
      if row.name not in seen:
        seen.add(row.name)
        rows.append(row)
  return rows


def parse_shard(text: str) -> tuple[int, int]:
  try:
    i, n = (int(v) for v in text.split('/'))
  except ValueError:
    raise cli.UsageError(f'--shard must be i/n with integers, got {text!r}'
                         ) from None
  cli.check(n >= 1 and 0 <= i < n,
            f'--shard={text}: need n >= 1 and 0 <= i < n')
  return i, n


def run_row(row: Row, output_dir: str, extra: Sequence[str]) -> int:
  """Runs one row to completion (resuming if interrupted); returns rc."""
  os.makedirs(output_dir, exist_ok=True)
  command = [sys.executable, RUN_EXPERIMENT, *row.flags(),
             f'--output_dir={output_dir}', '--noprogress']
  if _DATA_DIR.value:
    command.append(f'--data_dir={_DATA_DIR.value}')
  command += list(extra)
  with open(os.path.join(output_dir, 'log.txt'), 'ab') as log:
    return subprocess.run(command, stdout=log, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, check=False).returncode


def main(argv):
  extra = argv[1:]  # Everything after `--`.
  cli.check(_TABLE.value in TABLES,
            f'--table must be one of {", ".join(map(str, TABLES))}, got '
            f'{_TABLE.value}')
  cli.check(_PARALLEL.value >= 1,
            f'--parallel must be >= 1, got {_PARALLEL.value}')
  shard_index, shard_count = parse_shard(_SHARD.value)
  if not os.path.isfile(REFERENCE_CSV):
    raise cli.UsageError(f'reference table file {REFERENCE_CSV} is missing')
  rows = read_rows(_TABLE.value)
  indices = list(range(len(rows)))
  if _ROWS.value:
    try:
      indices = sorted({int(v) for v in _ROWS.value})
    except ValueError:
      raise cli.UsageError(f'--rows takes integers, got '
                           f'{",".join(_ROWS.value)}') from None
    bad = [i for i in indices if not 0 <= i < len(rows)]
    cli.check(not bad, f'--rows {bad} out of range: table {_TABLE.value} has '
              f'rows 0..{len(rows) - 1}')
  indices = indices[shard_index::shard_count]
  if _LIST.value:
    for i in indices:
      print(f'{i}\t{rows[i].name}\t{" ".join(rows[i].flags())}')
    return
  table_dir = os.path.join(_RESULTS_DIR.value, f'table{_TABLE.value}')
  todo = []
  for i in indices:
    output_dir = os.path.join(table_dir, rows[i].name)
    if os.path.isfile(os.path.join(output_dir, 'results.json')):
      print(f'skip {rows[i].name}: results exist', flush=True)
    else:
      todo.append((rows[i], output_dir))
  failed = []
  with concurrent.futures.ThreadPoolExecutor(_PARALLEL.value) as pool:
    futures = {pool.submit(run_row, row, out, extra): row for row, out in todo}
    for future in concurrent.futures.as_completed(futures):
      row, rc = futures[future], future.result()
      print(f'{"done" if rc == 0 else f"FAILED (exit {rc})"} {row.name}',
            flush=True)
      if rc:
        failed.append(row.name)
  if failed:
    sys.stderr.write(f'sweep.py: error: {len(failed)} rows failed (see their '
                     f'log.txt): {", ".join(failed)}\n')
    sys.exit(1)


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
