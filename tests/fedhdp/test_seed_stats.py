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


# The per-row analyses (--row_analyses): each checked against a hand
# computation on a tiny made-up record.

_FLAGS = ('--preset=mnist', '--lambda_p=0.005', '--lambda_np=0.005',
          '--nopoisson_sampling', '--denominators=realised')


def _kept(algorithm, seed, acc_g, flags=(), folder='t2', metrics=None,
          **extra):
  record = _record('mnist', algorithm, seed, acc_g, [1.0], ratio=0.01).record
  record['metrics'].update(metrics or {})
  record['config']['noise_multiplier'] = 0.0 if (
      '--noise_multiplier=0' in flags) else 1.5
  record.update(extra)
  argv = ('run_fedhdp.py', f'--algorithm={algorithm}', *_FLAGS,
          f'--seed={seed}', *flags)
  return seed_stats.Kept(paper_tables.Run(f'{folder}/{seed}', 0, record),
                         argv, folder, {'num_clients': 4, 'num_classes': 2})


def test_local_test_sizes_split_each_label_evenly():
  # 5 images over 2 clients: 3 and 2; 7: 4 and 3.
  assert seed_stats.local_test_sizes({'0': 5, '1': 7}, 2) == [3, 2, 4, 3]


def test_sampling_variance_images_needed_and_standard_error():
  # 100 × 0.8 × 0.2 × 0.25.
  assert seed_stats.sampling_variance(0.8, 0.25) == pytest.approx(4.0)
  # 0.9 × 0.1 / 0.0045.
  assert seed_stats.images_needed(0.9, 0.45) == pytest.approx(20.0)
  # v = 0.0025 over 100 clients: √0.000025 = 0.005, 0.5 points.
  assert seed_stats.standard_error(0.25, 100) == pytest.approx(0.5)


def test_evaluations_read_the_rounds_and_the_last_ones():
  record = {'history': [{'round': r, 'accuracy': a} for r, a in (
      (10, 0.5), (20, 0.7), (30, 0.6), (40, 0.9))] + [{'round': 41}]}
  at, last = seed_stats.evaluations(record, at=(20, 25), last=3)
  assert at == {20: pytest.approx(70.0), 25: None}
  assert last == pytest.approx([70.0, 60.0, 90.0])


def test_cells_gaps_and_variance_ratios():
  runs = [_record('mnist', 'dp_fedavg', s, 87.0, [1.0]) for s in (0, 1)]
  for run, (acc, var) in zip(runs, ((99.5, 0.2), (99.0, 0.02))):
    run.record['metrics'].update(acc_l_p=acc, acc_l_p_var=var)
  (cell,) = seed_stats.cells(runs, 'acc_l_p')
  # The paper's DP-FedAvg cell is 99.97 (0.002).
  assert (cell.paper, cell.paper_var) == (99.97, '0.002')
  assert cell.gaps == pytest.approx({0: -0.47, 1: -0.97})
  assert seed_stats.variance_ratios([cell]) == pytest.approx([100.0, 10.0])
  assert seed_stats.cells(runs, 'acc_l_np') == []


def test_paper_cell_matches_non_private_by_its_lambda_np_alone():
  reference = paper_tables.load_reference()
  record = _kept('non_private', 0, 94.0).run.record
  assert seed_stats.paper_cell(reference, record).table == 2
  record['config']['lambda_np'] = 0.05
  # Table 8's row has λ_p = λ_np = 0.05; the baseline has no private
  # clients.
  row = seed_stats.paper_cell(reference, record)
  assert (row.table, row.values['acc_l_np']) == (8, 99.93)


