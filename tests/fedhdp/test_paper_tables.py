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
"""Tests of the transcription of paper 001's tables and of run matching.

The transcription check re-reads cells straight from the paper's text: each
cell below is the number as printed, found by locating its row (table, lambda
block or dataset header, algorithm, r) and asserting that the row's cell is
that string in the text rendering's triple form (`88.64(0.39)88.640.39`
`88.64(0.39)`; a negative number loses its sign in the first two copies).
"""

import csv
import os

import pytest

from tff_hdp.fedhdp import paper_tables

# The papers sit in shared/ next to the repository checkout (as in CI).
PAPER = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))),
    'shared', 'papers', '001_4e75ec8ad6b70974.txt')
_DISPLAY = ('acc_g', 'acc_g_p', 'acc_g_np', 'delta_g', 'acc_l_p', 'acc_l_np',
            'delta_l')
_LABELS = {'non_private': 'Non-Private+Ditto', 'dp_fedavg': 'DP-FedAvg+Ditto',
           'hdp_fedavg': 'HDP-FedAvg+Ditto', 'fedhdp': 'FedHDP'}
_DATASET_HEADERS = {'mnist': 'nonIID MNIST dataset',
                    'skewed_mnist': 'Skewed nonIID MNIST dataset',
                    'fmnist': 'FMNIST dataset', 'femnist': 'FEMNIST dataset'}
ROWS_PER_TABLE = {2: 9, 3: 9, 8: 24, 9: 27, 10: 27, 11: 27}

# (table, dataset, algorithm, r, lambda_p, lambda_np, column, as printed).
# In Tables 2-3 the lambdas are the row's; in 8-11 the block header's.
CELLS = (
    (2, 'mnist', 'dp_fedavg', '', '0.005', '', 'acc_g_p', '88.64(0.39)'),
    (2, 'mnist', 'hdp_fedavg', '', '0.005', '0.005', 'delta_l', '-0.04'),
    (2, 'skewed_mnist', 'fedhdp', '0.9', '0.005', '0.005', 'acc_g_np',
     '92.97(0.04)'),
    (3, 'fmnist', 'fedhdp', '0.01', '0.05', '0.005', 'acc_l_np',
     '95.94(0.41)'),
    (3, 'femnist', 'non_private', '', '', '0.25', 'acc_g', '81.66'),
    (3, 'femnist', 'fedhdp', '0.1', '0.05', '0.05', 'acc_g_np', '83.9(1.27)'),
    (8, 'mnist', 'fedhdp', '0', '0.005', '0.005', 'delta_l', '9.2964'),
    (8, 'mnist', 'fedhdp', '0', '0.05', '0.05', 'acc_g', '91'),
    (8, 'mnist', 'fedhdp', '0.025', '0.05', '0.05', 'acc_l_np',
     '99.8(0.002)'),
    (8, 'mnist', 'non_private', '', '0.25', '0.25', 'acc_l_np',
     '99.10(0.007)'),
    (9, 'skewed_mnist', 'fedhdp', '0', '0.25', '0.25', 'acc_g_np', '100(0)'),
    (9, 'skewed_mnist', 'hdp_fedavg', '', '0.25', '0.25', 'delta_l', '-0.64'),
    (9, 'skewed_mnist', 'fedhdp', '0.025', '0.005', '0.005', 'acc_g_p',
     '86.61(1.10)'),
    (10, 'fmnist', 'fedhdp', '0.5', '0.05', '0.05', 'delta_g', '-0.0041'),
    (10, 'fmnist', 'dp_fedavg', '', '0.25', '0.25', 'acc_g', '70.1'),
    (10, 'fmnist', 'fedhdp', '0.05', '0.05', '0.05', 'delta_g', '4.00'),
    (11, 'femnist', 'fedhdp', '0.025', '0.005', '0.005', 'acc_g_np',
     '86.56(1)'),
    (11, 'femnist', 'fedhdp', '0.025', '0.05', '0.05', 'acc_l_p', '80(1.16)'),
    (11, 'femnist', 'hdp_fedavg', '', '0.25', '0.25', 'delta_l', '2.4'),
)


