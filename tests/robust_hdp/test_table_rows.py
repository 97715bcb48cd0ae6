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
"""Robust-HDP's comparison table from results records (made-up numbers)."""

from tff_hdp.robust_hdp import config as config_lib
from tff_hdp.robust_hdp import rule_registry
from tff_hdp.robust_hdp import table_rows


def _record(algorithm, accuracy, noise_power, achieved):
  return {'config': {'algorithm': algorithm},
          'metrics': {'accuracy': accuracy, 'accuracy_std': 5.5,
                      'noise_power': noise_power},
          'clients': [{'achieved_epsilon': e} for e in achieved]}


def test_every_rule_has_a_row_saying_what_the_server_knows():
  for name in rule_registry.names():
    row = table_rows.run_row(_record(name, 1.0, None, [1.0]))
    assert row[0] == rule_registry.get(name).label
    assert row[3] == rule_registry.get(name).server_knows
  row = table_rows.run_row(_record('robust_hdp', 10.5, 0.0026041,
                                   [0.85, 2.87]))
  assert row == ['Robust-HDP', '10.50(5.50)', '0.002604', 'nothing',
                 '0.85/2.87']
  assert table_rows.run_row(_record('non_private', 20.0, None,
                                    [None, None]))[2:] == ['-', 'N_i', '-']


def test_table_ends_with_the_claim_line():
  records = [_record('robust_hdp', 12.0, 0.002, [1.0, 2.0]),
             _record('weiavg', 11.0, 0.01, [1.0, 2.0]),
             _record('oracle', 13.0, 0.001, [1.0, 2.0])]
  lines = table_rows.table(records).splitlines()
  assert len(lines) == 2 + len(records) + 1
  assert lines[-1] == table_rows.claim_line(records)
  assert lines[-1].startswith('Robust-HDP >= every private baseline run '
                              '(WeiAvg): yes (12.00 vs 11.00, WeiAvg); '
                              'within 2 points of the Oracle: yes')
  assert table_rows.summary(records[0]) == 'accuracy=12.00 noise_power=0.002'
  assert table_rows.summary(_record('pfa', 9.0, None, [])) == (
      'accuracy=9.00 noise_power=None')


def test_title():
  config = config_lib.RobustHdpConfig(algorithm='robust_hdp', epsilons=(1.0,),
                                      batch_sizes=(16,), distribution='dist1',
                                      rounds=20, model='fc')
  assert table_rows.title('mnist5k', 20, config, 10) == (
      'dataset=mnist5k clients=20 privacy=dist1 rounds=20 local_epochs=1 '
      'lr=0.1 clip=3.0 delta=0.0001 model=fc shards_per_client=10')
