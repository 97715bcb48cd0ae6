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
"""HDP-Bench's two populations and preferences of any size: a mixture's draw
(exact shares, from the public seed, read back from what is written), the
populations' settings, a method refusing a population it does not fit,
refused rows reading refused in every column, and the binary running a CSV
with opt-outs and a mixture CSV on both populations."""

import copy
import dataclasses
import json
import math

import numpy as np
import pytest

from tests import binaries
from tff_hdp import bench
from tff_hdp.bench import benchmark
from tff_hdp.bench import leaderboard
from tff_hdp.bench import population
from tff_hdp.bench import preferences as preferences_lib


def test_a_mixture_gives_its_exact_shares_drawn_from_the_public_seed(
    tmp_path):
  paper001 = preferences_lib.mixture('paper001')
  prefs = preferences_lib.assign(paper001, 200, seed=0)
  # 5% opt out, exactly: 10 of 200; the others at paper 001's epsilon.
  assert prefs.epsilons.count(math.inf) == 10
  assert set(prefs.epsilons) == {3.6, math.inf}
  assert 'drawn with public seed 0' in prefs.origin
  # The draw is the seed's: the same again, another for another seed.
  assert preferences_lib.assign(paper001, 200, seed=0) == prefs
  assert preferences_lib.assign(paper001, 200, seed=1).epsilons != (
      prefs.epsilons)
  # Largest remainders: shares of 1/3 of 20 clients give 7, 7 and 6.
  thirds = preferences_lib.Mixture('thirds', (1 / 3, 1 / 3, 1 / 3),
                                   (1.0, 2.0, 4.0), (16, 32, 64))
  drawn = preferences_lib.assign(thirds, 20, seed=3)
  assert sorted(np.bincount([int(math.log2(e)) for e in drawn.epsilons])) == (
      [6, 7, 7])
  assert all(b == 16 * e for e, b in zip(drawn.epsilons, drawn.batch_sizes))
  # A mixture CSV (a fraction column) is a mixture; what is written of a
  # drawn population reads back as the same clients' preferences.
  path = tmp_path / 'mix.csv'
  path.write_text('fraction,epsilon,batch_size\n0.25,1,16\n0.5,2,32\n'
                  '0.25,inf,32\n')
  mix = preferences_lib.read_csv(str(path))
  assert isinstance(mix, preferences_lib.Mixture) and mix.name == 'mix'
  drawn = preferences_lib.from_csv(str(path), 40, seed=7)
  assert drawn.epsilons.count(math.inf) == 10 and drawn.num_clients == 40
  preferences_lib.to_csv(drawn, str(tmp_path / 'drawn.csv'))
  back = preferences_lib.read_csv(str(tmp_path / 'drawn.csv'))
  assert (back.epsilons, back.batch_sizes) == (drawn.epsilons,
                                               drawn.batch_sizes)


@pytest.mark.parametrize('text,message', [
    ('fraction,epsilon\n0.5,1\n0.6,2\n', 'fractions must be > 0 and sum to 1'),
    ('fraction,epsilon\n0,1\n1,2\n', "row 2: fraction must be a number in"),
    ('fraction,epsilon\n0.5,inf\n0.5,inf\n', 'every client opts out'),
    ('fraction,epsilon,batch_size\n1,2,0\n', 'batch_size must be an integer'),
])
def test_a_bad_mixture_is_one_line(tmp_path, text, message):
  path = tmp_path / 'bad.csv'
  path.write_text(text)
  with pytest.raises(ValueError, match=message) as raised:
    preferences_lib.read_csv(str(path))
  assert '\n' not in str(raised.value)


def test_the_populations():
  silo = population.get('cross_silo', quick=True)
  assert (silo.dataset, silo.num_clients, silo.model) == ('mnist5k', 20,
                                                          'cnn5')
  assert silo.distributions == ('dist1', 'dist5', 'dist9')
  device = population.get('cross_device', quick=True)
  # make demo's FedHDP setting: 200 clients of the 5,000 images.
  assert (device.dataset, device.num_clients, device.rounds,
          device.sampling_rate) == ('mnist5k', 200, 100, 0.2)
  full = population.get('cross_device')
  # Paper 001's non-IID MNIST: 2,000 clients, q = 0.05 (Table 5).
  assert (full.dataset, full.num_clients, full.sampling_rate) == (
      'mnist', 2000, 0.05)
  assert full.mixtures == ('paper001',)
  with pytest.raises(ValueError, match="unknown population 'edge'"):
    population.get('edge')


