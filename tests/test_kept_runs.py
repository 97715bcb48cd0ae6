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
"""The kept runs (docs/runs/): their folders, commands and run times.

Each kept `results.json` records the command that wrote it (`argv`); its
`--output_dir=results/<path>` must be the folder the file sits in, with
`results/` read as `docs/runs/`: that is where the sweeps look for it
(a run whose results.json is there is skipped), and where a reader finds it.
docs/results/paper001_rows.md lists each Table 2 run's command as
tools/cell_commands.py prints it, each the command its kept file recorded;
docs/runs/README.md's run times are the files' `wall_clock_seconds`.
"""

import collections
import glob
import json
import os
import re
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = os.path.join(REPO, 'docs', 'runs')
ROWS_PAGE = os.path.join(REPO, 'docs', 'results', 'paper001_rows.md')
RUNS_README = os.path.join(RUNS, 'README.md')
KEPT = sorted(glob.glob(os.path.join(RUNS, '**', 'results.json'),
                        recursive=True))


def _rel(path: str) -> str:
  return os.path.relpath(path, REPO)


def recorded_folder(argv) -> str:
  """The folder under docs/runs/ that a kept file's `argv` wrote, relative
  to docs/runs/: the last --output_dir, its leading `results/` (or, for a
  command given an absolute path, everything up to `/results/`) dropped."""
  outputs = [a.split('=', 1)[1] for a in argv
             if a.startswith('--output_dir=')]
  assert outputs, f'no --output_dir in {argv}'
  path = outputs[-1]
  if os.path.isabs(path):
    assert '/results/' in path, path
    path = path.split('/results/', 1)[1]
  else:
    assert path.startswith('results/'), path
    path = path[len('results/'):]
  return os.path.normpath(path)


def test_there_are_kept_runs():
  assert len(KEPT) >= 89


@pytest.mark.parametrize('path', KEPT, ids=_rel)
def test_each_kept_file_names_the_folder_it_sits_in(path):
  with open(path, encoding='utf-8') as f:
    argv = json.load(f)['argv']
  folder = os.path.relpath(os.path.dirname(path), RUNS)
  assert recorded_folder(argv) == folder, (
      f'{_rel(path)} names results/{recorded_folder(argv)}')


def _cell_commands():
  sys.path.insert(0, os.path.join(REPO, 'tools'))
  try:
    import cell_commands  # pylint: disable=g-import-not-at-top
  finally:
    sys.path.pop(0)
  with open(os.path.join(REPO, 'Makefile'), encoding='utf-8') as f:
    return cell_commands, f.read()


def test_the_page_lists_each_runs_command_as_the_tool_prints_it():
  cell_commands, makefile = _cell_commands()
  with open(ROWS_PAGE, encoding='utf-8') as f:
    page = f.read()
  block = re.search(r'<!-- cell_commands.py: begin -->\n(.*?)\n'
                    r'<!-- cell_commands.py: end -->', page, re.S).group(1)
  assert block == cell_commands.markdown(makefile)


def test_each_listed_command_is_the_one_its_kept_run_recorded():
  cell_commands, makefile = _cell_commands()
  runs = (cell_commands.table_runs(makefile) +
          cell_commands.ablation_runs(makefile))
  # Table 2's 20 runs (seeds 0 to 3) and the ablations, each kept once.
  assert len([r for r in runs if r.target != 'table2-mnist-ablations']) == 20
  assert len({r.folder for r in runs}) == len(runs)
  for run in runs:
    path = os.path.join(RUNS, os.path.relpath(run.folder, 'results'),
                        'results.json')
    with open(path, encoding='utf-8') as f:
      argv = json.load(f)['argv']
    assert os.path.basename(argv[0]) == 'run_fedhdp.py', path
    assert recorded_folder(argv) == recorded_folder(run.arguments), path

    def others(arguments):
      # As sets: a few were started by hand with --noprogress given twice.
      return {a for a in arguments if not a.startswith('--output_dir=')}

    assert others(argv[1:]) == others(run.arguments), (
        _rel(path), others(argv[1:]) ^ others(run.arguments))


def _minutes() -> dict[str, list[float]]:
  """Each kept run's wall time in minutes, by the group the README names."""
  groups = collections.defaultdict(list)
  for path in KEPT:
    with open(path, encoding='utf-8') as f:
      content = json.load(f)
    program = os.path.basename(content['argv'][0])
    for run in content['runs']:
      rounds = run['config']['rounds']
      if '--dataset=mnist5k' in content['argv']:
        group = f'mnist5k, {rounds} rounds'
      else:
        group = f'{program}, {rounds} rounds'
      groups[group].append(run['wall_clock_seconds'] / 60)
  return groups


def test_the_readme_states_the_run_times_the_files_give():
  groups = _minutes()
  assert sorted(groups) == [
      'mnist5k, 20 rounds', 'run_fedhdp.py, 500 rounds',
      'run_robust_hdp.py, 10 rounds', 'run_robust_hdp.py, 200 rounds',
      'run_robust_hdp.py, 5 rounds']
  with open(RUNS_README, encoding='utf-8') as f:
    readme = ' '.join(f.read().split())

  def span(values):
    return f'{min(values):.1f} to {max(values):.1f}'

  full = [m for g, v in groups.items() if not g.startswith('mnist5k')
          for m in v]
  ten = sorted(groups['run_robust_hdp.py, 10 rounds'])
  small = groups['mnist5k, 20 rounds']
  for words in [
      f'took {span(full)} minutes a run',
      f"500-round runs {span(groups['run_fedhdp.py, 500 rounds'])}",
      f"200-round runs {span(groups['run_robust_hdp.py, 200 rounds'])}",
      f'10-round Figure 4 runs {ten[0]:.1f} and {ten[1]:.1f}',
      f"5-round Fashion-MNIST Table 2 runs "
      f"{span(groups['run_robust_hdp.py, 5 rounds'])}",
      f'hold {len(small)} smaller runs (mnist5k, 20 rounds) of '
      f'{span(small)} minutes']:
    assert words in readme, words
