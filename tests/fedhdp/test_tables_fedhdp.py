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
"""End-to-end tests of run_scripts/tables_fedhdp.py and plots_fedhdp.py.

The results directory is a fixture written by hand in the schema of
`run_fedhdp.py`'s `results.json` (made-up numbers, not results).
"""

import csv
import io
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests import binaries
from tff_hdp.fedhdp import paper_tables

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_TABLES = os.path.join('run_scripts', 'tables_fedhdp.py')
_PLOTS = os.path.join('run_scripts', 'plots_fedhdp.py')
_OUTPUTS = ('comparison.md', 'comparison.tex', 'comparison.csv')


def _run(script, *args):
  return subprocess.run([sys.executable, script, *args], cwd=_REPO_ROOT,
                        capture_output=True, text=True, timeout=120,
                        check=False)


def _metrics(algorithm, base):
  private = algorithm != 'non_private'
  nonprivate = algorithm != 'dp_fedavg'
  m = {'acc_g': base}
  m['acc_g_p'], m['acc_g_p_var'] = ((base - 1, 0.4) if private else
                                    (None, None))
  m['acc_g_np'], m['acc_g_np_var'] = ((base + 1, 0.2) if nonprivate else
                                      (None, None))
  m['acc_l_p'], m['acc_l_p_var'] = ((99.0, 0.001) if private else
                                    (None, None))
  m['acc_l_np'], m['acc_l_np_var'] = ((99.5, 0.002) if nonprivate else
                                      (None, None))
  both = private and nonprivate
  m['delta_g'] = m['acc_g_np'] - m['acc_g_p'] if both else None
  m['delta_l'] = m['acc_l_np'] - m['acc_l_p'] if both else None
  return m


def _record(dataset, algorithm, base, ratio=0.01, lam=0.005, seed=0):
  config = {'algorithm': algorithm, 'ditto': True, 'ratio': ratio,
            'lambda_p': lam, 'lambda_np': lam, 'model': 'fc', 'rounds': 4,
            'clients_per_round': 10, 'sampling_rate': 0.05,
            'noise_multiplier': 1.5, 'delta': 1e-4, 'optout_fraction': 0.05,
            'skewed_optout': False, 'eval_every': 2, 'seed': seed,
            'backend': 'tff'}
  history = []
  for t in range(1, 5):
    entry = {'round': t, 'num_clients': 10, 'clip_norm': 0.5 + 0.1 * t,
             'unclipped_fraction': 0.5, 'private/count': 9.0,
             'private/weight': 0.9, 'non_private/count': 1.0,
             'non_private/weight': 0.1}
    if t % 2 == 0:
      entry.update(loss=2.0 / t, accuracy=base / 100 * t / 4)
    history.append(entry)
  name = algorithm + (f'_r{ratio:g}' if algorithm == 'fedhdp' else '')
  return {'config': config, 'dataset': dataset,
          'metrics': _metrics(algorithm, base),
          'epsilon': {} if algorithm == 'non_private' else {'private': 3.5},
          'history': history, 'name': name, 'wall_clock_seconds': 1.0}


def _write(path, runs):
  os.makedirs(path, exist_ok=True)
  with open(os.path.join(path, 'results.json'), 'w') as f:
    json.dump({'preset': {'dataset': 'x'}, 'argv': ['run_fedhdp.py'],
               'runs': runs}, f)


@pytest.fixture
def results_dir(tmp_path):
  root = tmp_path / 'results'
  _write(str(root / 'mnist'), [
      _record('mnist', 'non_private', 93.0),
      _record('mnist', 'fedhdp', 90.0, ratio=0.01),
      _record('mnist', 'dp_fedavg', 88.0),
      _record('mnist', 'hdp_fedavg', 87.0),
  ])
  _write(str(root / 'mnist' / 'sweep' / 'r0.1'),
         [_record('mnist', 'fedhdp', 89.0, ratio=0.1)])
  _write(str(root / 'digits'), [_record('digits', 'fedhdp', 50.0)])
  _write(str(root / 'a_femnist'),
         [_record('femnist', 'dp_fedavg', 70.0, lam=0.05)])
  return str(root)


def _read_csv(path):
  with open(path, newline='') as f:
    return list(csv.DictReader(f))


def _by_name(rows, dataset):
  return {r['name']: r for r in rows if r['dataset'] == dataset}


def _bytes(directory, names):
  out = {}
  for name in names:
    with open(os.path.join(directory, name), 'rb') as f:
      out[name] = f.read()
  return out


