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
"""FedHDP's comparison table from results records (made-up numbers), its
title and run names, and the default preset."""

from tff_hdp import datasets
from tff_hdp.fedhdp import config as config_lib
from tff_hdp.fedhdp import presets
from tff_hdp.fedhdp import table_rows

_PRIVACY = {'is_bound': True, 'sampling': 'Poisson',
            'denominators': 'expected'}


def _record(algorithm, acc_g, epsilon):
  metrics = dict.fromkeys(
      ('acc_g_p', 'acc_g_p_var', 'acc_g_np', 'acc_g_np_var', 'delta_g',
       'acc_l_p', 'acc_l_p_var', 'acc_l_np', 'acc_l_np_var', 'delta_l'))
  metrics['acc_g'] = acc_g
  return {'config': {'algorithm': algorithm, 'ditto': False, 'ratio': 0.1,
                     'delta': 1e-4, 'accountant': 'rdp', 'sampling_rate': 0.2,
                     'clients_per_round': 40},
          'metrics': metrics, 'privacy': _PRIVACY,
          'epsilon': {} if epsilon is None else {'private': epsilon}}


def test_table_has_the_epsilon_and_claim_lines():
  records = [_record('non_private', 50.0, None),
             _record('dp_fedavg', 30.0, 4.81),
             _record('fedhdp', 40.0, 4.81)]
  lines = table_rows.table(records).splitlines()
  assert len(lines) == 2 + len(records) + 2
  assert lines[-2] == table_rows.epsilon_line(records)
  assert lines[-1] == ('FedHDP above DP-FedAvg and HDP-FedAvg at the same '
                       'epsilon: yes (40.00 vs 30.00, DP-FedAvg) at epsilon '
                       '4.81')
  # No private run: no epsilon line.
  assert len(table_rows.table(records[:1]).splitlines()) == 2 + 1 + 1
  assert table_rows.summary(records[1]) == (
      'acc_g=30.00 epsilon[private]=4.810')


def test_title_and_run_names():
  config = config_lib.FedHdpConfig(
      algorithm='fedhdp', ratio=(0.1, 0.25), rounds=100, clients_per_round=40,
      sampling_rate=0.2, noise_multiplier=(2.0, 1.0), level_fractions=(0.3,))
  assert table_rows.run_name(config) == 'fedhdp_r0.1_0.25'
  assert table_rows.title('mnist5k', 200, config) == (
      'dataset=mnist5k clients=200 rounds=100 q=0.2 (Poisson) '
      'denominators=expected delta=0.0001')
  fixed = config_lib.FedHdpConfig(algorithm='dp_fedavg', rounds=5,
                                  clients_per_round=40, sampling_rate=0.2,
                                  poisson_sampling=False)
  assert table_rows.run_name(fixed) == 'dp_fedavg'
  assert 'clients_per_round=40 (fixed)' in table_rows.title('digits', 200,
                                                            fixed)


def test_the_default_preset_is_the_offline_mnist_images():
  preset = presets.get_preset(presets.DEFAULT)
  assert preset.dataset == presets.DEFAULT == 'mnist5k'
  assert preset.dataset in datasets.names('fedhdp')