def test_clipped_non_private_and_gains_at_a_setting():
  table = [_kept('non_private', 0, 95.0), _kept('non_private', 1, 94.0),
           _kept('dp_fedavg', 0, 87.0), _kept('dp_fedavg', 1, 88.0),
           _kept('fedhdp', 0, 91.0), _kept('fedhdp', 1, 92.0)]
  off = ['--noise_multiplier=0']
  slow = ['--learning_rate=0.35']
  kept = [_kept('dp_fedavg', 0, 93.5, off, 'off'),
          _kept('dp_fedavg', 1, 92.5, off, 'off'),
          _kept('dp_fedavg', 0, 86.0, slow, 'eta'),
          _kept('dp_fedavg', 1, 86.5, slow, 'eta'),
          _kept('fedhdp', 1, 90.0, slow, 'eta')]
  ((row, clipped),) = seed_stats.clipped_non_private(table, kept)
  # Non-Private 94.5 (spread 1.0) against the paper's 93.80; clipped 93.0.
  assert (row.mean, row.spread, clipped.mean) == (94.5, 1.0, 93.0)
  (gain,) = seed_stats.setting_gains(seed_stats.ablations(table, kept))
  # Only seed 1 ran both: 90.0 − 86.5; Table 2's at seed 1: 92.0 − 88.0.
  assert (gain.folder, gain.setting) == ('eta', ('--learning_rate=0.35',))
  assert (gain.per_seed, gain.table_mean) == ({1: 3.5}, 4.0)


def test_markdown_rows_prints_the_personal_models_and_standard_errors():
  personal = {'acc_l_pool_np': 99.5, 'acc_l_train_np': 100.0,
              'images_holding_90pct_of_misses': 3,
              'most_missed': [[7, 1, 0.5], [8, 1, 0.25], [9, 0, 0.125]],
              'pool_size': {'0': 5, '1': 7}}
  history = [{'round': r, 'accuracy': a} for r, a in (
      (250, 0.9), (400, 0.95), (490, 0.93), (500, 0.94))]
  table = [_kept('non_private', 0, 95.0, metrics={'acc_l_np': 99.75}),
           _kept('hdp_fedavg', 0, 86.0, metrics={
               'acc_l_p': 99.5, 'acc_l_np': 99.0, 'acc_l_np_var': 0.25,
               'acc_g_p': 80.0, 'acc_g_p_var': 4.0},
                 setup={'num_opted_out': 100})]
  kept = [_kept('non_private', 0, 94.0, ['--ditto_init=initial'], 'p',
                metrics={'acc_l_np': 99.8}, personal_models=personal,
                history=history)]
  text = seed_stats.markdown_rows(table, kept)
  # Missed: 100 − 99.5; the paper's Table 2 cell 99.98; 99.8 − 99.98; the
  # last 8 evaluations are all 4: 90.0 to 95.0, 5.00 apart.
  assert ('| `--ditto_init=initial` | 0 | 99.80 | 99.50 | 0.50 | 100.00 | '
          '3 | 7 (1), 50.0 | 12.5 to 25.0 | 99.98 (Table 2) | −0.18 | '
          '90.00, 95.00, 94.00 | 90.00 to 95.00 (5.00) |') in text
  assert 'in 1 of these 1 runs' in text
  # Acc_l: 99.75 − 99.98, 99.5 − 99.97 and 99.0 − 99.93, all under.
  assert ('(3 Acc_l cells of 2 runs): ours − paper from −0.23 to −0.93, '
          'ours under the paper\'s in 3 of 3; the paper\'s cells from 99.93 '
          'to 99.98.') in text
  # Sizes 3, 2, 4, 3 (2 clients a label): the mean of 1/n_k is
  # (1/3 + 1/2 + 1/4 + 1/3) / 4 = 0.3542.
  assert 'the mean of 1/n_k over the 4 clients: 0.3542.' in text
  # 100 × 0.8 × 0.2 × 0.3542 = 5.67 of the 4.00 measured: 1.42 of it.
  assert '| 0.8000 (0) | 5.67 (0) | 4.00 (0) | 1.42 (0) |' in text
  # The standard error 0.50 (above); (99.93 − 99.0) / 0.5 = 1.86.
  assert ('| 100 | 99.00 (0) | 0.0025 (0) | 0.50 (0) | 99.93 | 1.86 (0) |'
          ) in text


def test_row_analyses_need_ablation_dirs():
  binaries.assert_usage_error(
      binaries.run('stats_fedhdp.py', ['--row_analyses'], timeout=120),
      '--row_analyses needs --ablation_dirs')
