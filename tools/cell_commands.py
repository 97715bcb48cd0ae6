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
"""Prints, as Markdown, the one command of each run of paper 001's Table 2.

    .venv/bin/python tools/cell_commands.py

The runs are read from the Makefile, not listed by hand:

- `make table2-mnist` and `make table2-mnist-seeds`: each
  `sweep_fedhdp.py --table=2 [--rows=...] --results_dir=DIR -- FLAGS` line
  of their recipes, expanded to its rows with the sweep's own code
  (`read_rows`, `row_name`, `row_arguments`), which is what the sweep runs;
- `make table2-mnist-ablations`: each `$(call table2_runs,DIR,$(RUNS))` of
  its recipe, each of RUNS ("preset algorithm seed folder [flags]") run as
  the `table2_runs` macro runs it: `$(TABLE2_RUN) --preset --algorithm
  --seed [flags] --output_dir=DIR/folder`.

docs/results/paper001_rows.md holds this output between its
`cell_commands.py` markers; tests/test_kept_runs.py checks that they agree,
and that each command's flags are those its kept results.json recorded.
"""

import os
import re
import shlex
import sys
from typing import NamedTuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAKEFILE = os.path.join(REPO, 'Makefile')
PYTHON = '.venv/bin/python'  # $(PY), as a reader types it.
TABLE_TARGETS = ('table2-mnist', 'table2-mnist-seeds')
ABLATIONS_TARGET = 'table2-mnist-ablations'

_ASSIGN = re.compile(r'^([A-Za-z_][A-Za-z0-9_]*)\s*(:=|\?=|=)\s*(.*)$')
_REFERENCE = re.compile(r'\$\(([A-Za-z_][A-Za-z0-9_]*)\)')
_CALL = re.compile(r'\$\(call table2_runs,([^,]+),\$\(([A-Za-z0-9_]+)\)\)')
_BLOCKS = {'mnist': 'non-IID', 'skewed_mnist': 'skewed non-IID'}


class Run(NamedTuple):
  target: str  # The make target that runs it.
  folder: str  # Its output folder, relative to the repository.
  arguments: list[str]  # run_fedhdp.py's arguments.

  def command(self) -> str:
    return ' '.join([PYTHON, 'run_scripts/run_fedhdp.py',
                     *map(shlex.quote, self.arguments)])


def _logical_lines(text: str) -> list[str]:
  """The Makefile's lines with backslash continuations joined."""
  return re.sub(r'\\\n\s*', ' ', text).splitlines()


def variables(text: str) -> dict[str, str]:
  """The Makefile's variables (unexpanded); `define` bodies are left out."""
  out, in_define = {}, False
  for line in _logical_lines(text):
    if line.startswith('define '):
      in_define = True
    elif line.startswith('endef'):
      in_define = False
    elif not in_define and not line.startswith('\t'):
      match = _ASSIGN.match(line)
      if match:
        out[match.group(1)] = match.group(3).strip()
  return out


def expand(value: str, names: dict[str, str]) -> str:
  """`value` with every $(NAME) of `names` replaced, recursively."""
  for _ in range(20):
    expanded = _REFERENCE.sub(
        lambda m: names.get(m.group(1), m.group(0)), value)
    if expanded == value:
      return value
    value = expanded
  raise ValueError(f'variables nest too deep: {value}')


def recipe(text: str, target: str) -> list[str]:
  """The recipe lines of `target`, continuations joined, comments left out."""
  lines = _logical_lines(text)
  start = next(i for i, line in enumerate(lines)
               if line.startswith(f'{target}:'))
  out = []
  for line in lines[start + 1:]:
    if not line.startswith('\t'):
      break
    line = line.strip()
    if line and not line.startswith('@#'):
      out.append(line)
  return out


def _flag(arguments: list[str], name: str):
  values = [a.split('=', 1)[1] for a in arguments
            if a.startswith(f'--{name}=')]
  return values[-1] if values else None


