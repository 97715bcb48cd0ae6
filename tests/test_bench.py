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
"""HDP-Bench: a new method is one object in one file; every calibration meets
every client's epsilon_i (checked against the independent accountant of
tests/privacy/test_accounting.py); individual sampling is flidp's;
individual clip norms (Scale) are the idp-sgd authors', run each client at
its calibrated multiplier and add the planned noise; a row that overspends
is never ranked; the binary's leaderboard and refusals.

The toy method below is a whole method: registered from this file, and
written alone to a file of its own for the binary (--extra_methods).
"""

import functools
import inspect
import json
import math

import dp_accounting
import numpy as np
import pytest

from tests import binaries
from tests.privacy import test_accounting as reference
from tff_hdp import bench
from tff_hdp import datasets
from tff_hdp.bench import benchmark
from tff_hdp.bench import leaderboard
from tff_hdp.bench import method as method_lib
from tff_hdp.bench import preferences as preferences_lib
from tff_hdp.bench.methods import individual_sampling
from tff_hdp.bench.methods import individual_scale
from tff_hdp.privacy import accounting
from tff_hdp.privacy import mechanism_key
from tff_hdp.privacy import privacy_ledger


class MajorityLabel(bench.Method):
  """A toy method: each client predicts its training data's majority label,
  behind a mechanism of noise multiplier 50 (so every budget is met)."""

  name = 'toy_majority'
  threat_model = 'nobody trusted (nothing leaves a client)'
  guarantee = bench.CLIENT_LEVEL
  server_knows = 'nothing'

  def calibrate(self, setting, preferences):
    return bench.Calibration(
        clients=tuple(bench.ClientMechanism(1.0, 50.0, setting.rounds)
                      if math.isfinite(e) else None
                      for e in preferences.epsilons),
        config=None)

  def run(self, setting, calibration, *, seed, mechanism_seed=None):
    del seed, mechanism_seed
    hits = [np.mean(yt == np.bincount(y).argmax())
            for (_, y), (_, yt) in zip(setting.data.train, setting.data.test)]
    return bench.Outcome(
        accuracy=100.0 * float(np.mean(hits)),
        epsilons=method_lib.planned_epsilons(calibration, setting.delta))


bench.register(MajorityLabel)


@pytest.fixture(scope='module')
def setting():
  data = datasets.load_robust_hdp_data('digits', num_clients=6,
                                       shards_per_client=2)
  return bench.Setting(data=data, rounds=3, model='fc', batch_size=16)


PREFERENCES = bench.Preferences('mixed', (0.5, 1.0, 1.0, 2.0, 4.0, 8.0),
                                (8, 8, 16, 16, 32, 32))


@functools.lru_cache(maxsize=None)
def _reference_epsilon(m: bench.ClientMechanism, delta: float) -> float:
  """epsilon of a client's mechanism by the independent reference (scipy
  quadrature of A_alpha on dp_accounting's orders, written out there).

  Cached: a mechanism equal field for field (a client checked twice, equal
  clients, or one calibration shared by several methods) is computed once.
  """
  orders = reference._ORDERS  # pylint: disable=protected-access
  rdp = reference._reference_rdp(  # pylint: disable=protected-access
      m.sampling_rate, m.noise_multiplier, m.steps, orders,
      reference._log_a_quad)  # pylint: disable=protected-access
  return reference._reference_epsilon(orders, rdp, delta)  # pylint: disable=protected-access


def test_a_toy_method_of_this_file_runs_in_the_benchmark(setting):
  methods = bench.registered()
  assert list(methods)[-1] == 'toy_majority'  # The package's come first.
  assert list(methods)[:8] == ['robust_hdp', 'weiavg', 'pfa', 'dpfedavg',
                               'min_epsilon', 'oracle', 'step_aware',
                               'non_private']
  results = benchmark.run(setting, [PREFERENCES], [methods['toy_majority']],
                          seeds=[0, 1])
  assert [(r.method, r.seed) for r in results] == [('toy_majority', 0),
                                                   ('toy_majority', 1)]
  boards = leaderboard.leaderboards(results, methods)
  (row,) = boards[bench.CLIENT_LEVEL.family]
  assert row.rank == 1 and row.budgets_met and row.valid
  assert row.accuracy['mixed'][2] == 2  # Two seeds.
  with pytest.raises(ValueError, match="already registered"):
    bench.register(_Impostor())


