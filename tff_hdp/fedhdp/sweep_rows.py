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
"""The runs of paper 001's tables as `run_fedhdp.py` commands (flag-free).

Each row of `tff_hdp/fedhdp/reference/paper001_tables.csv` is one run of
`run_fedhdp.py`: `row_flags` gives its flags, `row_name` its folder,
`row_arguments` the whole command `run_scripts/sweep_fedhdp.py` runs (and
`tools/cell_commands.py` prints for the docs). TensorFlow-free.
"""

from typing import Optional, Sequence

from tff_hdp.fedhdp import paper_tables


def _g(value: Optional[float]) -> str:
  return '' if value is None else f'{value:g}'


def row_name(row: paper_tables.PaperRow) -> str:
  """Directory name of the row's run, unique within a table."""
  lp = _g(row.lambda_p if row.lambda_p is not None else row.lambda_np)
  lnp = _g(row.lambda_np if row.lambda_np is not None else row.lambda_p)
  parts = [row.dataset, row.algorithm]
  if row.r is not None:
    parts.append(f'r{_g(row.r)}')
  return '_'.join(parts + [f'lp{lp}', f'lnp{lnp}'])


def row_flags(row: paper_tables.PaperRow) -> list[str]:
  """run_fedhdp.py flags that reproduce the row."""
  # A baseline row of Tables 2/3 prints one lambda, that of the only group the
  # baseline has: use it for both.
  lp = row.lambda_p if row.lambda_p is not None else row.lambda_np
  lnp = row.lambda_np if row.lambda_np is not None else row.lambda_p
  # Paper 001's Algorithm 2 as printed: a fixed cohort and realised counts.
  # Its epsilon is then the replace-one bound (docs/privacy.md), not the
  # Poisson figure of the paper's captions; flags after `--` may override.
  out = [f'--preset={row.dataset}', f'--algorithm={row.algorithm}',
         f'--lambda_p={_g(lp)}', f'--lambda_np={_g(lnp)}',
         '--nopoisson_sampling', '--denominators=realised']
  if row.r is not None:
    out.append(f'--r={_g(row.r)}')
  return out


def read_rows(table: int) -> list[paper_tables.PaperRow]:
  """The table's rows, in published order, one per distinct run."""
  rows, seen = [], set()
  for row in paper_tables.load_reference():
    if row.table == table and row_name(row) not in seen:
      seen.add(row_name(row))
      rows.append(row)
  return rows


def row_arguments(row: paper_tables.PaperRow, output_dir: str,
                  extra: Sequence[str],
                  data_dir: Optional[str] = None) -> list[str]:
  """run_fedhdp.py's arguments for one row's run into `output_dir`, as the
  sweep passes them (tools/cell_commands.py prints them for the docs)."""
  command = [*row_flags(row), f'--output_dir={output_dir}', '--noprogress']
  if data_dir:
    command.append(f'--data_dir={data_dir}')
  return command + list(extra)
