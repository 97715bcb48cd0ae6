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
"""run_scripts/sweep_robust_hdp.py: the runs each figure needs, the figures'
data from results records, the figures drawn, a real run swept, bad flags."""

import json
import os

import matplotlib
import numpy as np
import pytest

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top,wrong-import-position

from tff_hdp.run_scripts import sweep_robust_hdp as sweep  # pylint: disable=g-import-not-at-top,wrong-import-position
from tff_hdp.robust_hdp import rule_registry  # pylint: disable=g-import-not-at-top,wrong-import-position
from tests import binaries  # pylint: disable=g-import-not-at-top,wrong-import-position

Run = sweep.Run


def _run(args, timeout=600):
  return binaries.run('sweep_robust_hdp.py', args, timeout)


def _before_tensorflow(args):
  """A command that ends before any run starts (--list, a refusal), in the
  process `binaries.run_before_tensorflow` keeps."""
  return binaries.run_before_tensorflow('sweep_robust_hdp.py', args)


def test_runs_for_each_figure():
  assert sweep.runs_for([3], ['dist1'], [5, 6], [20, 40]) == [
      Run('dist6', 20, 5)]
  assert sweep.runs_for([4], ['dist1'], [5], [20]) == [Run('dist8', 20, 5)]
  runs = sweep.runs_for([2, 3, 4, 5], ['dist6', 'dist8'], [0, 1],
                        [20, 40, 60])
  # Figure 2's grid, then only what it does not already hold.
  assert runs == [Run('dist6', 20, 0), Run('dist6', 20, 1),
                  Run('dist8', 20, 0), Run('dist8', 20, 1),
                  Run('dist6', 40, 0), Run('dist6', 60, 0)]


def _record(algorithm, distribution, seed, accuracy, eps=(2.0, 1.0, 3.0),
            n=3):
  return {
      'config': {'algorithm': algorithm, 'distribution': distribution,
                 'seed': seed, 'epsilons': list(eps)[:n]},
      'metrics': {'accuracy': accuracy},
      'model_parameters': 100,
      'clients': [{'target_epsilon': e, 'true_sigma2': 10.0 * e}
                  for e in eps[:n]],
      'history': [{'round': 1, 'sigma_hat2': [1.0, 2.0, 3.0],
                   'accuracy': None},
                  {'round': 2, 'sigma_hat2': [3.0, 4.0, 5.0],
                   'accuracy': accuracy}],
  }


def test_figure4_data_sorts_by_epsilon_and_averages_rounds():
  eps, true, estimate = sweep.figure4_data(
      _record('robust_hdp', 'dist8', 0, 50.0))
  np.testing.assert_array_equal(eps, [1.0, 2.0, 3.0])
  np.testing.assert_array_equal(true, [10.0, 20.0, 30.0])
  # Client order (2.0, 1.0, 3.0): means over rounds 2, 3, 4 -> sorted 3, 2, 4;
  # times p = 100 (eq. (7) is the whole update's variance).
  np.testing.assert_array_equal(estimate, [300.0, 200.0, 400.0])


def test_figure4_summary_states_the_ratio_and_rank_agreement():
  # Sorted by epsilon: true 10, 20, 30 against estimates 300, 200, 400:
  # ratios 30, 10, 13.33; ranks (0, 1, 2) against (1, 0, 2): rho = 0.5.
  line = sweep.figure4_summary(_record('robust_hdp', 'dist8', 0, 50.0))
  assert line == ('figure 4 (dist8, seed 0, 2 rounds): p sigma^_i^2 / '
                  'sigma_i^2 from 10.000 to 30.000 (mean 17.778) over 3 '
                  'clients; rank correlation 0.500')


def test_figure2_data_mean_and_std_over_seeds():
  runs = {Run('dist1', 20, s): {a: _record(a, 'dist1', s, acc)
                                for a in rule_registry.names()}
          for s, acc in [(0, 40.0), (1, 60.0)]}
  data = sweep.figure2_data(runs, ['dist1', 'dist2'], [0, 1])
  means, stds = data['robust_hdp']
  assert means[0] == 50.0 and stds[0] == 10.0
  assert np.isnan(means[1]) and np.isnan(stds[1])  # no dist2 runs
  one_seed = sweep.figure2_data(runs, ['dist1'], [1])['robust_hdp']
  assert one_seed[0] == [60.0] and np.isnan(one_seed[1][0])  # no spread