class _Impostor(MajorityLabel):
  """Another class under a registered name."""


def test_jobs_refuse_a_method_no_worker_can_find(setting):
  # The toy method of this file is registered here only: a worker process
  # would not find it. Refused before any worker starts.
  with pytest.raises(ValueError, match=r"^method 'toy_majority' was "
                     r'registered by tests.test_bench, which the worker '):
    benchmark.run(setting, [PREFERENCES], bench.get(['toy_majority']),
                  seeds=[0], jobs=2)


@pytest.mark.parametrize('name', ['robust_hdp', 'min_epsilon', 'oracle',
                                  'fedhdp', 'hdp_fedavg', 'dp_fedavg_min',
                                  'udp_min'])
def test_every_calibration_meets_every_clients_epsilon(setting, name):
  m = bench.registered()[name]
  calibration = m.calibrate(setting, PREFERENCES)
  asked = PREFERENCES.epsilons
  for i in (0, 3, 5):  # The strictest, a middle and the loosest client.
    mechanism = calibration.clients[i]
    assert mechanism is not None
    spent = _reference_epsilon(mechanism, setting.delta)
    assert spent <= asked[i] * (1 + 1e-6), (name, i, spent, asked[i])
  # Who is calibrated exactly: every client (Robust-HDP, the Oracle), the
  # strictest (every method: its level, or everyone, is at min epsilon).
  assert _reference_epsilon(calibration.clients[0], setting.delta) == (
      pytest.approx(0.5, rel=1e-3))
  if name in ('robust_hdp', 'oracle'):
    assert _reference_epsilon(calibration.clients[5], setting.delta) == (
        pytest.approx(8.0, rel=1e-3))


def _flidp_rate(epsilon, sigma, rounds, delta):
  """luckyos-code/flidp's sampling rate of a budget at noise multiplier
  sigma (in its `get_sample_rates`): dp_accounting's calibration over q in
  [0, 1] on its RDP accountant. flidp bisects sigma until these rates,
  weighted by the budgets' shares of the clients, average to the target."""
  def event(q):
    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(
            q, dp_accounting.GaussianDpEvent(sigma)), rounds)

  # A budget that even q = 1 does not spend is sampled every round (there is
  # no root in [0, 1] to find).
  if dp_accounting.rdp.RdpAccountant().compose(event(1.0)).get_epsilon(
      delta) <= epsilon:
    return 1.0
  return dp_accounting.calibrate_dp_mechanism(
      dp_accounting.rdp.RdpAccountant, event, epsilon, delta,
      bracket_interval=dp_accounting.ExplicitBracketInterval(0, 1))


def test_individual_sampling_is_flidps_and_spends_each_epsilon():
  epsilons = (0.5, 1.0, 1.0, 2.0, 4.0)
  z, rates = individual_sampling.individual_rates(epsilons, 0.2, 10, 1e-4)
  # (z, rates) solve flidp's equations: at z, flidp's rate of each budget
  # is the client's (its search of sigma would stop here: their mean is the
  # target, and the mean grows steeply with sigma).
  theirs = {e: _flidp_rate(e, z, 10, 1e-4) for e in set(epsilons)}
  for eps, q in zip(epsilons, rates):
    assert q == pytest.approx(theirs[eps], rel=0.02)
    # Each client spends its own epsilon, by the independent reference.
    spent = _reference_epsilon(bench.ClientMechanism(q, z, 10), 1e-4)
    # Calibrated on fewer RDP orders (`individual_sampling.ORDERS`), so at
    # most epsilon_i, and within 3% of it.
    assert spent == pytest.approx(eps, rel=0.03) and spent <= eps * (1 + 1e-6)
  assert np.mean([theirs[e] for e in epsilons]) == pytest.approx(0.2,
                                                                 rel=0.01)
  assert rates.mean() == pytest.approx(0.2, rel=0.01)
  # A looser client is sampled more often, at the same noise.
  assert list(rates) == sorted(rates)


# Three distinct epsilons and an opt-out: each distinct epsilon is one
# calibration of z at q = 0.5 (about 3 s of RDP on the two-core machine).
SCALE_PREFERENCES = bench.Preferences('scale',
                                      (1.0, 2.0, 8.0, 8.0, math.inf, 2.0))