@pytest.fixture(scope='module')
def csv_rows():
  with open(paper_tables.REFERENCE_CSV, newline='', encoding='utf-8') as f:
    return list(csv.DictReader(f))


@pytest.fixture(scope='module')
def reference():
  return paper_tables.load_reference()


@pytest.fixture(scope='module')
def paper_lines():
  if not os.path.isfile(PAPER):
    pytest.skip(f'paper text {PAPER} not available')
  with open(PAPER, encoding='utf-8') as f:
    return f.read().split('\n')


def _section(lines, table):
  """The lines of one table: from its caption to the next caption."""
  start = next(i for i, l in enumerate(lines)
               if l.startswith(f'Table {table}:'))
  end = next(i for i in range(start + 1, len(lines))
             if lines[i].startswith(('Table ', 'Appendix', '  1.')))
  return lines[start:end]


def _row_cells(lines, table, dataset, algorithm, r, lambda_p):
  """The seven value tokens of a row, located in the paper text."""
  section = _section(lines, table)
  label = _LABELS[algorithm]
  if table in (8, 9, 10, 11):
    start = next(i for i, l in enumerate(section)
                 if l.startswith(f'λp=λnp={lambda_p}subscript'))
    for line in section[start + 1:]:
      if line.startswith('λp=λnp='):
        break
      tokens = line.split(' ')
      if tokens[0] == label and (
          algorithm != 'fedhdp' or tokens[1].startswith(f'r={r}𝑟')):
        return tokens[-7:]
  else:
    start = next(i for i, l in enumerate(section)
                 if l.startswith(_DATASET_HEADERS[dataset]))
    for i in range(start + 1, len(section)):
      if section[i].startswith(tuple(_DATASET_HEADERS.values())):
        break
      if algorithm == 'fedhdp':
        if section[i] == 'FedHDP' and section[i + 1].startswith(f'r={r},'):
          return section[i + 3].split(' ')
      elif section[i].startswith(label + ' '):
        return section[i].split(' ')[-7:]
  raise AssertionError(f'row not found: {table} {dataset} {algorithm} {r}')


def _csv_row(rows, table, dataset, algorithm, r, lambda_p, lambda_np):
  found = [row for row in rows
           if (row['table'], row['dataset'], row['algorithm'], row['r'],
               row['lambda_p'], row['lambda_np']) == (
                   str(table), dataset, algorithm, r, lambda_p, lambda_np)]
  assert len(found) == 1, (table, dataset, algorithm, r, found)
  return found[0]


def test_cells_cover_all_tables():
  assert len(CELLS) >= 12
  assert {c[0] for c in CELLS} == set(ROWS_PER_TABLE)


_IDS = [f'T{c[0]}-{c[1]}-{c[2]}-r{c[3]}-lambda{c[4] or c[5]}-{c[6]}'
        for c in CELLS]


@pytest.mark.parametrize('cell', CELLS, ids=_IDS)
def test_cell_matches_paper_text(cell, paper_lines):
  table, dataset, algorithm, r, lambda_p, lambda_np, column, printed = cell
  tokens = _row_cells(paper_lines, table, dataset, algorithm, r,
                      lambda_p or lambda_np)
  token = tokens[_DISPLAY.index(column)]
  plain = printed.lstrip('-')
  if printed.startswith('-'):
    assert token == plain + plain + printed
  else:
    assert token == printed + printed.replace('(', '').replace(')', '') + (
        printed)


@pytest.mark.parametrize('cell', CELLS, ids=_IDS)
def test_cell_matches_csv(cell, csv_rows):
  table, dataset, algorithm, r, lambda_p, lambda_np, column, printed = cell
  row = _csv_row(csv_rows, table, dataset, algorithm, r, lambda_p, lambda_np)
  mean, _, var = printed.rstrip(')').partition('(')
  assert float(row[column]) == float(mean)
  if var:
    assert float(row[column + '_var']) == float(var)
  elif column + '_var' in row:
    assert row[column + '_var'] == ''


def test_row_counts(csv_rows):
  counts = {t: sum(r['table'] == str(t) for r in csv_rows)
            for t in ROWS_PER_TABLE}
  assert counts == ROWS_PER_TABLE