@pytest.fixture(scope='module')
def tiny_device():
  """A cross-device population of 20 one-digit clients of digits."""
  p = dataclasses.replace(population.get('cross_device', quick=True),
                          dataset='digits', num_clients=20, rounds=2)
  return p.setting(p.load(), delta=1e-4, accountant='rdp')


def test_client_level_methods_sample_the_populations_cohorts(tiny_device):
  assert (tiny_device.population, tiny_device.sampling_rate) == (
      'cross_device', 0.2)
  prefs = preferences_lib.assign(preferences_lib.mixture('paper001'), 20, 0)
  for name in ('fedhdp', 'idp_sample', 'udp_min'):
    calibration = bench.get([name])[0].calibrate(tiny_device, prefs)
    rates = [m.sampling_rate for m in calibration.clients if m is not None]
    assert np.mean(rates) == pytest.approx(0.2, rel=0.02), name
    benchmark.check_calibration(bench.get([name])[0], tiny_device, prefs,
                                calibration)
  # FedHDP: one private level (one epsilon), beside the opt-out group.
  config = bench.get(['fedhdp'])[0].calibrate(tiny_device, prefs).config
  assert set(config.privacy_levels) == {0, None}
  # The family's reference: the same cohorts, nobody private.
  reference = bench.get(['non_private_fedavg'])[0]
  assert reference.guarantee.kind == 'none'
  assert reference.guarantee.family == bench.CLIENT_LEVEL.family
  assert reference.calibrate(tiny_device, prefs).clients == (None,) * 20


def test_a_method_refuses_a_population_it_does_not_fit(tiny_device):
  small = copy.copy(bench.get(['dpfedavg'])[0])
  small.max_clients = 10
  prefs = preferences_lib.assign(preferences_lib.mixture('paper001'), 20, 0)
  (result,) = benchmark.run(tiny_device, [prefs], [small], seeds=[0])
  assert result.accuracy is None and result.population == 'cross_device'
  assert result.refused == (
      'dpfedavg trains all 20 clients every round (paper 003\'s rules have '
      'no cohort; its experiments run 20-60 clients): refused above 10')
  # The package's rules fit the cross-silo 20 and refuse 2,000.
  assert bench.get(['robust_hdp'])[0].refuses_population(tiny_device) is None
  assert 'refused above 100' in bench.get(['robust_hdp'])[0].refuses_population(
      dataclasses.replace(tiny_device, data=dataclasses.replace(
          tiny_device.data, train=tiny_device.data.train * 100)))


def _run(method, prefs, accuracy, refused=None):
  return leaderboard.RunResult(
      method, prefs, 0, accuracy, spent=() if refused else (1.0, 3.0),
      asked=() if refused else (1.0, 2.0), refused=refused)


def test_refused_rows_read_refused_in_every_column():
  results = [_run('weiavg', 'mine', None, 'weighs by epsilon; opt-outs'),
             _run('weiavg', 'mix', None, 'weighs by epsilon; opt-outs'),
             _run('dpfedavg', 'mine', 40.0),
             _run('dpfedavg', 'mix', None, 'too many clients'),
             _run('min_epsilon', 'mine', 20.0), _run('min_epsilon', 'mix',
                                                     30.0)]
  results[-1] = dataclasses.replace(results[-1], spent=(1.0, 2.0))
  results[-2] = dataclasses.replace(results[-2], spent=(1.0, 2.0))
  boards = leaderboard.leaderboards(results, bench.registered())
  text = leaderboard.markdown(boards, ['mine', 'mix'])
  lines = {l.split(' | ')[1]: l for l in text.splitlines()
           if l.startswith('| ') and ' | ' in l[2:]}
  # Refused everywhere: refused in every column, nothing of budgets.
  assert lines['weiavg'] == '| refused | weiavg |' + ' refused |' * 8
  # Refused somewhere: refused there, unranked; its budget is its runs'
  # (it overspent where it ran: NO).
  assert lines['dpfedavg'].startswith(
      '| invalid | dpfedavg | 40.0 | refused | 40.0 (1 of 2) | NO | 1.500 |')
  assert lines['min_epsilon'].startswith('| 1 | min_epsilon | 20.0 | 30.0 |')
  # The reasons, beneath the table.
  assert text.rstrip().endswith(
      'Refused:\n\n- dpfedavg refused mix: too many clients\n'
      '- weiavg refused mine, mix: weighs by epsilon; opt-outs')