def _scale_run(setting):
  """idp_scale's calibration to SCALE_PREFERENCES and its experiment (the
  direct backend's pieces, mechanism seed 0)."""
  from tff_hdp.fedhdp import training  # pylint: disable=g-import-not-at-top
  calibration = bench.get(['idp_scale'])[0].calibrate(setting,
                                                      SCALE_PREFERENCES)
  experiment = method_lib.prepare_run(training, calibration.config[0],
                                      setting, seed=0, mechanism_seed=0)
  return calibration, experiment


def test_individual_scale_spends_each_epsilon_with_the_authors_clips(setting):
  calibration = bench.get(['idp_scale'])[0].calibrate(setting,
                                                      SCALE_PREFERENCES)
  config, clips = calibration.config
  asked = SCALE_PREFERENCES.epsilons
  private = [i for i, e in enumerate(asked) if math.isfinite(e)]
  for i in private:
    mechanism = calibration.clients[i]
    assert (mechanism.sampling_rate, mechanism.steps) == (
        setting.sampling_rate, setting.rounds)
    spent = _reference_epsilon(mechanism, setting.delta)
    assert spent <= asked[i] * (1 + 1e-6), (i, spent)
    assert spent == pytest.approx(asked[i], rel=1e-3)
  assert calibration.clients[4] is None  # The opt-out: no guarantee.
  # sprintml/idp-sgd's `get_weights` (individualize='clipping'), written
  # out on the value multipliers v_p (z_p less the clipped count's share,
  # z_b = 2 max z_p): sigma_bar = sum_p r_p v_p over the privacy groups'
  # shares r_p, and C_p = S sigma_bar / v_p.
  z = {asked[i]: calibration.clients[i].noise_multiplier for i in private}
  z_b = 2 * max(z.values())
  v = {e: (z_e**-2 - (2 * z_b)**-2)**-0.5 for e, z_e in z.items()}
  shares = {e: sum(asked[i] == e for i in private) / len(private) for e in v}
  sigma_bar = sum(shares[e] * v[e] for e in v)
  for i in private:
    assert clips[i] == pytest.approx(1.0 * sigma_bar / v[asked[i]],
                                     rel=1e-12)
  # So the private clients' clips have harmonic mean S = 1; the group clips
  # at the largest, the loosest client's and the opt-out's.
  assert len(private) / sum(1 / clips[i] for i in private) == (
      pytest.approx(1.0, rel=1e-12))
  assert clips[4] == max(clips) == clips[2] == clips[3] == config.initial_clip
  assert config.noise_multiplier == calibration.clients[3].noise_multiplier
  assert config.clipped_count_stddev == z_b
  with pytest.raises(ValueError, match='need a client with a finite'):
    bench.get(['idp_scale'])[0].calibrate(
        setting, bench.Preferences('none', (math.inf,) * 6))


def test_individual_scale_runs_each_clients_calibrated_multiplier(setting):
  calibration, experiment = _scale_run(setting)
  _, clips = calibration.config
  accounted = [i for i, m in enumerate(calibration.clients) if m is not None]
  rounds = individual_scale.scaled_rounds(experiment, clips, accounted)
  ledger = privacy_ledger.PrivacyLedger()
  rounds.account(ledger, 0)
  assert set(ledger.groups) == {f'client_{i}' for i in accounted}
  # What runs: the group's value noise v S_max on the sum, client i's
  # update clipped to S_i, the clipped count's noise z_b.
  (group,) = experiment.setup.groups
  v, s_max = group.noise_multiplier, experiment.config.initial_clip
  z_b = experiment.setup.clipped_count_stddev
  for i in accounted:
    ((q, z, count),) = ledger.history(f'client_{i}')
    value = v * s_max / clips[i]  # Client i's value noise multiplier.
    by_hand = (value**-2 + (2 * z_b)**-2)**-0.5
    assert (q, count) == (setting.sampling_rate, 1)
    assert z == pytest.approx(by_hand, rel=1e-12)
    assert by_hand == pytest.approx(
        calibration.clients[i].noise_multiplier, rel=1e-9)


