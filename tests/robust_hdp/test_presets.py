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
"""Robust-HDP's settings: the paper's, the default, and the config's."""

import dataclasses

from tff_hdp import datasets
from tff_hdp.robust_hdp import config as config_lib
from tff_hdp.robust_hdp import paper_tables
from tff_hdp.robust_hdp import presets


def test_the_default_is_the_papers_setting_on_the_offline_images():
  assert presets.DEFAULT.dataset == datasets.names('robust_hdp')[0] == 'mnist5k'
  assert presets.PAPER.dataset == 'mnist'
  differ = {f.name for f in dataclasses.fields(presets.Preset)
            if getattr(presets.PAPER, f.name) != getattr(presets.DEFAULT,
                                                         f.name)}
  assert differ == {'dataset', 'examples_per_client'}
  assert presets.PAPER.dataset in datasets.names('robust_hdp')
  assert presets.PAPER.shards_per_client == datasets.SHARDS_PER_CLIENT


def test_the_config_defaults_are_the_papers():
  config = config_lib.RobustHdpConfig(algorithm='robust_hdp', epsilons=(1.0,),
                                      batch_sizes=(16,))
  paper = presets.PAPER
  assert (config.model, config.rounds, config.local_epochs,
          config.learning_rate, config.clip, config.delta, config.poisson,
          not config.first_round_only, config.rpca_max_iterations,
          config.rpca_method, config.pfa_rank, config.eval_every) == (
              paper.model, paper.rounds, paper.local_epochs,
              paper.learning_rate, paper.clip, paper.delta,
              paper.poisson_sampling, paper.rpca_every_round,
              paper.rpca_max_iterations, paper.rpca_method, paper.pfa_rank,
              paper.eval_every)
  # Table 2's setting is the same code's.
  setting = paper_tables.SETTING
  assert (setting['num_clients'], setting['rounds'], setting['local_epochs'],
          setting['clip'], setting['learning_rate'], setting['delta']) == (
              paper.num_clients, paper.rounds, paper.local_epochs, paper.clip,
              paper.learning_rate, paper.delta)
  assert setting['num_examples'] == paper.examples_per_client * 4 // 5