def test_the_binary_runs_a_csv_with_opt_outs_and_a_mixture_on_both(tmp_path):
  # A new user's 20 clients with 3 opt-outs (the cross-silo population's
  # size only) and a mixture, which fits both populations.
  (tmp_path / 'mine.csv').write_text(
      'epsilon\n' + '1\n2\n4\ninf\n' * 3 + '1\n2\n4\n8\n' * 2)
  (tmp_path / 'mix.csv').write_text(
      'fraction,epsilon\n0.5,1\n0.4,4\n0.1,inf\n')
  out = tmp_path / 'bench'
  result = binaries.run('hdp_bench.py', [
      '--cross_silo_dataset=digits', '--cross_device_dataset=digits',
      '--cross_device_clients=30', '--model=fc', '--rounds=1', '--seeds=0',
      f'--preferences_csv={tmp_path / "mine.csv"},{tmp_path / "mix.csv"}',
      '--methods=weiavg,fedhdp,non_private_fedavg', '--jobs=1',
      '--mechanism_seed=0', '--noprogress', f'--output_dir={out}'],
                        timeout=900)
  assert result.returncode == 0, result.stderr[-3000:]
  text = (out / 'leaderboard.md').read_text()
  assert '## cross_silo' in text and '## cross_device' in text
  silo, device = text.split('## cross_device')
  assert '| mine acc% | mix acc% |' in silo
  assert '| mix acc% |' in device and 'mine' not in device
  assert '| refused | weiavg |' + ' refused |' * 8 in silo
  assert '- weiavg refused mine, mix: weiavg weighs every client' in silo
  assert '| 1 | fedhdp |' in silo and '| 1 | fedhdp |' in device
  assert '| ref. | non_private_fedavg |' in device
  record = json.loads((out / 'leaderboard.json').read_text())
  runs = record['populations']['cross_device']['runs']
  assert {(r['method'], r['preferences']) for r in runs} == {
      ('weiavg', 'mix'), ('fedhdp', 'mix'), ('non_private_fedavg', 'mix')}
  fedhdp = next(r for r in runs if r['method'] == 'fedhdp')
  assert len(fedhdp['asked']) == 30 and fedhdp['asked'].count(math.inf) == 3
  assert all(s <= a * (1 + 1e-9)
             for s, a in zip(fedhdp['spent'], fedhdp['asked']))
  # The mixture's draw is in the output, as run, with its public seed.
  (mix,) = record['populations']['cross_device']['preferences']
  assert 'drawn with public seed 0' in mix['origin']
  written = preferences_lib.read_csv(
      str(out / 'preferences' / 'cross_device' / 'mix.csv'))
  assert list(written.epsilons) == fedhdp['asked']
  assert (out / 'leaderboard.png').stat().st_size > 10_000


@pytest.mark.parametrize('args,message', [
    # A population's own preferences must fit it.
    (['--populations=cross_silo', '--cross_silo_clients=30'],
     'cross_silo has 30 clients: Dist1-Dist9 hold 20, 40 or 60; give '
     '--mixtures or --preferences_csv'),
    # A population named, and nothing given fits it.
    (['--populations=cross_silo,cross_device', '--distributions=dist1'],
     'no preferences fit cross_device (2000 clients): give --mixtures, a '
     'mixture CSV or one of its size'),
])
def test_preferences_that_fit_no_population_are_one_line(tmp_path, args,
                                                         message):
  binaries.assert_refused('hdp_bench.py', args, message, tmp_path / 'out')