def test_individual_scale_takes_the_noised_step_on_an_empty_cohort(setting):
  """A round with nobody (issue 60): idp_scale's rounds, on FedHDP's driver,
  release the group's noise on a zero sum over the fixed denominator q N,
  with the same measurements as a round with clients."""
  calibration, experiment = _scale_run(setting)
  _, clips = calibration.config
  accounted = [i for i, m in enumerate(calibration.clients) if m is not None]
  rounds = individual_scale.scaled_rounds(experiment, clips, accounted)
  state = rounds.start(np.array([4, 2], np.int64))
  theta = np.concatenate([w.ravel() for w in state['global_weights']])
  _, with_clients = rounds.run_round(state, 0)
  rounds._cohort = lambda rng: np.zeros(0, np.int64)  # pylint: disable=protected-access
  after, nobody = rounds.run_round(state, 1)
  assert set(nobody) == set(with_clients)
  delta = np.concatenate([w.ravel() for w in after['global_weights']]) - theta
  (group,) = experiment.setup.groups
  expected = (group.noise_multiplier * experiment.config.initial_clip /
              (setting.sampling_rate * setting.num_clients))
  assert abs(np.std(delta) / expected - 1) < 5 / math.sqrt(2 * delta.size)


def test_individual_scale_clips_as_if_each_epsilon_were_calibrated_alone(
    monkeypatch):
  # idp_scale calibrates its epsilons together (one search, each z checked
  # by dp_accounting): its clips are those of calibrating each epsilon on
  # its own (accounting.noise_multiplier_for_epsilon), within tol of z.
  epsilons, q, rounds, delta = (1.0, 4.0, math.inf, 4.0), 0.2, 3, 1e-5
  together = individual_scale.individual_clips(epsilons, q, rounds, delta)
  monkeypatch.setattr(
      method_lib, 'noise_multipliers_for_epsilons',
      lambda es, q, t, d, accountant: tuple(
          accounting.noise_multiplier_for_epsilon(e, q, t, d,
                                                  accountant=accountant)
          for e in es))
  one_by_one = individual_scale.individual_clips(epsilons, q, rounds, delta)
  tol = accounting.DEFAULT_NOISE_TOLERANCE
  assert together.noise_multipliers[2] is one_by_one.noise_multipliers[2] is (
      None)
  for i in (0, 1, 3):
    assert abs(together.noise_multipliers[i] -
               one_by_one.noise_multipliers[i]) <= tol
  # S_i, sigma and S_max move with z by a relative ~tol / z.
  np.testing.assert_allclose(together.clips, one_by_one.clips, rtol=1e-5)
  for field in ('clipped_count_stddev', 'noise_stddev', 'group_clip',
                'group_noise_multiplier'):
    assert getattr(together, field) == pytest.approx(
        getattr(one_by_one, field), rel=1e-5), field


def test_individual_scale_clips_each_client_to_its_own_norm():
  deltas = [np.array([[3.0, 4.0], [0.3, 0.0], [5.0, 0.0]], np.float32),
            np.array([[[0.0, 0.0]], [[0.0, 0.4]], [[0.0, 12.0]]],
                     np.float32)]
  clips = [1.0, 1.0, 2.6]  # Norms 5, 0.5 and 13.
  clipped = individual_scale.clip_each(deltas, clips)
  norms = np.sqrt(sum(np.sum(np.square(d.reshape(3, -1)), 1)
                      for d in clipped))
  np.testing.assert_allclose(norms, [1.0, 0.5, 2.6], rtol=1e-6)
  np.testing.assert_allclose(clipped[0][0], [0.6, 0.8], rtol=1e-6)
  np.testing.assert_allclose(clipped[1][2], [[0.0, 2.4]], rtol=1e-6)
  for d, c in zip(deltas, clipped):  # Within its norm: unchanged, exactly.
    assert c.dtype == np.float32 and np.array_equal(c[1], d[1])
  empty = individual_scale.clip_each([np.zeros((0, 2, 2), np.float32)], [])
  assert empty[0].shape == (0, 2, 2)