def test_tables_compare_with_paper(results_dir, tmp_path):
  out = str(tmp_path / 'tables')
  result = _run(_TABLES, f'--results_dir={results_dir}', f'--output_dir={out}')
  assert result.returncode == 0, result.stderr
  assert sorted(os.listdir(out)) == sorted(_OUTPUTS)
  with open(os.path.join(out, 'comparison.md')) as f:
    markdown = f.read()
  assert markdown in result.stdout
  rows = _read_csv(os.path.join(out, 'comparison.csv'))
  assert len(rows) == 7
  # Paper datasets first, in the papers' order, then the rest.
  assert [r['dataset'] for r in rows] == ['mnist'] * 5 + ['femnist', 'digits']
  assert [r['algorithm'] for r in rows[:5]] == [
      'non_private', 'dp_fedavg', 'hdp_fedavg', 'fedhdp', 'fedhdp']
  reference = paper_tables.load_reference()
  mnist = _by_name(rows, 'mnist')
  for name, ratio in (('fedhdp_r0.01', 0.01), ('fedhdp_r0.1', 0.1)):
    paper = paper_tables.find_row(reference, dataset='mnist',
                                  algorithm='fedhdp', r=ratio,
                                  lambda_p=0.005, lambda_np=0.005)
    row = mnist[name]
    assert row['paper_table'] == '8'
    for metric in paper_tables.METRICS:
      assert row[f'paper_{metric}'] == paper.printed[metric]
      if row[metric]:
        assert float(row[f'diff_{metric}']) == pytest.approx(
            float(row[metric]) - paper.values[metric])
    cell = (f"{float(row['acc_g']):.2f} / {paper.printed['acc_g']} "
            f"[{float(row['acc_g']) - paper.values['acc_g']:+.2f}]")
    assert cell in markdown
  assert mnist['fedhdp_r0.01']['paper_epsilon'] == '3.6'
  assert float(mnist['fedhdp_r0.01']['diff_epsilon']) == pytest.approx(-0.1)
  assert mnist['non_private']['epsilon'] == ''
  assert mnist['non_private']['paper_acc_l_np'] != ''
  femnist = _by_name(rows, 'femnist')['dp_fedavg']
  assert (femnist['paper_table'], femnist['paper_epsilon']) == ('11', '4.1')
  digits = _by_name(rows, 'digits')['fedhdp_r0.01']
  assert digits['acc_g'] != '' and digits['paper_table'] == ''
  assert all(digits[c] == '' for c in digits if c.startswith(
      ('paper_', 'diff_')))
  with open(os.path.join(out, 'comparison.tex')) as f:
    latex = f.read()
  assert latex.count(r'\begin{tabular}') == 3 and r'Acc\_g\%' in latex
  # The markdown is a table per dataset, titled with its paper's setting.
  titles = [l for l in io.StringIO(result.stdout) if l.startswith('### ')]
  assert [t.split(':')[0] for t in titles] == [
      '### mnist', '### femnist', '### digits']
  assert 'Table 8' in titles[0] and '(3.6, 0.0001)' in titles[0]
  assert 'not reported' in titles[2]


def test_markdown_gives_each_private_runs_clip_norm():
  # S^t = 0.6, 0.7, 0.8, 0.9 in `_record`'s four rounds; a non-private
  # run has no line.
  # (table_rows, not the binary's module: importing a binary defines its
  # flags, which another binary's test may have defined in this worker.)
  from tff_hdp.fedhdp import table_rows  # pylint: disable=g-import-not-at-top
  runs = [_record('mnist', a, 90.0) for a in ('non_private', 'dp_fedavg')]
  line = table_rows.clip_norm_line(runs)
  assert line == ('Clip norm S^t over the rounds (mean, largest, last): '
                  'DP-FedAvg+Ditto lp=0.005,lnp=0.005 seed=0: 0.750, 0.900, '
                  '0.900')
  assert table_rows.clip_norm_line(runs[:1]) == ''


def test_markdown_gives_each_runs_ditto_models_on_their_label_pools():
  from tff_hdp.fedhdp import table_rows  # pylint: disable=g-import-not-at-top
  runs = [_record('mnist', a, 90.0) for a in ('non_private', 'hdp_fedavg')]
  assert table_rows.personal_pool_line(runs) == ''  # Records without them.
  runs[0]['personal_models'] = dict(acc_l_pool_p=None, acc_l_pool_np=99.8071,
                                    acc_l_train_p=None, acc_l_train_np=100.0)
  runs[1]['personal_models'] = dict(acc_l_pool_p=99.5, acc_l_pool_np=99.25,
                                    acc_l_train_p=100.0, acc_l_train_np=99.994)
  assert table_rows.personal_pool_line(runs) == (
      "Ditto models, % on every held-out image of their client's label; on "
      'their own training images (private / non-private): '
      'Non-Private+Ditto lp=0.005,lnp=0.005 seed=0: - / 99.81; - / 100.00; '
      'HDP-FedAvg+Ditto lp=0.005,lnp=0.005 seed=0: 99.50 / 99.25; '
      '100.00 / 99.99')


