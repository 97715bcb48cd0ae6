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
"""UDP-Alg's presets, sigma -> z and pFedHN's round scaling (TF-free)."""

import dataclasses

import numpy as np
import pytest

from tff_hdp import datasets
from tff_hdp.udp import config as config_lib
from tff_hdp.udp import presets


def test_the_default_preset_is_a_dataset_udp_loads():
  assert presets.DEFAULT == datasets.names('udp')[0] == 'mnist5k'
  assert set(presets.PRESETS) <= set(datasets.names('udp'))


@pytest.mark.parametrize('dataset', sorted(presets.PRESETS))
def test_every_preset_makes_a_valid_config(dataset):
  preset = presets.PRESETS[dataset]
  fields = dataclasses.asdict(preset)
  num_users = fields.pop('num_users')
  assert num_users >= 2
  config_lib.UdpConfig(**fields, delta=presets.DELTA).validate()


def test_the_paper_datasets_use_its_lenet_and_learning_rates():
  for dataset in ('cifar10', 'femnist', 'celeba'):
    preset = presets.PRESETS[dataset]
    assert preset.target == 'lenet'
    assert (preset.hyper_learning_rate, preset.local_learning_rate) == (
        0.01, 0.001)
    assert preset.clip in (0.05, 0.1, 0.2)
    assert preset.noise_multiplier in (5.0, 10.0)
    assert preset.sampling_rate in (0.05, 0.1, 0.2)
  assert presets.PRESETS['cifar10'].num_users == 100
  assert presets.PRESETS['femnist'].num_users == 3400
  assert presets.DELTA == 1e-5


def test_noise_stddev_and_z_agree_with_the_estimators_sensitivity():
  sizes = np.array([5, 10, 20, 40, 80], np.float64)
  cap, q, clip, z = 20.0, 0.2, 0.1, 1.7
  weights = np.minimum(sizes / cap, 1.0)  # 0.25, 0.5, 1, 1, 1
  stddev = z * weights.max() * clip / (q * weights.sum())  # Lemma 3.1.
  assert presets.noise_multiplier_for_stddev(
      stddev, sizes, cap, q, clip) == pytest.approx(z, rel=1e-12)


def test_the_default_sample_cap_is_the_median_users_size():
  sizes = np.array([5, 10, 20, 40, 80], np.float64)
  assert config_lib.default_sample_cap(sizes) == 20.0
  assert config_lib.UdpConfig().sample_cap is None
  assert config_lib.UdpConfig().for_users(sizes).sample_cap == 20.0
  given = config_lib.UdpConfig(sample_cap=7.0)
  assert given.for_users(sizes) is given


def test_pfedhn_takes_round_qn_steps_per_round():
  base = dataclasses.replace(config_lib.UdpConfig(), rounds=7, eval_every=3,
                             sampling_rate=0.2)
  runs = presets.configs(base, ('udp', 'pfedhn', 'noiseless'), num_users=12)
  assert [c.algorithm for c in runs] == ['udp', 'pfedhn', 'noiseless']
  assert presets.pfedhn_steps_per_round(0.2, 12) == 2  # round(2.4)
  assert (runs[1].rounds, runs[1].eval_every) == (14, 6)
  assert all((c.rounds, c.eval_every) == (7, 3) for c in (runs[0], runs[2]))
  assert presets.pfedhn_steps_per_round(0.01, 10) == 1  # At least one.