def test_row_counts_in_paper_text(paper_lines):
  # Counted again in the paper text: one line per row, except Tables 2-3's
  # FedHDP rows, whose first line is 'FedHDP' alone.
  labels = tuple(l + ' ' for l in _LABELS.values())
  in_text = {t: sum(1 for l in _section(paper_lines, t)
                    if l.startswith(labels) or l == 'FedHDP')
             for t in ROWS_PER_TABLE}
  assert in_text == ROWS_PER_TABLE


def test_every_cell_parses(csv_rows):
  assert tuple(csv_rows[0]) == paper_tables.COLUMNS
  for row in csv_rows:
    assert row['dataset'] in paper_tables.TABLE_DATASETS[int(row['table'])]
    assert row['algorithm'] in paper_tables.ALGORITHMS
    assert (row['r'] == '') == (row['algorithm'] != 'fedhdp'), row
    assert row['lambda_p'] or row['lambda_np'], row
    for column in paper_tables.COLUMNS[3:]:
      if row[column]:
        float(row[column])
    for mean in ('acc_g_p', 'acc_g_np', 'acc_l_p', 'acc_l_np'):
      assert bool(row[mean]) == bool(row[mean + '_var']), (row, mean)
    assert row['acc_g']
    private = row['algorithm'] != 'non_private'
    nonprivate = row['algorithm'] != 'dp_fedavg'
    assert bool(row['acc_g_p']) == private and bool(
        row['acc_g_np']) == nonprivate, row
    assert bool(row['delta_g']) == (private and nonprivate), row


def test_rows_unique_within_a_table(reference):
  keys = [(r.table, r.dataset, r.algorithm, r.r, r.lambda_p, r.lambda_np)
          for r in reference]
  assert len(keys) == len(set(keys)) == sum(ROWS_PER_TABLE.values())


def test_load_reference_rejects_wrong_columns(tmp_path):
  path = tmp_path / 'bad.csv'
  path.write_text('table,dataset\n2,mnist\n')
  with pytest.raises(ValueError, match='columns must be'):
    paper_tables.load_reference(str(path))


def _find(reference, **kwargs):
  defaults = dict(dataset='mnist', algorithm='fedhdp', r=0.01, lambda_p=0.005,
                  lambda_np=0.005)
  defaults.update(kwargs)
  return paper_tables.find_row(reference, **defaults)


def test_find_row_prefers_appendix_table(reference):
  row = _find(reference)
  assert (row.table, row.r, row.printed['acc_g']) == (8, 0.01, '92.48')
  assert _find(reference, table=2).table == 2


def test_find_row_fedhdp_needs_equal_r_and_lambdas(reference):
  assert _find(reference, r=0.02) is None
  assert _find(reference, lambda_np=0.05) is None
  assert _find(reference, r=None) is None
  assert _find(reference, dataset='digits') is None
  assert _find(reference, lambda_p=0.25, lambda_np=0.25).values[
      'acc_g'] == 92.41


def test_find_row_baselines_ignore_r(reference):
  a = _find(reference, algorithm='dp_fedavg', r=None)
  b = _find(reference, algorithm='dp_fedavg', r=0.7)
  assert a is b and a.table == 8 and a.values['acc_g'] == 88.75


def test_find_row_single_lambda_baselines_of_tables_2_3(reference):
  # Table 3 prints only lambda_p = 0.05 for DP-FedAvg on FEMNIST, only
  # lambda_np = 0.25 for Non-Private: the other lambda is not compared.
  row = _find(reference, dataset='femnist', algorithm='dp_fedavg',
              lambda_p=0.05, lambda_np=123.0, table=3)
  assert row.values['acc_g'] == 75.42 and row.lambda_np is None
  row = _find(reference, dataset='femnist', algorithm='non_private',
              lambda_p=7.0, lambda_np=0.25, table=3)
  assert row.values['acc_g'] == 81.66
  # In Table 11 both lambdas are the block's.
  assert _find(reference, dataset='femnist', algorithm='dp_fedavg',
               lambda_p=0.05, lambda_np=123.0, table=11) is None