def test_a_rows_ablations_are_named_in_its_hyperparameters():
  from tff_hdp.fedhdp import table_rows  # pylint: disable=g-import-not-at-top
  record = _record('mnist', 'dp_fedavg', 90.0)
  assert table_rows.run_row(record)[1] == 'lp=0.005,lnp=0.005'
  record['config'].update(noise_multiplier=0.0, clip_learning_rate=0.0,
                          initial_clip=0.5)
  assert table_rows.run_row(record)[1] == (
      'lp=0.005,lnp=0.005 noise off clip fixed at 0.5')
  # Noise other than the preset's z_eff (1.5 for mnist) is named; a
  # dataset with no preset names none.
  record['config'].update(noise_multiplier=0.75, clip_learning_rate=0.2)
  assert table_rows.run_row(record)[1] == 'lp=0.005,lnp=0.005 z_eff=0.75'
  record['config'].update(noise_multiplier=1.5)
  assert table_rows.run_row(record)[1] == 'lp=0.005,lnp=0.005'
  record['dataset'] = 'my_clients'
  record['config'].update(noise_multiplier=0.75)
  assert table_rows.run_row(record)[1] == 'lp=0.005,lnp=0.005'
  # Clients' images drawn other than disjointly: named, private or not.
  record['client_draw'] = 'independent'
  assert table_rows.run_row(record)[1] == (
      'lp=0.005,lnp=0.005 independent draws')
  record['config']['algorithm'] = 'non_private'
  assert table_rows.run_row(record)[1] == (
      'lp=0.005,lnp=0.005 independent draws')
  record['examples_per_client'] = 108
  assert table_rows.run_row(record)[1] == (
      'lp=0.005,lnp=0.005 independent draws of 108')
  del record['examples_per_client']
  # Training settings other than the preset's (E 25, B 20, eta = eta_p =
  # 0.5 decayed by 0.9) are named, the private rows' noise only on them.
  record['dataset'] = 'mnist'
  del record['client_draw']
  assert table_rows.run_row(record)[1] == 'lp=0.005,lnp=0.005'
  record['config'].update(local_epochs=17, learning_rate=0.25,
                          personal_learning_rate=0.25, lr_decay_factor=1.0)
  assert table_rows.run_row(record)[1] == (
      'lp=0.005,lnp=0.005 E=17 eta=0.25 eta_p=0.25 no decay')
  record['config'].update(local_epochs=25, batch_size=10, learning_rate=0.5,
                          personal_learning_rate=0.5, lr_decay_factor=0.8)
  assert table_rows.run_row(record)[1] == 'lp=0.005,lnp=0.005 B=10 decay=0.8'
  # A private row's adaptive clip, when not the preset's (S0 0.5, eta_b
  # 0.2, kappa 0.5); held, it is named as held.
  record['config'].update(algorithm='dp_fedavg', batch_size=20,
                          lr_decay_factor=0.9, noise_multiplier=1.5,
                          initial_clip=0.94,
                          clip_learning_rate=0.1, target_quantile=0.5)
  assert table_rows.run_row(record)[1] == 'lp=0.005,lnp=0.005 S0=0.94 eta_b=0.1'
  record['config'].update(clip_learning_rate=0.0)
  assert table_rows.run_row(record)[1] == (
      'lp=0.005,lnp=0.005 clip fixed at 0.94')
  # Ditto models started from theta^0 rather than at a client's first round.
  record['config'].update(clip_learning_rate=0.2, initial_clip=0.5,
                          ditto_init='initial')
  assert table_rows.run_row(record)[1] == (
      'lp=0.005,lnp=0.005 Ditto from theta^0')
  record['config'].update(ditto_init='first_round')
  assert table_rows.run_row(record)[1] == 'lp=0.005,lnp=0.005'


