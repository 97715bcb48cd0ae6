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
"""UDP-Alg's comparison table from results records (made-up numbers)."""

from tff_hdp.udp import config as config_lib
from tff_hdp.udp import table_rows


def _record(algorithm, accuracy, epsilon, stddev):
  return {'config': {'algorithm': algorithm}, 'epsilon': epsilon,
          'metrics': {'accuracy_mean': accuracy, 'accuracy_var': 12.34},
          'setup': {'noise_stddev': stddev}}


def test_table_rows_and_claim_line():
  records = [_record('udp', 70.0, 7.891, 0.0728),
             _record('clip_only', 80.0, None, 0.0),
             _record('noiseless', 90.0, None, 0.0)]
  assert table_rows.run_row(records[0]) == ('udp', '7.89', '70.00', '12.3',
                                            '0.0728')
  assert table_rows.run_row(records[1])[1] == '—'
  text = table_rows.table(records)
  lines = text.splitlines()
  assert lines[0].split('  ')[0] == 'algorithm'
  assert len(lines) == 2 + len(records) + 1
  assert lines[-1] == table_rows.claim_line(records)
  assert lines[-1].startswith(
      'UDP-Alg at epsilon <= 8 with accuracy >= 60%: yes')
  assert table_rows.summary(records[0]) == (
      "accuracy=70.00 epsilon=7.891 (users' sizes taken as public)")
  assert table_rows.summary(records[1]) == 'accuracy=80.00 epsilon=none'


def test_title():
  config = config_lib.UdpConfig(rounds=100, sampling_rate=0.2, clip=0.1,
                                noise_multiplier=1.55, sample_cap=24.5)
  assert table_rows.title('mnist5k', 200, config) == (
      'dataset=mnist5k users=200 rounds=100 q=0.2 S=0.1 z=1.55 w_hat=24.5 '
      'delta=1e-05')