def test_find_row_falls_back_to_summary_table(reference):
  # lambda_p != lambda_np is only in Table 3.
  row = _find(reference, dataset='fmnist', lambda_p=0.05, lambda_np=0.005)
  assert row.table == 3 and row.values['acc_l_np'] == 95.94


def test_find_row_rejects_unknown_table(reference):
  with pytest.raises(ValueError, match='table must be one of'):
    _find(reference, table=7)


def _record(**config):
  base = dict(algorithm='fedhdp', ditto=True, ratio=0.1, lambda_p=0.005,
              lambda_np=0.005, skewed_optout=False, seed=0)
  base.update(config)
  return {'config': base, 'dataset': 'mnist',
          'metrics': {m: None for m in paper_tables.METRICS},
          'epsilon': {}}


def test_match_record(reference):
  assert paper_tables.match_record(reference, _record()).values[
      'acc_g'] == 90.7
  skewed = paper_tables.match_record(reference, _record(skewed_optout=True))
  assert (skewed.dataset, skewed.values['acc_g']) == ('skewed_mnist', 90.36)
  assert paper_tables.match_record(reference, _record(ratio=[0.1])).table == 8
  assert paper_tables.match_record(reference, _record(ratio=[0.1, 0.5])) is None
  assert paper_tables.match_record(reference, _record(ditto=False)) is None


def test_compare_metrics_and_epsilon(reference):
  record = _record(algorithm='hdp_fedavg')
  row = paper_tables.match_record(reference, record)
  record['metrics'].update(acc_g=80.0, acc_g_p_var=0.5, delta_l=1.0)
  record['epsilon'] = {'private': 3.5}
  by_metric = {c.metric: c for c in
               paper_tables.compare_metrics(record, row)}
  assert list(by_metric) == list(paper_tables.METRICS)
  assert by_metric['acc_g'].paper == row.values['acc_g']
  assert by_metric['acc_g'].difference == pytest.approx(
      80.0 - row.values['acc_g'])
  assert by_metric['acc_g_p_var'].difference == pytest.approx(
      0.5 - row.values['acc_g_p_var'])
  assert by_metric['delta_l'].difference == pytest.approx(
      1.0 - row.values['delta_l'])
  assert by_metric['acc_g_np'].difference is None  # Ours is None.
  (epsilon,) = paper_tables.compare_epsilon(record)
  assert (epsilon.metric, epsilon.paper) == ('epsilon/private', 3.6)
  assert epsilon.difference == pytest.approx(-0.1)
  no_row = paper_tables.compare_metrics(record, None)
  assert all(c.paper is None and c.difference is None for c in no_row)


@pytest.mark.parametrize('dataset,epsilon', [('skewed_mnist', 3.6),
                                             ('fmnist', 0.6),
                                             ('femnist', 4.1)])
def test_paper_epsilon_per_dataset(dataset, epsilon):
  record = _record()
  record['dataset'] = dataset
  record['epsilon'] = {'private_2': 1.0, 'private_1': 2.0}
  comparisons = paper_tables.compare_epsilon(record)
  assert [c.metric for c in comparisons] == ['epsilon/private_1',
                                             'epsilon/private_2']
  assert all(c.paper == epsilon for c in comparisons)
  record['dataset'] = 'digits'
  assert all(c.paper is None for c in paper_tables.compare_epsilon(record))


def test_recorded_ratio_is_read_from_the_algorithm_that_owns_it():
  # FedHDP owns r (its config_fields); the others record a default r they
  # do not use, and an unregistered algorithm is not guessed at.
  assert paper_tables.recorded_ratio({'algorithm': 'fedhdp',
                                      'ratio': 0.1}) == 0.1
  assert paper_tables.recorded_ratio({'algorithm': 'fedhdp',
                                      'ratio': [0.1, 0.5]}) is None
  assert paper_tables.owns({'algorithm': 'fedhdp', 'ratio': [0.1, 0.5]},
                           'ratio')
  for name in ('dp_fedavg', 'hdp_fedavg', 'non_private', 'unregistered'):
    assert paper_tables.recorded_ratio({'algorithm': name,
                                        'ratio': 0.1}) is None
