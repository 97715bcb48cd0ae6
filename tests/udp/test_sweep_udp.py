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
"""The Figures 2-3 sweep: its runs, the figure from finished runs, the
paper's quoted numbers beside ours, and the quotes against the paper."""

import csv
import json
import os
import subprocess
import sys

import pytest

from tff_hdp.udp import paper_tables

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

PAPER = os.path.join(REPO, '..', 'shared', 'papers', '004_612c1cf4549ba0d4.txt')


def _script(args):
  return subprocess.run(
      [sys.executable, os.path.join(REPO, 'run_scripts', 'sweep_udp.py'),
       *args], capture_output=True, text=True, timeout=300, cwd=REPO,
      check=False)


def test_list_names_every_curve_and_noiseless():
  result = _script(['--dataset=cifar10', '--list', '--', '--rounds=5'])
  assert result.returncode == 0, result.stderr
  lines = result.stdout.strip().splitlines()
  assert lines[0] == ('S0.1_sigma0.05 --algorithm=udp --clip=0.1 '
                      '--noise_stddev=0.05 --rounds=5')
  assert lines[-1] == 'noiseless --algorithm=noiseless --rounds=5'
  assert len(lines) == 5  # Four (S, sigma) curves and Noiseless.


def _record(points, final):
  return {'runs': [{
      'history': [{'round': i + 1, 'accuracy': a, 'epsilon': e}
                  for i, (e, a) in enumerate(points)],
      'metrics': {'accuracy_mean': final}}]}


def test_plot_only_draws_and_compares_with_the_paper(tmp_path):
  sweep = tmp_path / 'sweep_udp' / 'cifar10'
  runs = {
      'S0.1_sigma0.05': _record([(2.0, 40.0), (3.9, 50.0), (9.0, 80.0)],
                                80.0),
      'S0.1_sigma0.1': _record([(1.0, 15.0), (2.0, 20.0)], 20.0),
      'S0.2_sigma0.05': _record([(5.0, 60.0), (8.0, 65.0)], 65.0),
      'noiseless': {'runs': [{'history': [{'round': 1, 'accuracy': 85.0}],
                              'metrics': {'accuracy_mean': 85.0}}]},
  }
  for name, record in runs.items():
    (sweep / name).mkdir(parents=True)
    (sweep / name / 'results.json').write_text(json.dumps(record))
  result = _script(['--dataset=cifar10', '--plot_only',
                    f'--results_dir={tmp_path}'])
  assert result.returncode == 0, result.stderr
  assert (sweep / 'figures' / 'accuracy_vs_epsilon.png').stat().st_size > 0
  table = (sweep / 'table.md').read_text().splitlines()[2:]
  # eps = 4, any curve: the best at eps <= 4 is 50 (S0.1_sigma0.05).
  assert table[0] == '| accuracy | 4 | any / any | 53.95 | 50.00 |'
  # eps = 10 on (0.1, 0.05): its last point below 10.
  assert table[1] == '| accuracy | 10 | 0.1 / 0.05 | 82.23 | 80.00 |'
  assert table[2] == '| accuracy | — | 0.1 / 0.1 | 21.27 | 20.00 |'
  assert table[3] == '| accuracy | — | 0.2 / 0.05 | 69.67 | 65.00 |'


def test_gap_to_noiseless():
  runs = {'S0.05_sigma0.0015': _record([(1.0, 60.0), (2.9, 70.0),
                                        (3.5, 72.0)], 72.0)['runs'][0],
          'noiseless': {'metrics': {'accuracy_mean': 78.0}}}
  rows = paper_tables.comparison(runs, 'femnist')
  assert rows == [['gap_to_noiseless', '3', '0.05 / 0.0015', '5.31', '8.00']]


@pytest.mark.skipif(not os.path.exists(PAPER), reason='needs ../shared')
def test_quotes_are_the_papers_words():
  text = open(PAPER).read()
  with open(paper_tables.REFERENCE_CSV) as f:
    rows = list(csv.DictReader(f))
  assert len(rows) == 6
  for row in rows:
    assert f'{row["value"]}%' in text, row
