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
docs/runs/README.md's run times are the files' `wall_clock_seconds`.
"""

import collections
import glob
import json
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = os.path.join(REPO, 'docs', 'runs')
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