def test_individual_scale_clips_the_direct_backends_updates_by_client(
    setting):
  from tff_hdp.fedhdp import executors  # pylint: disable=g-import-not-at-top
  calibration, experiment = _scale_run(setting)
  _, clips = calibration.config
  backend = experiment.executor
  state = backend.initialize(mechanism_key.new_key(0))
  # Clients 2, 0 and 5 with 1, 3 and 2 local steps: trained longest first.
  cohort = [(2, 16), (0, 48), (5, 32)]
  data = [tuple(a[:n] for a in setting.data.train[c]) for c, n in cohort]
  theta = [np.asarray(w) for w in state['global_weights']]
  info = [{'group': np.int32(0), 'client_id': np.int32(c)}
          for c, _ in cohort]
  work = backend.client_work(state, executors.Cohort(data, info, [theta] * 3))
  assert list(work.client_ids) == [0, 5, 2]
  clipped = individual_scale.clip_each(work.deltas,
                                       np.asarray(clips)[work.client_ids])
  norms = np.sqrt(sum(np.sum(np.square(np.reshape(d, (3, -1))), 1)
                      for d in clipped))
  assert np.all(norms <= np.array(clips)[[0, 5, 2]] * (1 + 1e-6))
  # The server's noise on all-zero updates: N(0, (v S_max)^2) a coordinate
  # of the group's release (its sum before the mean), v S_max = sigma.
  zeros = individual_scale.clip_each(
      [np.zeros_like(np.asarray(d)) for d in work.deltas], [1.0] * 3)
  _, _, releases = backend.aggregate(state, zeros, work.groups)
  noise = np.concatenate([np.ravel(r) for r in releases[0]])
  (group,) = experiment.setup.groups
  sigma = group.noise_multiplier * experiment.config.initial_clip
  individual = individual_scale.individual_clips(
      SCALE_PREFERENCES.epsilons, setting.sampling_rate, setting.rounds,
      setting.delta)
  assert sigma == pytest.approx(individual.noise_stddev, rel=1e-9)
  d = noise.size  # One draw per coordinate: 5 standard errors.
  assert abs(noise.std() - sigma) < 5 * sigma / math.sqrt(2 * d), d
  assert abs(noise.mean()) < 5 * sigma / math.sqrt(d)


def test_individual_scale_meets_every_budget_in_the_benchmark(setting):
  (result,) = benchmark.run(setting, [SCALE_PREFERENCES],
                            bench.get(['idp_scale']), seeds=[0],
                            mechanism_seed=0)
  assert result.budgets_met and math.isfinite(result.accuracy)
  assert result.spent[4] == math.inf  # The opt-out.
  for spent, planned in zip(result.spent, result.planned):
    assert spent == pytest.approx(planned, rel=1e-9)


def _run(method, preferences, spent, accuracy=50.0):
  return leaderboard.RunResult(method, preferences, 0, accuracy,
                               spent=tuple(spent), asked=(1.0, 2.0),
                               planned=tuple(spent))


def test_a_row_that_overspends_is_never_ranked():
  methods = bench.registered()
  results = [_run('toy_majority', 'd', (1.0, 2.0), 40.0),
             _run('fedhdp', 'd', (1.0, 2.0000001), 90.0),  # Over by 5e-8.
             _run('idp_sample', 'd', (0.9, 1.5), 60.0)]
  (rows,) = leaderboard.leaderboards(results, methods).values()
  by_name = {r.method: r for r in rows}
  assert by_name['fedhdp'].rank is None and not by_name['fedhdp'].budgets_met
  assert (by_name['idp_sample'].rank, by_name['toy_majority'].rank) == (1, 2)
  text = leaderboard.markdown({'family': rows}, ['d'])
  line = next(l for l in text.splitlines() if '| fedhdp |' in l)
  assert line.startswith('| invalid |') and '| NO |' in line


def test_preferences_from_a_csv(tmp_path):
  path = tmp_path / 'mine.csv'
  path.write_text('epsilon,batch_size\n1.5,16\ninf,32\n')
  prefs = preferences_lib.from_csv(str(path), 2)
  assert prefs.epsilons == (1.5, math.inf) and prefs.batch_sizes == (16, 32)
  assert prefs.private == (True, False)
  dist = preferences_lib.distribution('dist1', 20)
  assert dist.epsilons[0] == 2.81 and dist.batch_sizes[0] == 32
  path.write_text('epsilon\ninf\ninf\n')
  with pytest.raises(ValueError, match='every client opts out'):
    preferences_lib.from_csv(str(path), 2)


def _bench(args, output_dir):
  return binaries.run('hdp_bench.py', [*args, f'--output_dir={output_dir}',
                                       '--noprogress'], timeout=900)


TOY_FILE = ('import math\n\nimport numpy as np\n\nfrom tff_hdp import bench\n'
            'from tff_hdp.bench import method as method_lib\n\n\n' +
            inspect.getsource(MajorityLabel) + '\n\nbench.register(MajorityLabel)\n')


def _write_preferences(path, rows):
  path.write_text('epsilon,batch_size\n' +
                  ''.join(f'{e},{b}\n' for e, b in rows))