def test_load_runs_merges_the_rules_of_one_run_split_over_directories(
    tmp_path):
  # dist6 seed 0's rules run in two halves into two directories, as the
  # README's Figure 3 run does; dist1 seed 0 in one.
  halves = {'dist6_n20_seed0_a': ['robust_hdp', 'weiavg'],
            'dist6_n20_seed0_b': ['oracle'],
            'dist1_n20_seed0': ['robust_hdp']}
  for name, rules in halves.items():
    (tmp_path / name).mkdir()
    distribution = name.split('_')[0]
    records = [_record(a, distribution, 0, 50.0) for a in rules]
    (tmp_path / name / 'results.json').write_text(
        json.dumps({'runs': records}))
  (tmp_path / 'figures').mkdir()  # No results.json: skipped.
  runs = sweep.load_runs(str(tmp_path))
  assert set(runs) == {Run('dist6', 3, 0), Run('dist1', 3, 0)}
  assert set(runs[Run('dist6', 3, 0)]) == {'robust_hdp', 'weiavg', 'oracle'}
  assert set(runs[Run('dist1', 3, 0)]) == {'robust_hdp'}


def test_late_evaluations_summarise_each_rules_last_evaluations():
  record = _record('weiavg', 'dist1', 0, 55.0)
  record['history'] = [{'round': r, 'accuracy': a} for r, a in
                       [(10, 20.0), (20, 26.0), (30, 61.0), (40, None),
                        (50, 55.0)]]
  runs = {Run('dist1', 20, 0): {'weiavg': record,
                                'oracle': _record('oracle', 'dist1', 0, 84.0)}}
  text = sweep.late_evaluations(runs, ['dist1', 'dist3'], [0, 1], last=3)
  # WeiAvg: the last 3 of its 4 evaluations, 26, 61, 55; the Oracle's
  # record has one (round 2).
  assert text == ('- dist1, seed 0, mean (lowest to highest) of the last 3 '
                  'evaluations (rounds 20 to 50): WeiAvg 47.3 (26.0 to '
                  '61.0); Oracle 84.0 (84.0 to 84.0) [rounds 2 to 2]')
  # Fewer evaluations than `last`: the line counts the ones there are.
  text = sweep.late_evaluations(runs, ['dist1'], [0], last=10)
  assert text.startswith('- dist1, seed 0, mean (lowest to highest) of the '
                         'last 4 evaluations (rounds 10 to 50): WeiAvg 40.5 '
                         '(20.0 to 61.0)')


def test_figure2_table_means_stds_and_claims():
  # Two seeds of dist1 (Robust-HDP 60 and 62, WeiAvg 50 and 54, Oracle 61 and
  # 61), PFA on seed 0 only; minimum eps and non-private not run; dist3 not
  # run at all.
  accuracies = {'robust_hdp': (60.0, 62.0), 'weiavg': (50.0, 54.0),
                'dpfedavg': (40.0, 40.0), 'oracle': (61.0, 61.0)}
  runs = {Run('dist1', 20, s): {a: _record(a, 'dist1', s, acc[s])
                                for a, acc in accuracies.items()}
          for s in (0, 1)}
  runs[Run('dist1', 20, 0)]['pfa'] = _record('pfa', 'dist1', 0, 30.0)
  table = sweep.figure2_table(runs, ['dist1', 'dist3'], [0, 1, 2])
  lines = table.splitlines()
  assert lines[0] == '| rule | dist1 (2 seeds) | dist3 (0 seeds) |'
  assert '| Robust-HDP | 61.0 ± 1.0 | - |' in lines
  assert '| WeiAvg | 52.0 ± 2.0 | - |' in lines
  assert '| Oracle | 61.0 ± 0.0 | - |' in lines
  assert '| PFA | 30.0 (1 seed) | - |' in lines  # Seed 0 only: no spread.
  assert not any(line.startswith('| minimum eps') for line in lines)
  assert lines[-1] == (
      '- dist1: Robust-HDP >= every private baseline run (WeiAvg, PFA, '
      'DPFedAvg): yes (61.00 vs 52.00, WeiAvg); within 2 points of the '
      'Oracle: yes (61.00 vs 61.00)')