def test_tables_with_table_flag(results_dir, tmp_path):
  out = str(tmp_path / 'tables')
  result = _run(_TABLES, f'--results_dir={results_dir}', '--table=2',
                f'--output_dir={out}')
  assert result.returncode == 0, result.stderr
  rows = _read_csv(os.path.join(out, 'comparison_table2.csv'))
  mnist = _by_name(rows, 'mnist')
  assert mnist['fedhdp_r0.01']['paper_table'] == '2'
  assert mnist['fedhdp_r0.1']['paper_table'] == ''  # Not in Table 2.
  assert mnist['dp_fedavg']['paper_table'] == '2'
  assert _by_name(rows, 'femnist')['dp_fedavg']['paper_table'] == ''


def test_tables_are_deterministic(results_dir, tmp_path):
  copy = str(tmp_path / 'copy_of_results')
  shutil.copytree(results_dir, copy)
  # Two processes on the same results in two places: the same bytes (so
  # neither the process nor the results' path shows in them).
  outputs = []
  for source, out in ((results_dir, 'a'), (copy, 'c')):
    out = str(tmp_path / out)
    result = _run(_TABLES, f'--results_dir={source}', f'--output_dir={out}')
    assert result.returncode == 0, result.stderr
    outputs.append(_bytes(out, _OUTPUTS))
  assert outputs[0] == outputs[1]


def test_tables_default_output_dir(results_dir):
  result = _run(_TABLES, f'--results_dir={results_dir}')
  assert result.returncode == 0, result.stderr
  assert sorted(os.listdir(os.path.join(results_dir, 'tables'))) == sorted(
      _OUTPUTS)


def _bad_inputs(tmp_path):
  empty = tmp_path / 'empty'
  empty.mkdir()
  broken = tmp_path / 'broken'
  broken.mkdir()
  (broken / 'results.json').write_text('{"runs": [')
  no_runs = tmp_path / 'no_runs'
  no_runs.mkdir()
  (no_runs / 'results.json').write_text('{"runs": [{"config": {}}]}')
  return [
      ([], '--results_dir'),
      ([f'--results_dir={tmp_path / "missing"}'], '--results_dir'),
      ([f'--results_dir={empty}'], 'no results.json'),
      ([f'--results_dir={broken}'], 'not readable JSON'),
      ([f'--results_dir={no_runs}'], 'lacks dataset, metrics'),
  ]


@pytest.mark.parametrize('script', [_TABLES, _PLOTS])
def test_bad_input_is_refused(script, tmp_path):
  out = tmp_path / 'out'
  cases = _bad_inputs(tmp_path)
  if script == _TABLES:
    results = tmp_path / 'ok'
    _write(str(results), [_record('mnist', 'fedhdp', 90.0)])
    cases.append(([f'--results_dir={results}', '--table=7'], '--table'))
    cases.append(([f'--results_dir={results}', '--table=x'], 'table'))
  for args, message in cases:
    result = binaries.run_before_tensorflow(
        os.path.basename(script), [*args, f'--output_dir={out}'])
    assert result.returncode == 2, (args, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], (args, result.stderr)
    assert not out.exists(), args


def test_plots_missing_output_dir_is_refused(results_dir):
  result = binaries.run_before_tensorflow(
      os.path.basename(_PLOTS), [f'--results_dir={results_dir}'])
  assert result.returncode == 2
  assert '--output_dir' in result.stderr and len(
      result.stderr.strip().splitlines()) == 1


def test_plots_are_written_and_deterministic(results_dir, tmp_path):
  expected = sorted(
      [f'accuracy_{d}.png' for d in ('mnist', 'femnist', 'digits')] +
      [f'clip_norm_{d}.png' for d in ('mnist', 'femnist', 'digits')] +
      # No FedHDP run on femnist: no r sweep there.
      ['r_sweep_mnist.png', 'r_sweep_digits.png'])
  out = str(tmp_path / 'a')
  result = _run(_PLOTS, f'--results_dir={results_dir}', f'--output_dir={out}')
  assert result.returncode == 0, result.stderr
  assert sorted(os.listdir(out)) == expected
  first = _bytes(out, expected)
  for name, content in first.items():
    assert content.startswith(b'\x89PNG\r\n\x1a\n'), name
    assert b'Software' not in content, name
  # A second process on the digits results changed: the digits figures
  # change (the check below can fail), every other dataset's, drawn by the
  # same functions from the same results, are the same bytes.
  _write(os.path.join(results_dir, 'digits'),
         [_record('digits', 'fedhdp', 60.0)])
  out = str(tmp_path / 'c')
  assert _run(_PLOTS, f'--results_dir={results_dir}',
              f'--output_dir={out}').returncode == 0
  changed = _bytes(out, expected)
  assert changed['accuracy_digits.png'] != first['accuracy_digits.png']
  for name in expected:
    if not name.endswith('_digits.png'):
      assert changed[name] == first[name], name
