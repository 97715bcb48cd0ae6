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
"""Table 2's ablations over seeds: settings read from the command lines,
means beside the Table 2 row at the same seeds, what the noise costs."""

import json

import pytest

from tests import binaries
from tff_hdp.fedhdp import paper_tables
from tff_hdp.fedhdp import seed_stats

_TABLE2_FLAGS = ('--preset=mnist', '--lambda_p=0.005', '--lambda_np=0.005',
                 '--nopoisson_sampling', '--denominators=realised',
                 '--backend=direct', '--noprogress')


def _kept(algorithm, seed, acc_g, flags=(), clips=(1.0,), folder='t2',
          noise=1.5):
  argv = ('run_scripts/run_fedhdp.py', f'--algorithm={algorithm}',
          *_TABLE2_FLAGS, f'--seed={seed}', f'--output_dir=results/{seed}',
          *flags)
  record = {
      'dataset': 'mnist',
      'config': {'algorithm': algorithm, 'seed': seed, 'ratio': 0.1,
                 'lambda_p': 0.005, 'lambda_np': 0.005, 'ditto': True,
                 'skewed_optout': False, 'noise_multiplier': noise},
      'metrics': {'acc_g': acc_g, 'acc_l_p': 99.0, 'acc_l_np': 99.5},
      'history': [{'clip_norm': c} for c in clips]}
  return seed_stats.Kept(paper_tables.Run(f'{seed}', 0, record), argv,
                         folder)


def test_flags_of_keeps_the_last_value_and_drops_what_changes_nothing():
  assert seed_stats.flags_of([
      'run.py', '--lambda_np=0.005', '--seed=3', '--noprogress',
      '--output_dir=x', '--lambda_np=0.05', '--nopoisson_sampling']) == {
          'lambda_np': '0.05', 'nopoisson_sampling': ''}


def test_settings_are_what_the_command_changed_over_the_same_seeds():
  table = [_kept('dp_fedavg', s, a) for s, a in ((0, 87.0), (1, 88.0),
                                                   (2, 86.0))]
  kept = [_kept('dp_fedavg', 0, 89.0, ['--clip_learning_rate=0'],
                clips=(0.5, 0.5), folder='held'),
          _kept('dp_fedavg', 1, 88.5, ['--clip_learning_rate=0'],
                clips=(0.5, 0.5), folder='held'),
          # The same flag as Table 2's, given again: not a change.
          _kept('dp_fedavg', 0, 86.5, ['--lambda_np=0.005'], folder='again')]
  held, again = seed_stats.ablations(table, kept)
  assert (held.folder, held.setting) == ('held', ('--clip_learning_rate=0',))
  assert held.acc_g == {0: 89.0, 1: 88.5}
  assert held.mean == 88.75
  # Table 2's row over seeds 0 and 1 only, not over its three seeds.
  assert held.table_mean == 87.5
  assert held.table.paper == 88.75
  assert held.clip == {0: 0.5, 1: 0.5}
  assert held.clip_max == {0: 0.5, 1: 0.5}
  assert held.acc_l == {0: 99.0, 1: 99.0}
  assert held.paper_acc_l == 99.97
  assert again.setting == ()
  with pytest.raises(ValueError, match='a second run'):
    seed_stats.ablations(table, kept + [kept[0]])
  with pytest.raises(ValueError, match='no Table 2 run of mnist hdp_fedavg'):
    seed_stats.ablations(table, [_kept('hdp_fedavg', 0, 80.0)])


def test_the_noise_costs_against_the_same_setting_with_the_noise_on():
  table = [_kept('dp_fedavg', s, a) for s, a in ((0, 87.0), (1, 88.0))]
  held = ['--clip_learning_rate=0', '--initial_clip=0.9']
  kept = [_kept('dp_fedavg', 0, 93.0, ['--noise_multiplier=0'], noise=0.0),
          _kept('dp_fedavg', 0, 86.0, held),
          _kept('dp_fedavg', 1, 87.0, held),
          _kept('dp_fedavg', 0, 92.0, held + ['--noise_multiplier=0'],
                noise=0.0),
          _kept('dp_fedavg', 0, 90.0, ['--noise_multiplier=0.75'])]
  found = seed_stats.ablations(table, kept)
  at_held, adaptive = seed_stats.noise_costs(found)
  # In the order of the settings: against the held clip's noised runs
  # (seeds 0 and 1, mean 86.5), then against Table 2's row. Half the
  # noise is not off.
  assert (adaptive.on, adaptive.cost) == ({0: 87.0, 1: 88.0}, 5.5)
  assert (at_held.on, at_held.cost) == ({0: 86.0, 1: 87.0}, 5.5)
  text = seed_stats.markdown_ablations(table, kept)
  assert '| 5.50 |' in text
  assert '`--noise_multiplier=0.75`' in text


def test_summary_and_setting_line():
  table = [_kept('dp_fedavg', 0, 87.75), _kept('non_private', 0, 94.0)]
  lines = seed_stats.summary(seed_stats.rows([k.run for k in table]))
  # One private run, 1.00 under the paper's 88.75.
  assert lines[0] == ('Table 2\'s private runs (1): Acc_g − paper from '
                      '−1.00 to −1.00, mean −1.00.')
  line = seed_stats.setting_line(table)
  assert line.startswith('Every Table 2 run (2) has ')
  assert 'noise_multiplier=1.5' in line and 'lambda_np=0.005' in line


def test_load_kept_refuses_a_file_of_several_runs(tmp_path):
  run = _kept('dp_fedavg', 0, 87.0).run.record
  (tmp_path / 'a').mkdir()
  (tmp_path / 'a' / 'results.json').write_text(json.dumps(
      {'argv': ['x.py', '--seed=0'], 'runs': [run]}))
  (kept,) = seed_stats.load_kept(str(tmp_path))
  assert (kept.argv, kept.folder) == (('x.py', '--seed=0'), str(tmp_path))
  (tmp_path / 'b').mkdir()
  (tmp_path / 'b' / 'results.json').write_text(json.dumps(
      {'argv': ['x.py'], 'runs': [run, run]}))
  with pytest.raises(ValueError, match='2 runs in one file'):
    seed_stats.load_kept(str(tmp_path))
  (tmp_path / 'b' / 'results.json').write_text(json.dumps({'runs': [run]}))
  with pytest.raises(ValueError, match='no argv'):
    seed_stats.load_kept(str(tmp_path))


def test_the_binary_refuses_a_folder_of_other_runs_in_one_line(tmp_path):
  binaries.assert_usage_error(binaries.run('stats_fedhdp.py', [
      '--ablation_dirs=docs/runs/paper_scale_robust'], timeout=120),
                              'no Table 2 run of mnist')
  binaries.assert_usage_error(binaries.run('stats_fedhdp.py', [
      f'--ablation_dirs={tmp_path / "none"}'], timeout=120),
                              'is not a directory')