def test_draw_writes_every_figure(tmp_path):
  runs = {}
  for d, n in [('dist6', 20), ('dist8', 20), ('dist6', 40)]:
    runs[Run(d, n, 0)] = {a: _record(a, d, 0, 30.0 + n)
                          for a in rule_registry.names()}
  written = sweep.draw(plt, runs, str(tmp_path), 'digits', ['dist6', 'dist8'],
                       [0], [20, 40, 60], [2, 3, 4, 5])
  assert [os.path.basename(p) for p in written] == [
      'figure2_accuracy.png', 'figure3_convergence.png',
      'figure4_noise_estimates.png', 'figure5_privacy_and_clients.png']
  for path in written:
    with open(path, 'rb') as f:
      assert f.read(8) == b'\x89PNG\r\n\x1a\n'
  # Without Dist8's run there is no Figure 4.
  del runs[Run('dist8', 20, 0)]
  written = sweep.draw(plt, runs, str(tmp_path / 'b'), 'digits', ['dist6'],
                       [0], [20], [4])
  assert not written


def test_list_names_the_runs():
  result = _before_tensorflow(['--figures=3,4', '--list'])
  assert result.returncode == 0, result.stderr
  assert result.stdout.splitlines() == [
      'dist6_n20_seed0\t--privacy_distribution=dist6 --num_clients=20 '
      '--seed=0',
      'dist8_n20_seed0\t--privacy_distribution=dist8 --num_clients=20 '
      '--seed=0']


def test_per_rule_gives_each_rule_its_own_folder():
  assert sweep._jobs(Run('dist1', 20, 0), ['oracle', 'weiavg'], True) == [
      ('dist1_n20_seed0_oracle', ['oracle']),
      ('dist1_n20_seed0_weiavg', ['weiavg'])]
  assert sweep._jobs(Run('dist1', 20, 0), ['oracle', 'weiavg'], False) == [
      ('dist1_n20_seed0', ['oracle', 'weiavg'])]
  assert sweep._jobs(Run('dist1', 20, 0), list(rule_registry.names()),
                     False) == [('dist1_n20_seed0', ['all'])]
  result = _before_tensorflow(['--figures=4', '--per_rule',
                               '--algorithms=robust_hdp,pfa', '--list'])
  assert result.returncode == 0, result.stderr
  assert [line.split('\t')[0] for line in result.stdout.splitlines()] == [
      'dist8_n20_seed0_robust_hdp', 'dist8_n20_seed0_pfa']


def test_reproducible_gives_each_run_its_seed_as_mechanism_seed():
  result = _before_tensorflow(['--figures=2', '--distributions=dist1',
                               '--seeds=0,1', '--reproducible', '--list'])
  assert result.returncode == 0, result.stderr
  assert [line.split('\t')[1].split()[-1]
          for line in result.stdout.splitlines()] == [
              '--mechanism_seed=0', '--mechanism_seed=1']


def test_figure2_claim_says_when_a_mechanism_seed_was_published():
  runs = {Run('dist1', 20, s): {
      a: _record(a, 'dist1', s, acc) for a, acc in
      [('robust_hdp', 60.0), ('weiavg', 50.0)]} for s in (0, 1)}
  assert 'NOT a guarantee' not in sweep.figure2_table(runs, ['dist1'], [0, 1])
  for s in (0, 1):
    for record in runs[Run('dist1', 20, s)].values():
      record['config']['mechanism_seed'] = s
  assert sweep.figure2_table(runs, ['dist1'], [0, 1]).splitlines()[-1] == (
      '- dist1: Robust-HDP >= every private baseline run (WeiAvg): yes '
      '(60.00 vs 50.00, WeiAvg); epsilon is the mechanism\'s, NOT a '
      'guarantee for these outputs: their noise and sampling can be '
      'regenerated from the published mechanism_seed=0,1')


