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
"""A Robust-HDP rule is one object in one file: the toy rule below,
registered from this file alone, runs in the TFF learning process
(`build_robust_hdp_process`) and in HDP-Bench, and the registry refuses
what is not a rule in one line."""

import numpy as np
import pytest

from tests import user_code
from tff_hdp import bench
from tff_hdp import datasets
from tff_hdp.bench import benchmark
from tff_hdp.bench import registry as bench_registry
from tff_hdp.robust_hdp import config as config_lib
from tff_hdp.robust_hdp import rule
from tff_hdp.robust_hdp import rule_registry
import tff_hdp.robust_hdp
from tff_hdp.privacy.preferences import Preferences


class SquaredSizes(rule.FixedWeightRule):
  """A toy rule: w_i proportional to N_i^2 (its server is told N_i)."""

  name = 'toy_squared_sizes'
  label = 'Squared sizes'
  server_knows = 'N_i'

  def fixed_weights(self, side):
    return np.square(np.asarray(side.num_examples, np.float64))


@pytest.fixture
def toy_rule():
  rule_registry.register(SquaredSizes())
  yield SquaredSizes.name
  rule_registry.unregister(SquaredSizes.name)
  bench_registry.unregister(SquaredSizes.name)


SIZES = (8, 9, 10, 11, 12)
# One epsilon and batches of every example (b_i = N_i, q_i = 1): one
# calibration of z, at once (the accountant's Gaussian without sampling).
EPSILONS = (2.0,) * 5
FULL_BATCHES = (1000,) * 5


def test_a_rule_of_this_file_runs_in_the_process(tff_runtime, toy_rule):
  del tff_runtime
  config = tff_hdp.robust_hdp.RobustHdpConfig(
      algorithm=toy_rule, epsilons=EPSILONS,
      batch_sizes=FULL_BATCHES, rounds=2, seed=1, mechanism_seed=1)
  process = tff_hdp.robust_hdp.build_robust_hdp_process(
      user_code.PACKAGE,
      Preferences(epsilons=config.epsilons,
                  batch_sizes=config.batch_sizes,
                  num_examples=SIZES),
      config=config)
  clients = tff_hdp.robust_hdp.build_data_source(
      process, user_code.client_data(SIZES, 'c')).iterator().select()
  output = process.next(process.initialize(), clients)
  squares = np.square(SIZES)
  np.testing.assert_allclose(output.metrics['aggregator']['weights'],
                             squares / squares.sum(), rtol=1e-6)
  # A partial cohort: the weights renormalised among its clients.
  output = process.next(output.state, [clients[0], clients[4]])
  np.testing.assert_allclose(output.metrics['aggregator']['weights'],
                             [64 / 208, 0, 0, 0, 144 / 208], rtol=1e-6)
  assert process.participation(output.state)['client_4'] == 2


def test_a_rule_of_this_file_is_a_method_of_the_bench(toy_rule):
  (method,) = bench.get([toy_rule])
  assert method.guarantee == bench.SAMPLE_LEVEL
  assert method.server_knows == 'N_i'
  data = datasets.load_robust_hdp_data('digits', num_clients=4,
                                       shards_per_client=2)
  setting = bench.Setting(data=data, rounds=2, model='fc')
  preferences = bench.Preferences('equal', EPSILONS[:4], FULL_BATCHES[:4])
  (result,) = benchmark.run(setting, [preferences], [method], seeds=[0],
                            mechanism_seed=0)
  assert result.method == toy_rule and 0 <= result.accuracy <= 100
  assert all(0 < s <= a * (1 + 1e-9)
             for s, a in zip(result.spent, result.asked))
  # Worker processes import only the package and the files they are given.
  with pytest.raises(ValueError, match=rf"^method '{toy_rule}' was "
                     r'registered by tests.robust_hdp.test_rule_registry'):
    benchmark.run(setting, [preferences], [method], seeds=[0], jobs=2)


def test_a_private_rule_of_this_file_joins_the_claim_line(toy_rule):
  """Registered from here, with nothing edited elsewhere: a 'baseline' by
  default, so the claim compares Robust-HDP with it too."""
  from tff_hdp import claims  # pylint: disable=g-import-not-at-top
  from tff_hdp.robust_hdp import table_rows  # pylint: disable=g-import-not-at-top
  del toy_rule
  line = claims.robust_hdp(
      {'Robust-HDP': 60.0, 'WeiAvg': 50.0, 'Squared sizes': 61.0,
       'Non-private': 95.0}, table_rows.roles())
  assert line == ('Robust-HDP >= every private baseline run (WeiAvg, '
                  'Squared sizes): no (60.00 vs 61.00, Squared sizes)')


def test_a_role_outside_the_list_is_refused():
  class Unknown(SquaredSizes):
    name = 'toy_unknown_role'
    role = 'champion'
  with pytest.raises(ValueError, match='role must be one of proposed, '
                     'baseline, oracle, ours, reference'):
    rule_registry.register(Unknown())


def test_the_registry_refuses_in_one_line(toy_rule):
  assert rule_registry.names()[-1] == toy_rule  # The package's come first.
  with pytest.raises(TypeError, match=r'^register takes a tff_hdp\.'
                     r'robust_hdp\.rule\.Rule, got str$'):
    rule_registry.register('weiavg')

  class Impostor(SquaredSizes):
    pass

  with pytest.raises(ValueError, match=r"^a rule named 'toy_squared_sizes' "
                     r'is already registered \(SquaredSizes\)$'):
    rule_registry.register(Impostor())
  with pytest.raises(ValueError, match=r"^unknown rule 'fedavg'; registered: "
                     r'robust_hdp, weiavg, .*, toy_squared_sizes$'):
    rule_registry.get('fedavg')
  with pytest.raises(ValueError, match=r'^algorithm must be one of '
                     r'robust_hdp, .*, got .fedavg.$'):
    config_lib.RobustHdpConfig(algorithm='fedavg', epsilons=(1.0,),
                               batch_sizes=(4,)).validate()
