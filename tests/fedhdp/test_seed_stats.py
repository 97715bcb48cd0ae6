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
"""Table 2's seed statistics: computed, and the page's are the command's."""

import os
import re
import statistics

import pytest

from tests import binaries
from tff_hdp.fedhdp import paper_tables
from tff_hdp.fedhdp import seed_stats

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
RUNS = os.path.join(REPO, 'docs', 'runs', 'paper_scale')
NOISE_OFF = [os.path.join(REPO, 'docs', 'runs', name) for name in
             ('paper_scale_noise_off', 'paper_scale_noise_off_fedhdp')]
PAGE = os.path.join(REPO, 'docs', 'results', 'paper001.md')


def _record(dataset, algorithm, seed, acc_g, clips, ratio=0.1):
  return paper_tables.Run('x', 0, {
      'dataset': 'mnist',
      'config': {'algorithm': algorithm, 'seed': seed, 'ratio': ratio,
                 'lambda_p': 0.005, 'lambda_np': 0.005, 'ditto': True,
                 'skewed_optout': dataset == 'skewed_mnist'},
      'metrics': {'acc_g': acc_g},
      'history': [{'clip_norm': c} for c in clips]})


def test_means_spreads_and_gains_over_the_same_seeds():
  runs = [_record('mnist', 'dp_fedavg', 0, 87.0, [1.0, 2.0]),
          _record('mnist', 'dp_fedavg', 1, 88.0, [1.0]),
          _record('mnist', 'fedhdp', 0, 90.0, [0.5], ratio=0.01),
          _record('mnist', 'fedhdp', 1, 92.5, [0.5], ratio=0.01),
          _record('mnist', 'fedhdp', 2, 91.0, [0.5], ratio=0.01)]
  dp, fedhdp = seed_stats.rows(runs)
  assert (dp.algorithm, dp.mean, dp.spread, dp.paper) == (
      'dp_fedavg', 87.5, 1.0, 88.75)
  assert dp.clip == {0: 1.5, 1: 1.0}
  assert fedhdp.mean == pytest.approx(statistics.fmean([90.0, 92.5, 91.0]))
  (gain,) = seed_stats.gains([dp, fedhdp])
  # Seed 2 ran for FedHDP only: the gain is over seeds 0 and 1.
  assert gain.per_seed == {0: 3.0, 1: 4.5}
  assert gain.mean == 3.75
  assert gain.paper == pytest.approx(92.48 - 88.75)
  with pytest.raises(ValueError, match='a second run'):
    seed_stats.rows(runs + [_record('mnist', 'dp_fedavg', 0, 1.0, [1.0])])


def test_clipping_and_noise_costs_from_noise_off_runs():
  runs = [_record('mnist', 'non_private', 0, 95.0, []),
          _record('mnist', 'non_private', 1, 94.0, []),
          _record('mnist', 'dp_fedavg', 0, 87.0, [1.0]),
          _record('mnist', 'dp_fedavg', 1, 88.0, [1.0])]
  off = [_record('mnist', 'dp_fedavg', s, a, [1.0]) for s, a in
         ((0, 93.0), (1, 93.5), (2, 92.5))]
  for run in off:
    run.record['config']['noise_multiplier'] = 0.0
  (cost,) = seed_stats.costs(seed_stats.rows(runs), off)
  # Non-Private 94.5, noise off 93.0 (three seeds), as run 87.5.
  assert (cost.clipping, cost.noise) == (1.5, 5.5)
  assert seed_stats.costs(seed_stats.rows(runs), off[:0]) == []


def test_the_page_holds_the_commands_output():
  with open(PAGE, encoding='utf-8') as f:
    page = f.read()
  block = re.search(r'<!-- stats_fedhdp.py: begin -->\n(.*?)\n'
                    r'<!-- stats_fedhdp.py: end -->', page, re.S).group(1)
  noise_off = [run for d in NOISE_OFF for run in paper_tables.load_runs(d)]
  assert block == seed_stats.markdown(paper_tables.load_runs(RUNS),
                                      noise_off)
  result = binaries.run('stats_fedhdp.py', [
      f'--results_dir={RUNS}', f'--noise_off_dirs={",".join(NOISE_OFF)}'],
                        timeout=120)
  assert result.returncode == 0, result.stderr
  assert result.stdout.strip() == block