def test_the_binary_ranks_a_tiny_population(tmp_path):
  (tmp_path / 'toy_method.py').write_text(TOY_FILE)
  # Two preference sets of four distinct (epsilon_i, b_i) among them, so
  # that the 20 clients' calibrations are few (and remembered).
  _write_preferences(tmp_path / 'strict.csv', [(1, 16), (2, 32)] * 10)
  _write_preferences(tmp_path / 'mixed.csv',
                     [(1, 16), (2, 32), (8, 16), (8, 32)] * 5)
  out = tmp_path / 'bench'
  result = _bench(['--cross_silo_dataset=digits', '--model=fc', '--rounds=2',
                   f'--preferences_csv={tmp_path / "strict.csv"},'
                   f'{tmp_path / "mixed.csv"}', '--seeds=0',
                   '--methods=dpfedavg,non_private,toy_majority', '--jobs=1',
                   '--mechanism_seed=0',
                   f'--extra_methods={tmp_path / "toy_method.py"}'], out)
  assert result.returncode == 0, result.stderr[-3000:]
  text = (out / 'leaderboard.md').read_text()
  assert text in result.stdout
  for column in ('rank', 'method', 'strict acc%', 'mixed acc%', 'mean acc%',
                 'every budget met', 'max spent/asked', 'server knows',
                 'guarantee', 'wall s'):
    assert f' {column} |' in text, column
  assert '### sample-level, per client (untrusted server)' in text
  assert '### client-level, per client (trusted server)' in text
  assert '| ref. | non_private |' in text
  record = json.loads((out / 'leaderboard.json').read_text())
  # The 20-row files fit the cross-silo population only: it alone ran.
  (record,) = record['populations'].values()
  assert len(record['runs']) == 6
  for run in record['runs']:
    assert len(run['spent']) == len(run['asked']) == 20
    if run['method'] != 'non_private':
      assert all(s <= a * (1 + 1e-9)
                 for s, a in zip(run['spent'], run['asked']))
  assert (out / 'leaderboard.png').stat().st_size > 10_000
  assert (out / 'runs.jsonl').read_text().count('\n') == 6
  # --jobs=1: the six runs in this process, one after another, not in two
  # worker processes that each import TensorFlow and TFF again (23 s of
  # three processes before, on two cores). That a run in one of the
  # workers is the run of this process, to float round-off, is
  # tests/test_bench_parallel.py's
  # test_populations_share_the_workers_and_match_one_process (the same
  # workers, `parallel`, that --jobs=2 starts, with a file of
  # --extra_methods in its other test).


@pytest.mark.parametrize('args,message', [
    (['--methods=fedavg'], "--methods: unknown method 'fedavg'; registered: "),
    (['--distributions=dist10'], "unknown distribution 'dist10'"),
    (['--preferences_csv=NEGATIVE'], 'row 3: epsilon must be a number > 0'),
    (['--preferences_csv=SHORT'], '2 rows of preferences (one per client), '
     'and no population has 2 clients (cross_silo 20, cross_device 2000)'),
    (['--populations=cross_silo,edge'], "unknown population 'edge'"),
    (['--mixtures=paper002'], "unknown mixture 'paper002'; built in: "
     'paper001'),
    (['--preferences_csv=HALVES'], 'fractions must be > 0 and sum to 1'),
    (['--distributions=dist1', '--populations=cross_device'],
     'Dist1-Dist9 hold 20, 40 or 60 clients, and the populations have '
     'cross_device 2000'),
    (['--rounds=0'], '--rounds must be >= 1'),
    (['--jobs=0'], '--jobs must be >= 1, got 0'),
])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, args,
                                                      message):
  (tmp_path / 'NEGATIVE.csv').write_text('epsilon\n1\n-2\n' + '1\n' * 18)
  (tmp_path / 'SHORT.csv').write_text('epsilon\n1\n2\n')
  (tmp_path / 'HALVES.csv').write_text('fraction,epsilon\n0.5,1\n0.6,2\n')
  args = [a.replace('NEGATIVE', str(tmp_path / 'NEGATIVE.csv'))
          .replace('SHORT', str(tmp_path / 'SHORT.csv'))
          .replace('HALVES', str(tmp_path / 'HALVES.csv')) for a in args]
  binaries.assert_refused('hdp_bench.py', args, message, tmp_path / 'out')
