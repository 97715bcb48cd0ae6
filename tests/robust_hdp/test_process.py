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
"""End to end: the TFF process and the direct runner, every rule, resume."""

import dataclasses

import dp_accounting

import numpy as np
import pytest

from tff_hdp import templates
from tff_hdp.data import federated_data
from tff_hdp.robust_hdp import config as config_lib
from tff_hdp.robust_hdp import privacy_preferences
from tff_hdp.robust_hdp import process
from tff_hdp.robust_hdp import rule as rule_lib
from tff_hdp.robust_hdp import rule_registry
from tff_hdp.robust_hdp import training


def _data(num_clients=4, n=24, seed=0):
  rng = np.random.default_rng(seed)
  make = lambda k: (rng.random((k, 6, 6)).astype(np.float32),
                    rng.integers(0, 3, k).astype(np.int32))
  train = [make(n + 2 * i) for i in range(num_clients)]
  test = [make(8) for _ in range(num_clients)]
  return federated_data.FederatedData(
      name='tiny', input_shape=(6, 6), num_classes=3, train=train, test=test,
      server_test=make(16))


def _config(algorithm, backend, **kw):
  defaults = dict(epsilons=(1.0, 2.0, 4.0, 8.0), batch_sizes=(4, 8, 8, 16),
                  model='fc', rounds=2, eval_every=1, learning_rate=0.1,
                  rpca_max_iterations=200, mechanism_seed=0)
  defaults.update(kw)
  return config_lib.RobustHdpConfig(algorithm=algorithm, backend=backend,
                                  **defaults)


@pytest.fixture(scope='module')
def data():
  return _data()


def test_config_validate_names_the_field():
  _config('weiavg', 'direct').validate()
  with pytest.raises(ValueError, match=r'^rounds must be >= 1, got 0$'):
    _config('weiavg', 'direct', rounds=0).validate()


