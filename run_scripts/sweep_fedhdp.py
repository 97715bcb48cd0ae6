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

    python run_scripts/sweep_fedhdp.py --table=10 --data_dir=~/.tff --parallel=2
    python run_scripts/sweep_fedhdp.py --table=8 --rows=0,3 -- --rounds=5

The rows of Tables 2, 3 and 8-11 are those transcribed in
`tff_hdp/fedhdp/reference/paper001_tables.csv`; each row is one run of
`run_fedhdp.py` with the dataset's preset (Table 7), the row's
algorithm, r, lambda_p and lambda_np, and the paper's sampling (a fixed
cohort, realised denominators: `--nopoisson_sampling --denominators=realised`),
written to
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

# pylint: disable=g-import-not-at-top,wrong-import-position
import functools
from typing import Sequence

from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import subprocess_jobs
from tff_hdp.fedhdp import paper_tables
from tff_hdp.fedhdp import sweep_rows

RUN_EXPERIMENT = os.path.join(cli.REPO_ROOT, 'run_scripts',
                              'run_fedhdp.py')
TABLES = paper_tables.TABLES

_TABLE = flags.DEFINE_integer('table', None, 'Table of paper 001: '
                              '2, 3, 8, 9, 10 or 11.')
_ROWS = flags.DEFINE_list('rows', None, 'Row indices (0-based, in the order '
                          '--list prints) to run; default all.')
_RESULTS_DIR = flags.DEFINE_string('results_dir', 'results',
                                   'Root of the results tree.')
_DATA_DIR = flags.DEFINE_string('data_dir', None,
                                'Passed to run_fedhdp.py --data_dir.')
_PARALLEL = flags.DEFINE_integer('parallel', 1, 'Rows run at the same time.')
_SHARD = flags.DEFINE_string('shard', '0/1', 'i/n: run rows i, i+n, i+2n, ...')
_LIST = flags.DEFINE_bool('list', False, 'Print the rows and exit.')


def parse_shard(text: str) -> tuple[int, int]:
  try:
    i, n = (int(v) for v in text.split('/'))
  except ValueError:
    raise cli.UsageError(f'--shard must be i/n with integers, got {text!r}'
                         ) from None
  cli.check(n >= 1 and 0 <= i < n,
            f'--shard={text}: need n >= 1 and 0 <= i < n')
  return i, n


def run_row(row: paper_tables.PaperRow, output_dir: str, extra: Sequence[str]) -> int:
  """Runs one row to completion (resuming if interrupted); returns rc."""
  command = [sys.executable, RUN_EXPERIMENT,
             *sweep_rows.row_arguments(row, output_dir, extra,
                                       _DATA_DIR.value)]
  return subprocess_jobs.run_logged(command, output_dir,
                        subprocess_jobs.threads_per_job(_PARALLEL.value))


def main(argv):
  extra = argv[1:]  # Everything after `--`.
  cli.check(_TABLE.value in TABLES,
            f'--table must be one of {", ".join(map(str, TABLES))}, got '
            f'{_TABLE.value}')
  cli.check(_PARALLEL.value >= 1,
            f'--parallel must be >= 1, got {_PARALLEL.value}')
  shard_index, shard_count = parse_shard(_SHARD.value)
  rows = sweep_rows.read_rows(_TABLE.value)
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
      flags_of_row = ' '.join(sweep_rows.row_flags(rows[i]))
      print(f'{i}\t{sweep_rows.row_name(rows[i])}\t{flags_of_row}')
    return
  table_dir = os.path.join(_RESULTS_DIR.value, f'table{_TABLE.value}')
  todo = []
  for i in indices:
    output_dir = os.path.join(table_dir, sweep_rows.row_name(rows[i]))
    if os.path.isfile(os.path.join(output_dir, 'results.json')):
      print(f'skip {sweep_rows.row_name(rows[i])}: results exist', flush=True)
    else:
      todo.append((rows[i], output_dir))
  failed = subprocess_jobs.run_jobs(
      [(sweep_rows.row_name(row), functools.partial(run_row, row, out, extra))
       for row, out in todo], _PARALLEL.value)
  subprocess_jobs.exit_if_failed(failed, 'rows')


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
