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
"""run_scripts/stats_robust_hdp.py: what it computes from runs, and its
refusals (one line each)."""

import json

from tests import binaries


def _record(algorithm, seed, accuracy, late, noise_power, clip_only=False):
  return {
      'dataset': 'mnist',
      'config': {'algorithm': algorithm, 'distribution': 'dist1',
                 'seed': seed, 'rounds': 20, 'clip_only': clip_only},
      'metrics': {'accuracy': accuracy, 'accuracy_std': 1.0,
                  'noise_power': noise_power},
      'history': [{'round': 10 * (i + 1), 'accuracy': a}
                  for i, a in enumerate(late)],
      'clients': [{'achieved_epsilon': 0.5}, {'achieved_epsilon': 2.0}],
      'wall_clock_seconds': 120.0}


def _write(path, *records, provenance=None):
  path.mkdir(parents=True)
  (path / 'results.json').write_text(json.dumps(
      {'argv': ['x'], 'provenance': provenance, 'runs': list(records)}))


def test_differences_ratios_and_seeds(tmp_path):
  _write(tmp_path / 'a', _record('robust_hdp', 0, 80.0, [70.0, 80.0], 0.2),
         _record('weiavg', 0, 60.5, [50.0, 60.0], 0.8),
         provenance={'commit': 'abcdef0123', 'cores': 1,
                     'matmul_peak_gflops': 99.94})
  _write(tmp_path / 'b', _record('robust_hdp', 1, 83.0, [83.0], 0.2))
  result = binaries.run('stats_robust_hdp.py',
                        [f'--results_dirs={tmp_path}'], timeout=120)
  assert result.returncode == 0, result.stderr
  out = result.stdout
  # The last evaluations: mean 75.0 of 70 and 80, spread 10.0.
  assert '| 80.00 (1.00) | 75.0 (70.0 to 80.0), rounds 10 to 20 | 10.0 |' in out
  assert '0.50 to 2.00 | 120 s (2.0 min) | abcdef0, 1 core, 99.9 GFLOP/s |' in out
  # WeiAvg against Robust-HDP: accuracy, last-10 mean, noise power ratio.
  assert '| WeiAvg | −19.50 | −20.00 | 4.00 |' in out
  # Robust-HDP over its two seeds.
  assert '| Robust-HDP | 80.00 (0), 83.00 (1) | 81.50 | 75.0 (0), 83.0 (1) |' in out


def test_refusals_are_one_line(tmp_path):
  binaries.assert_usage_error(
      binaries.run('stats_robust_hdp.py', [], timeout=120),
      '--results_dirs is required')
  binaries.assert_usage_error(
      binaries.run('stats_robust_hdp.py',
                   [f'--results_dirs={tmp_path / "none"}'], timeout=120),
      'is not a directory')
  binaries.assert_usage_error(
      binaries.run('stats_robust_hdp.py', [f'--results_dirs={tmp_path}'],
                   timeout=120), 'no results.json under')
  _write(tmp_path / 'fedhdp', dict(_record('robust_hdp', 0, 1.0, [], None),
                                   config={'algorithm': 'dp_fedavg'}))
  binaries.assert_usage_error(
      binaries.run('stats_robust_hdp.py', [f'--results_dirs={tmp_path}'],
                   timeout=120), "'dp_fedavg' is not a Robust-HDP rule")


def test_table2_as_measured(tmp_path):
  robust = _record('robust_hdp', 0, 1.0, [], 0.2)
  robust['history'] = [{'round': 1, 'noise_power': 0.27},
                       {'round': 2, 'noise_power': 0.27}]
  oracle = _record('oracle', 0, 1.0, [], 0.2)
  oracle['history'] = [{'round': 1, 'noise_power': 0.25}]
  _write(tmp_path / 'dist1', robust, oracle)
  result = binaries.run('stats_robust_hdp.py', [
      f'--results_dirs={tmp_path}', '--table2'], timeout=120)
  assert result.returncode == 0, result.stderr
  # The mean over the rounds, beside paper 003's Dist1 cell (0.27 both).
  assert '| Robust-HDP | 0.27 (0.27) |' in result.stdout
  assert '| Oracle | 0.25 (0.27) |' in result.stdout
  assert '| Robust-HDP over the Oracle\'s | +8.000% |' in result.stdout
  assert '| paper ÷ ours, Oracle | 1.08 |' in result.stdout
  oracle['history'] = robust['history'] = [{'round': 1}]
  (tmp_path / 'dist1' / 'results.json').unlink()
  (tmp_path / 'dist1').rmdir()
  _write(tmp_path / 'dist1', robust, oracle)
  binaries.assert_usage_error(binaries.run('stats_robust_hdp.py', [
      f'--results_dirs={tmp_path}', '--table2'], timeout=120),
                              'no run records its noise power a round')