def test_sweeps_a_real_run_then_skips_it(tmp_path):
  # Two rules in one run's folder: Robust-HDP (Figure 4's) and the Oracle.
  # (The sweep's 'all' and --per_rule's folders are
  # test_per_rule_gives_each_rule_its_own_folder's; every rule's run,
  # tests/robust_hdp/test_process.py's.) The run is made with --runs_only
  # (make demo's seeds), which draws nothing.
  args = ['--figures=4', '--dataset=digits', f'--results_dir={tmp_path}',
          '--algorithms=robust_hdp,oracle', '--', '--model=fc', '--rounds=2',
          '--backend=direct', '--rpca_max_iterations=100',
          '--checkpoint_every=1']
  first = _run(['--runs_only'] + args)
  assert first.returncode == 0, first.stderr
  assert 'wrote' not in first.stdout
  assert not (tmp_path / 'sweep_robust_hdp' / 'digits' / 'figures').exists()
  run_dir = tmp_path / 'sweep_robust_hdp' / 'digits' / 'dist8_n20_seed0'
  with open(run_dir / 'results.json') as f:
    records = json.load(f)['runs']
  assert [r['config']['algorithm'] for r in records] == ['robust_hdp',
                                                         'oracle']
  assert records[0]['config']['distribution'] == 'dist8'
  # Neither the skip nor the refusal starts a run (nor TensorFlow); the
  # skip draws the figures from the finished run.
  second = _before_tensorflow(args)
  assert second.returncode == 0, second.stderr
  assert 'skip dist8_n20_seed0: results exist' in second.stdout
  assert (tmp_path / 'sweep_robust_hdp' / 'digits' / 'figures' /
          'figure4_noise_estimates.png').exists()
  # A secret-key run is not reused as a reproducible one (or back).
  third = _before_tensorflow(args[:3] + ['--reproducible'] + args[3:])
  binaries.assert_usage_error(
      third, f'{run_dir} holds a run with mechanism_seed=None, this sweep '
      'asks for 0')
  # With --per_rule a finished rule's results.json, copied in alone from
  # elsewhere (another machine or session, a tracked archive), is skipped:
  # the sweep resumes rule by rule (a per-rule run goes through the same
  # `run_one` as the run above, its rule as --algorithm).
  rule_dir = run_dir.parent / 'dist8_n20_seed0_oracle'
  rule_dir.mkdir()
  (rule_dir / 'results.json').write_text(json.dumps({'runs': records[1:]}))
  fourth = _before_tensorflow(args[:3] + ['--per_rule', '--runs_only',
                                          '--algorithms=oracle'] + args[4:])
  assert fourth.returncode == 0, fourth.stderr
  assert 'skip dist8_n20_seed0_oracle: results exist' in fourth.stdout
  assert os.listdir(rule_dir) == ['results.json']  # It started no run.


@pytest.mark.parametrize('args,message', [
    (['--figures=7'], '--figures: [7] not among 2, 3, 4, 5'),
    (['--figures=x'], '--figures takes integers'),
    (['--distributions=dist10'], '--distributions: dist10 unknown'),
    (['--client_counts=30'], '--client_counts: [30]; allowed: 20, 40, 60'),
    (['--seeds='], '--seeds needs at least one seed'),
    (['--parallel=0'], '--parallel must be >= 1'),
    (['--algorithms=fedavg'], '--algorithms: fedavg; allowed: all, '),
    (['--per_rule', '--', '--algorithm=oracle'],
     '--per_rule runs the rules of --algorithms one by one'),
    (['--reproducible', '--', '--mechanism_seed=3'],
     '--reproducible sets each run\'s --mechanism_seed'),
    (['--plot_only', '--runs_only'], '--plot_only draws without running, '
     '--runs_only runs without drawing: pass at most one'),
])
def test_bad_flags_one_line_exit_2_nothing_written(tmp_path, args, message):
  result = _before_tensorflow([f'--results_dir={tmp_path / "r"}'] + args)
  binaries.assert_usage_error(result, message)
  assert not (tmp_path / 'r').exists()