def test_calibration_rounds_run_the_first_rounds_of_a_longer_runs_noise(
    data):
  """rounds=2, calibration_rounds=6: the noise of a 6-round run (each
  client's z_i), the epsilon of the 2 rounds that ran (dp_accounting's RDP
  of its Poisson-subsampled Gaussian steps, composed here on the package's
  orders)."""
  with pytest.raises(ValueError, match=r'^calibration_rounds must be >= '
                     r'rounds \(2\) or None, got 1$'):
    _config('weiavg', 'direct', calibration_rounds=1).validate()
  short = _config('weiavg', 'direct', calibration_rounds=6)
  sizes = [len(y) for _, y in data.train]
  z = [c.noise_multiplier for c in process.client_privacy(short, sizes)]
  long = [c.noise_multiplier for c in process.client_privacy(
      _config('weiavg', 'direct', rounds=6), sizes)]
  assert z == long
  assert all(a > b for a, b in zip(z, [
      c.noise_multiplier for c in process.client_privacy(
          _config('weiavg', 'direct'), sizes)]))
  record = training.train(short, data)
  assert len(record['history']) == 2
  for c, n, b, z_i in zip(record['clients'], sizes, (4, 8, 8, 16), z):
    accountant = dp_accounting.rdp.RdpAccountant(
        list(privacy_preferences.ORDERS))
    accountant.compose(dp_accounting.PoissonSampledDpEvent(
        b / n, dp_accounting.GaussianDpEvent(z_i)), 2 * -(-n // b))
    assert c['achieved_epsilon'] == pytest.approx(
        accountant.get_epsilon(short.delta), rel=1e-6)
    assert c['achieved_epsilon'] < c['target_epsilon']


def _fixed_weights(name, **side):
  """The normalised fixed weights of the rule called `name`."""
  return rule_lib.normalized(rule_registry.get(name).fixed_weights(
      rule_lib.SideInformation(**side)))


# The fixed-weight rules run the same server and clients on both backends
# (`FixedWeightRule.weights`): they differ only in their numpy weights and
# calibration epsilons, checked by hand in
# test_aggregation_rules.test_fixed_weights_by_hand, so weiavg stands for
# dpfedavg, min_epsilon and oracle here.
@pytest.mark.parametrize('algorithm', [
    n for n in rule_registry.names()
    if n not in ('dpfedavg', 'min_epsilon', 'oracle')])
def test_tff_and_direct_agree_for_every_rule(tff_runtime, data, algorithm):
  del tff_runtime
  tff_record = training.train(_config(algorithm, 'tff'), data)
  direct = training.train(_config(algorithm, 'direct'), data)
  assert len(tff_record['history']) == 2
  for a, b in zip(tff_record['history'], direct['history']):
    # The clients' updates are bit-identical. RPCA's float64 sums may be
    # grouped differently by TFF's graph optimiser, so Robust-HDP's sigma^2
    # and weights agree to the last bits of a float32: within 1e-6 of each
    # other, as the weights sum to 1 (the step-aware rule's also carry the
    # round-off of the low-rank part's norms, a few float32 ulps at 1);
    # every other rule's weights are exact.
    if rule_registry.get(algorithm).estimates_from_updates:
      np.testing.assert_allclose(a['weights'], b['weights'], rtol=1e-6,
                                 atol=1e-6)
    else:
      assert a['weights'] == b['weights']
    assert a['accuracy'] == b['accuracy']
    np.testing.assert_allclose(a['sigma_hat2'], b['sigma_hat2'], rtol=1e-6)
  assert (tff_record['metrics']['client_accuracy'] ==
          direct['metrics']['client_accuracy'])
  weights = np.array(tff_record['history'][-1]['weights'])
  assert weights.sum() == pytest.approx(1.0, abs=1e-6)
  if isinstance(rule_registry.get(algorithm), rule_lib.FixedWeightRule):
    clients = tff_record['clients']
    expected = _fixed_weights(
        algorithm, epsilons=[1.0, 2.0, 4.0, 8.0],
        num_examples=[c['num_examples'] for c in clients],
        variances=[c['true_sigma2'] for c in clients])
    np.testing.assert_allclose(weights, expected, rtol=1e-6)


def test_record_reports_every_client(data):
  record = training.train(_config('robust_hdp', 'direct'), data)
  clients = record['clients']
  assert [c['num_examples'] for c in clients] == [24, 26, 28, 30]
  assert [c['batch_size'] for c in clients] == [4, 8, 8, 16]
  for c, eps in zip(clients, (1.0, 2.0, 4.0, 8.0)):
    assert c['target_epsilon'] == eps
    assert c['achieved_epsilon'] <= eps * (1 + 1e-6)
    assert c['noise_multiplier'] > 0
  entry = record['history'][0]
  assert len(entry['sigma_hat2']) == 4 and min(entry['sigma_hat2']) > 0
  assert entry['noise_power'] > 0


def test_same_noise_keys_for_every_rule(data):
  # The first round starts from the same model with the same DP-SGD keys, so
  # two rules with the same weights (dpfedavg, min_epsilon with equal eps)
  # produce the same model.
  kw = dict(epsilons=(2.0,) * 4)
  a = training.train(_config('dpfedavg', 'direct', **kw), data)
  b = training.train(_config('min_epsilon', 'direct', **kw), data)
  assert a['metrics']['client_accuracy'] == b['metrics']['client_accuracy']


def test_first_round_only_reuses_the_weights(data):
  record = training.train(
      _config('robust_hdp', 'direct', first_round_only=True, rounds=3), data)
  w = [h['weights'] for h in record['history']]
  assert w[0] == w[1] == w[2]
  assert record['history'][1]['sigma_hat2'] == [0.0] * 4
  every = training.train(_config('robust_hdp', 'direct', rounds=3), data)
  assert every['history'][1]['weights'] != every['history'][0]['weights']


def test_bad_config_is_refused(data):
  with pytest.raises(ValueError, match='algorithm must be one of'):
    training.train(_config('fedavg', 'direct'), data)
  with pytest.raises(ValueError, match='4 clients'):
    training.train(_config('weiavg', 'direct', epsilons=(1.0,) * 3,
                           batch_sizes=(4,) * 3), data)
  with pytest.raises(ValueError, match='accountant must be one of rdp, pld'):
    training.train(_config('weiavg', 'direct', accountant='prv'), data)


def test_clip_only_removes_exactly_the_noise(data):
  # One DP-SGD step a round (b_i = N_i, so q_i = 1): the same key draws the
  # same batch with and without noise, so the two global models differ by
  # the aggregate's noise alone, -eta sum_i w_i N(0, c^2 z_i^2 I) / b_i,
  # whose per-coordinate variance is computed here from the clients' z_i.
  kw = dict(batch_sizes=(24, 26, 28, 30), rounds=1)
  models = {}
  for clip_only in (False, True):
    experiment = training.prepare(
        _config('oracle', 'direct', clip_only=clip_only, **kw), data)
    run = training.run_rounds(experiment)
    models[clip_only] = np.concatenate(
        [np.ravel(w) for w in templates.global_weights(run.state)])
    weights = np.array(run.history[0]['weights'])
    record = training.results_record(experiment, run, 0.0)
  # The rule weighs as the calibrated run does.
  z = np.array([c.noise_multiplier for c in experiment.clients])
  expected = _fixed_weights(
      'oracle', epsilons=[1.0, 2.0, 4.0, 8.0], num_examples=[24, 26, 28, 30],
      variances=(z / np.array([24, 26, 28, 30]))**2)
  np.testing.assert_allclose(weights, expected, rtol=1e-6)
  variance = 0.1**2 * np.sum(
      (weights * 3.0 * z / np.array([24, 26, 28, 30]))**2)
  difference = models[False] - models[True]
  # Over p = 2,003 coordinates the sample variance's standard error is 3%:
  # 15% is over 4 of them.
  assert np.var(difference) == pytest.approx(variance, rel=0.15)
  assert abs(np.mean(difference)) < 4 * np.sqrt(variance / len(difference))
  assert record['privacy']['is_bound'] is False
  assert 'clip only: no noise was added' in (
      record['privacy']['not_bound_because'])


def test_clip_only_refuses_a_rule_that_does_not_clip_and_the_tff_backend():
  with pytest.raises(ValueError, match=r'^clip_only needs a rule whose '
                     r'clients clip, got non_private: its clients run '
                     r'plain SGD$'):
    _config('non_private', 'direct', clip_only=True).validate()
  # A rule weighing by the updates weighs the noised ones, which its
  # clients compute in a second pass: the direct backend's.
  _config('robust_hdp', 'direct', clip_only=True).validate()
  with pytest.raises(ValueError, match=r'^clip_only with rule robust_hdp, '
                     r'whose weights come from the noised updates, needs '
                     r"backend direct .*, got 'tff'$"):
    _config('robust_hdp', 'tff', clip_only=True).validate()


def test_clip_only_weighs_the_noised_updates(data):
  # Round 1 starts from the same model with the same keys: a clip-only run
  # of a rule weighing by the updates weighs the noised updates its clients
  # would have sent, so its first weights are the noisy run's, exactly
  # (the step-aware rule's take the same path).
  runs = [training.run_rounds(training.prepare(
      _config('robust_hdp', 'direct', rounds=1, clip_only=c), data))
          for c in (False, True)]
  noisy, clean = (run.history[0] for run in runs)
  assert noisy['weights'] == clean['weights']
  assert noisy['sigma_hat2'] == clean['sigma_hat2']
  assert min(clean['sigma_hat2']) > 0
  # The models differ by the noise the clip-only run did not add.
  noisy, clean = (np.concatenate([np.ravel(w) for w in
                                  templates.global_weights(run.state)])
                  for run in runs)
  assert np.abs(noisy - clean).max() > 1e-3


def test_prepare_takes_a_calibration_it_checks(data):
  # HDP-Bench calibrates in its own process and hands the clients'
  # calibration to the run: the same experiment, not calibrated again.
  config = _config('min_epsilon', 'direct')
  sizes = [len(y) for _, y in data.train]
  clients = process.client_privacy(config, sizes)
  given = training.prepare(config, data, clients=clients)
  assert given.clients == training.prepare(config, data).clients
  assert given.variances == training.prepare(config, data).variances
  # A calibration of other rounds (so other steps) is refused.
  other = process.client_privacy(_config('min_epsilon', 'direct', rounds=3),
                                 sizes)
  with pytest.raises(ValueError, match=r'^clients: client 0 was calibrated '
                     r'as .* not for \(epsilon, b, N, steps\) = '
                     r'\(1\.0, 4, 24, 12\) of this run$'):
    training.prepare(config, data, clients=other)
  with pytest.raises(ValueError, match=r'^clients: 3 calibrations for 4 '):
    training.prepare(config, data, clients=clients[:3])
  # A noise multiplier under the calibration's spends more than epsilon_i.
  weaker = [dataclasses.replace(c, noise_multiplier=c.noise_multiplier / 2)
            if c.noise_multiplier else c for c in clients]
  with pytest.raises(ValueError, match=r"^clients: client 0's noise "
                     r'multiplier .* spends epsilon .* over its 1 in this '
                     r'run; allowed: a z_i of at most'):
    training.prepare(config, data, clients=weaker)
