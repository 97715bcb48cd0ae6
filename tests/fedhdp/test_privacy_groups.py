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
"""Privacy groups, the four algorithms' group layouts, and opt-out draws."""

import numpy as np
import pytest

from tff_hdp.fedhdp import algorithms
from tff_hdp.fedhdp import config as config_lib
from tff_hdp.fedhdp import privacy_groups as pg


def test_algorithms_group_layout():
  kw = dict(noise_multipliers=[1.5], effective_noise_multipliers=[1.4],
            lambda_p=0.1, lambda_np=0.2)
  (only,) = pg.build_groups(algorithms.NonPrivate(), **kw)
  assert (only.name, only.is_private, only.clip) == ('non_private', False,
                                                     False)
  assert only.ditto_lambda == 0.2
  (only,) = pg.build_groups(algorithms.DpFedAvg(), **kw)
  assert (only.name, only.noise_multiplier, only.ratio) == ('private', 1.5, 1.0)
  assert only.ditto_lambda == 0.1
  private, non_private = pg.build_groups(algorithms.HdpFedAvg(), **kw)
  assert private.ratio == 1.0 and non_private.ratio == 1.0
  assert non_private.clip and not non_private.is_private
  private, non_private = pg.build_groups(algorithms.FedHdp(ratio=0.01),
                                         **kw)
  assert private.ratio == 0.01 and private.effective_noise_multiplier == 1.4


def test_multi_level_groups_and_strictest_for_dp_fedavg():
  groups = pg.build_groups(algorithms.FedHdp(ratio=(0.01, 0.2)),
                           noise_multipliers=[2.0, 1.0])
  assert [g.name for g in groups] == ['private_1', 'private_2', 'non_private']
  assert [g.ratio for g in groups] == [0.01, 0.2, 1.0]
  (only,) = pg.build_groups(algorithms.DpFedAvg(),
                            noise_multipliers=[1.0, 2.0])
  assert only.noise_multiplier == 2.0


def test_private_group_names():
  # The names the ledger and privacy_report.py give the private levels.
  assert pg.private_group_names(1) == ['private']
  assert pg.private_group_names(3) == ['private_1', 'private_2', 'private_3']


def test_assign_groups():
  opted = np.array([False, True, False, True])
  np.testing.assert_array_equal(
      pg.assign_groups(algorithms.FedHdp(), opted), [0, 1, 0, 1])
  np.testing.assert_array_equal(
      pg.assign_groups(algorithms.DpFedAvg(), opted), [0, 0, 0, 0])
  levels = np.array([1, 0, 0, 0])
  np.testing.assert_array_equal(
      pg.assign_groups(algorithms.FedHdp(), opted, levels), [1, 2, 0, 2])


@pytest.mark.parametrize('bad', [-0.1, 1.5, (0.1, 1.5)])
def test_ratio_outside_unit_interval_is_refused(bad):
  # r is checked where it is set, the config; build_groups relies on it.
  with pytest.raises(ValueError, match=r'^r must be in \[0, 1\], got '):
    config_lib.FedHdpConfig(ratio=bad).validate()


def test_opt_outs_fixed_by_seed_and_sized():
  a = pg.select_opt_outs(2000, 0.05, seed=3)
  b = pg.select_opt_outs(2000, 0.05, seed=3)
  c = pg.select_opt_outs(2000, 0.05, seed=4)
  assert a.sum() == 100
  np.testing.assert_array_equal(a, b)
  assert not np.array_equal(a, c)


def test_skewed_opt_outs_come_from_candidates():
  candidates = np.arange(7, 2000, 10)  # the digit-7 clients
  opted = pg.select_opt_outs(2000, 0.05, seed=0, candidates=candidates)
  assert set(np.flatnonzero(opted)) <= set(candidates)
  assert opted.sum() == 100


@pytest.mark.parametrize('fraction', [-0.1, 1.0])
def test_bad_opt_out_fraction(fraction):
  with pytest.raises(ValueError, match=r'opt-out fraction must be in \[0, 1\)'):
    pg.select_opt_outs(10, fraction, seed=0)


def test_select_levels():
  opted = np.zeros(100, bool)
  opted[:10] = True
  levels = pg.select_levels(opted, [0.2, 0.3], seed=1)
  assert (levels[:10] == 0).all()
  assert np.sum(levels == 1) == 20 and np.sum(levels == 2) == 30
  with pytest.raises(ValueError):
    pg.select_levels(opted, [0.6, 0.4], seed=1)
