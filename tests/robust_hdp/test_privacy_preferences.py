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
"""Tests of tff_hdp/robust_hdp/privacy_preferences.py: Dist1-9 and calibration."""

import ast
import csv
import os
import subprocess
import sys
import textwrap

import pytest

from tff_hdp.privacy import accounting
from tff_hdp.robust_hdp import privacy_preferences as prefs


def test_reference_csv_is_complete():
  with open(prefs.REFERENCE_CSV, newline='') as f:
    rows = list(csv.DictReader(f))
  assert len(rows) == 9 * (20 + 40 + 60)
  assert {int(r['batch_size']) for r in rows} == {16, 32, 64, 128}
  for name in prefs.DISTRIBUTIONS:
    for n in prefs.CLIENT_COUNTS:
      eps, bs = prefs.load_distribution(name, n)
      assert len(eps) == len(bs) == n
      assert all(e > 0 for e in eps)


def test_known_rows():
  eps, bs = prefs.load_distribution('dist1', 20)
  assert (eps[0], bs[0]) == (2.81, 32)
  assert (eps[13], bs[13]) == (1.81, 128)
  eps, _ = prefs.load_distribution('dist2', 20)
  assert eps[0] == 5.45


def test_bad_distribution_or_count():
  with pytest.raises(ValueError, match='dist1'):
    prefs.load_distribution('dist10', 20)
  with pytest.raises(ValueError, match='20, 40, 60'):
    prefs.load_distribution('dist1', 30)


def test_calibration_round_trip():
  # z from epsilon, then epsilon from z with an independent accountant call
  # on dp_accounting's default orders: at most the target, and close to it.
  clients = prefs.calibrate([0.5, 2.0, None], [32, 128, 64], [2400, 100, 50],
                            rounds=20, local_epochs=2, delta=1e-4)
  assert clients[1].batch_size == 100  # Capped to N_i.
  assert clients[1].steps == 20 * 2 * 1
  assert clients[0].steps == 20 * 2 * 75
  assert clients[2].noise_multiplier is None
  for client, target in zip(clients[:2], (0.5, 2.0)):
    eps = accounting.compute_epsilon(client.sampling_rate,
                                     client.noise_multiplier, client.steps,
                                     1e-4)
    assert eps <= target * 1.0001
    assert eps == pytest.approx(target, rel=0.01)
    assert prefs.achieved_epsilon(client, 1e-4) <= target * (1 + 1e-6)


def test_pld_calibration_needs_less_noise_and_meets_its_target():
  rdp, pld = (prefs.calibrate([1.5], [32], [2400], rounds=20, local_epochs=1,
                              delta=1e-4, accountant=a)[0]
              for a in ('rdp', 'pld'))
  assert pld.noise_multiplier < rdp.noise_multiplier
  eps = prefs.achieved_epsilon(pld, 1e-4, accountant='pld')
  assert eps <= 1.5 * (1 + 1e-6) and eps == pytest.approx(1.5, rel=0.01)
  assert eps == accounting.compute_epsilon(
      pld.sampling_rate, pld.noise_multiplier, pld.steps, 1e-4,
      accountant='pld')
  # Under RDP the same z gives more than the target: PLD is tighter.
  assert prefs.achieved_epsilon(pld, 1e-4) > 1.5


def test_coarse_orders_are_conservative():
  for q, steps in ((32 / 2400, 15000), (0.25, 50), (0.9, 6)):
    z = 1.2
    coarse = accounting.compute_epsilon(q, z, steps, 1e-4,
                                        orders=prefs.ORDERS)
    fine = accounting.compute_epsilon(q, z, steps, 1e-4)
    assert fine <= coarse <= fine * 1.02


def test_epsilon_floor_is_the_minimum_epsilon_baseline():
  clients = prefs.calibrate([0.5, 2.0], [32, 32], [2400, 2400], rounds=10,
                            local_epochs=1, delta=1e-4, epsilon_floor=0.5)
  assert clients[0].noise_multiplier == clients[1].noise_multiplier
  assert clients[1].epsilon == 0.5


def test_calibrate_runs_from_a_script_without_a_main_guard(tmp_path):
  # The parallel calibration must not re-run the caller's script (as
  # multiprocessing's spawn did, ending in BrokenProcessPool). The script
  # prints its z's; a line per run of its top level shows it ran once. (Its
  # three calibrations run in parallel only with one worker per
  # calibration.)
  script = tmp_path / 'no_guard.py'
  script.write_text(textwrap.dedent("""
      from tff_hdp.robust_hdp import privacy_preferences as prefs
      print('top level ran')
      prefs.MIN_CALIBRATIONS_PER_WORKER = 1
      clients = prefs.calibrate([1.0, 2.0, 3.0], [16, 32, 64], [250] * 3,
                                rounds=5, local_epochs=1, delta=1e-4)
      print(repr([c.noise_multiplier for c in clients]))
      """))
  repo = os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))))
  result = subprocess.run(
      [sys.executable, str(script)], cwd=tmp_path, capture_output=True,
      text=True, timeout=300, check=False,
      env=dict(os.environ, PYTHONPATH=repo))
  assert result.returncode == 0, result.stderr[-2000:]
  lines = result.stdout.splitlines()
  assert lines.count('top level ran') == 1
  # The same z's as one calibration after another in this process.
  serial = [prefs._calibrate((eps, b / 250, 5 * -(-250 // b), 1e-4, 'rdp',
                              prefs.ORDERS, 'improved'))
            for eps, b in ((1.0, 16), (2.0, 32), (3.0, 64))]
  assert ast.literal_eval(lines[-1]) == serial