def table_runs(text: str) -> list[Run]:
  """The Table 2 runs of `make table2-mnist` and `make table2-mnist-seeds`,
  from the sweep's own list of rows."""
  from tff_hdp.fedhdp import sweep_rows  # pylint: disable=g-import-not-at-top
  names = variables(text)
  runs = []
  for target in TABLE_TARGETS:
    for line in recipe(text, target):
      words = shlex.split(expand(line, names))
      if not any(w.endswith('run_scripts/sweep_fedhdp.py') for w in words):
        continue
      split = words.index('--') if '--' in words else len(words)
      own, extra = words[:split], words[split + 1:]
      table = int(_flag(own, 'table'))
      rows = sweep_rows.read_rows(table)
      indices = (sorted(int(i) for i in _flag(own, 'rows').split(','))
                 if _flag(own, 'rows') else range(len(rows)))
      table_dir = os.path.join(_flag(own, 'results_dir'), f'table{table}')
      for i in indices:
        folder = os.path.join(table_dir, sweep_rows.row_name(rows[i]))
        runs.append(Run(target, folder,
                        sweep_rows.row_arguments(rows[i], folder, extra)))
  return runs


def ablation_runs(text: str) -> list[Run]:
  """The runs of `make table2-mnist-ablations`, from the Makefile's lists."""
  names = variables(text)
  fixed = shlex.split(expand(names['TABLE2_RUN'], names))
  assert fixed[1] == 'run_scripts/run_fedhdp.py', fixed
  runs = []
  for line in recipe(text, ABLATIONS_TARGET):
    match = _CALL.search(line)
    if not match:
      continue
    directory = expand(match.group(1), names)
    for run in shlex.split(expand(names[match.group(2)], names)):
      preset, algorithm, seed, folder, *flags = run.split()
      folder = os.path.normpath(os.path.join(directory, folder))
      runs.append(Run(ABLATIONS_TARGET, folder, [
          *fixed[2:], f'--preset={preset}', f'--algorithm={algorithm}',
          f'--seed={seed}', *flags, f'--output_dir={folder}']))
  return runs


def _kept(run: Run) -> str:
  """The run's folder as the page links it (docs/runs/ if kept there)."""
  folder = os.path.relpath(run.folder, 'results')
  if os.path.isfile(os.path.join(REPO, 'docs', 'runs', folder,
                                 'results.json')):
    return f'[{folder}](../runs/{folder})'
  return f'`{run.folder}` (not kept)'


def _table(runs: list[Run], cells: bool) -> list[str]:
  """One row a run: the cell (block, algorithm, seed) and its kept folder,
  or for an ablation the folder alone; then the command."""
  out = ['| Cell (block, row, seed) | Kept as | Command |' if cells else
         '| Kept as | Command |', '|---|---|---|' if cells else '|---|---|']
  for run in runs:
    args = run.arguments
    command = f'`{run.command()}`'
    if not cells:
      out.append(f'| {_kept(run)} | {command} |')
      continue
    algorithm = _flag(args, 'algorithm')
    if _flag(args, 'r'):
      algorithm += f' r={_flag(args, "r")}'
    cell = (f'{_BLOCKS[_flag(args, "preset")]} {algorithm}, '
            f'seed {_flag(args, "seed")}')
    out.append(f'| {cell} | {_kept(run)} | {command} |')
  return out


def markdown(text: str) -> str:
  """The lists, as docs/results/paper001_rows.md holds them."""
  table, ablations = table_runs(text), ablation_runs(text)
  out = []
  for target in TABLE_TARGETS:
    runs = [r for r in table if r.target == target]
    out += ['', f'`make {target}`: {len(runs)} runs.', '']
    out += _table(runs, cells=True)
  out += ['', f'`make {ABLATIONS_TARGET}`: {len(ablations)} runs.', '']
  out += _table(ablations, cells=False)
  return '\n'.join(out[1:])


def main() -> int:
  with open(MAKEFILE, encoding='utf-8') as f:
    print(markdown(f.read()))
  return 0


if __name__ == '__main__':
  sys.exit(main())
