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
"""HDP-Bench on worker processes (`parallel`): several populations share
the workers, which run each method as it is calibrated; the results are
the runs of one process, and a calibration that overspends still stops the
benchmark, with its own error."""

import dataclasses
import math
import os

import pytest

from tff_hdp import bench
from tff_hdp import datasets
from tff_hdp.bench import benchmark
from tff_hdp.bench import registry

# Two toy methods, in a file of their own (a worker imports it): each
# client predicts its training data's majority label, behind a mechanism of
# noise multiplier Z, which spends far more than asked for Z = 0.01.
TOY_FILE = '''
import math
import numpy as np
from tff_hdp import bench
from tff_hdp.bench import method


class Majority(bench.Method):
  threat_model = 'nobody trusted'
  guarantee = bench.CLIENT_LEVEL
  server_knows = 'nothing'

  def __init__(self, name, z):
    self.name = name
    self.z = z

  def calibrate(self, setting, preferences):
    return bench.Calibration(
        clients=tuple(bench.ClientMechanism(1.0, self.z, setting.rounds)
                      if math.isfinite(e) else None
                      for e in preferences.epsilons),
        config=None)

  def run(self, setting, calibration, *, seed, mechanism_seed=None):
    hits = [np.mean(yt == np.bincount(y).argmax())
            for (_, y), (_, yt) in zip(setting.data.train, setting.data.test)]
    return bench.Outcome(
        accuracy=100.0 * float(np.mean(hits)) + seed,
        epsilons=method.planned_epsilons(calibration, setting.delta))


bench.register(Majority('toy_parallel_majority', 50.0))
bench.register(Majority('toy_parallel_greedy', 0.01))
'''


@pytest.fixture(scope='module')
def toy_file(tmp_path_factory):
  path = tmp_path_factory.mktemp('toy') / 'toy_parallel.py'
  path.write_text(TOY_FILE)
  registry.load_file(str(path))
  yield str(path)
  for name in ('toy_parallel_majority', 'toy_parallel_greedy'):
    registry.unregister(name)


def _populations():
  data = datasets.load_robust_hdp_data('digits', num_clients=6,
                                       shards_per_client=2)
  one = bench.Setting(data=data, rounds=2, model='fc', batch_size=16,
                      population='first')
  other = dataclasses.replace(one, rounds=3, population='second')
  prefs = bench.Preferences('mixed', (0.5, 1.0, 1.0, 2.0, 4.0, math.inf))
  return [(one, [prefs]), (other, [prefs])]


def test_populations_share_the_workers_and_match_one_process(toy_file):
  populations = _populations()
  methods = bench.get(['toy_parallel_majority', 'non_private'])
  seen = []
  # One seed, 1 rather than 0: the toy's accuracy adds its seed, so a
  # worker is seen to run the seed it is given.
  kw = dict(seeds=[1], mechanism_seed=0)
  there = benchmark.run_populations(populations, methods, jobs=2,
                                    method_files=[toy_file],
                                    on_result=seen.append, **kw)
  here = benchmark.run_populations(populations, methods, jobs=1, **kw)
  assert len(seen) == 4
  for (setting, _), theirs, ours in zip(populations, there, here):
    key = lambda r: (r.method, r.seed)
    assert sorted(map(key, theirs)) == sorted(map(key, ours)) == [
        ('non_private', 1), ('toy_parallel_majority', 1)]
    for a, b in zip(sorted(theirs, key=key), sorted(ours, key=key)):
      assert a.population == b.population == setting.population
      # One thread per worker: the same run to float round-off.
      assert a.accuracy == pytest.approx(b.accuracy, abs=1e-4)
      assert a.spent == b.spent and a.planned == b.planned
  # A resumed benchmark runs only what is not done (decided before the
  # runs go to workers or not: here in this process, with no new workers):
  # of the toy's seeds 0 and 1, seed 1 is done in the first population.
  done = [there[0], []]
  again = benchmark.run_populations(populations, methods[:1], jobs=1,
                                    done=done, seeds=[0, 1], mechanism_seed=0)
  assert [(r.method, r.seed) for r in again[0]] == [
      (r.method, r.seed) for r in done[0]] + [('toy_parallel_majority', 0)]
  assert len(again[1]) == 2


def test_a_calibration_that_overspends_stops_the_workers(toy_file):
  (setting, prefs), _ = _populations()
  with pytest.raises(benchmark.CalibrationError,
                     match=r'^toy_parallel_greedy on mixed: client 0 would '
                     r'spend epsilon'):
    benchmark.run(setting, prefs,
                  bench.get(['toy_parallel_majority', 'toy_parallel_greedy']),
                  seeds=[0], jobs=2, method_files=[toy_file])


def test_workers_find_the_package_and_share_a_gpu(monkeypatch):
  from tff_hdp.bench import parallel  # pylint: disable=g-import-not-at-top
  monkeypatch.setenv('PYTHONPATH', 'mine')
  monkeypatch.delenv('TF_FORCE_GPU_ALLOW_GROWTH', raising=False)
  monkeypatch.setenv('TF_CPP_MIN_LOG_LEVEL', '0')
  env = parallel.worker_environment()
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  assert env['PYTHONPATH'] == os.pathsep.join([root, 'mine'])
  assert env['TF_FORCE_GPU_ALLOW_GROWTH'] == 'true'
  assert env['TF_CPP_MIN_LOG_LEVEL'] == '0'  # The user's, kept.
  monkeypatch.setenv('TF_FORCE_GPU_ALLOW_GROWTH', 'false')
  assert parallel.worker_environment()['TF_FORCE_GPU_ALLOW_GROWTH'] == 'false'
