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
"""A small sweep of Table 8 on a tiny mnist.npz: kill it, resume it.

The tables and plots of the resumed sweep must be byte-identical to those of
a sweep that was never interrupted (issue: reproduce the papers end to end).
Two rows, one at a time: the sweep is killed in its second row's run, after
that run's checkpoint, so the resumed sweep both skips a finished row and
resumes an interrupted run, every time. The uninterrupted sweep is the
first row's folder as the killed sweep finished it (that run was never
interrupted; that a seeded run repeats bit for bit in another process is
tests/test_secret_randomness.py's to check) beside the second row's run
whole: the command the sweep gave it (its results.json's argv), run alone.
"""

import filecmp
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

from tests import binaries

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SWEEP = os.path.join(REPO, 'run_scripts', 'sweep_fedhdp.py')
ROWS = '0,5'  # Non-Private, then FedHDP r=0.01, lambda=0.005 (private).
# Reproducible runs (--mechanism_seed): the whole sweep and the resumed one
# must print identical tables, whose rows are separate runs. Six rounds: the
# kill after round 2's checkpoint lands well before the run ends (some 2 s
# before, on the direct backend; a sweep does the same on either).
SMALL = ['--num_clients=20', '--clients_per_round=10', '--rounds=6',
         '--local_epochs=1', '--eval_every=2', '--checkpoint_every=2',
         '--clipped_count_stddev=2.0', '--mechanism_seed=0',
         '--backend=direct']


def _write_mnist(path):
  """A tiny file in the layout of Keras' mnist.npz (uint8 images/labels)."""
  rng = np.random.default_rng(0)
  np.savez(path,
           x_train=rng.integers(0, 256, (200, 28, 28), dtype=np.uint8),
           y_train=np.repeat(np.arange(10, dtype=np.uint8), 20),
           x_test=rng.integers(0, 256, (60, 28, 28), dtype=np.uint8),
           y_test=np.repeat(np.arange(10, dtype=np.uint8), 6))


def _sweep_command(data_dir, results_dir):
  return [sys.executable, SWEEP, '--table=8', f'--rows={ROWS}',
          f'--data_dir={data_dir}', f'--results_dir={results_dir}',
          '--parallel=1', '--', *SMALL]


def _tables_and_plots(results_dir):
  # Neither loads TensorFlow: both run in the process the other commands
  # that end before it share (`binaries.run_before_tensorflow`).
  for script in ('tables_fedhdp.py', 'plots_fedhdp.py'):
    result = binaries.run_before_tensorflow(script, [
        f'--results_dir={results_dir}', f'--output_dir={results_dir}/report'])
    assert result.returncode == 0, result.stderr
  return os.path.join(results_dir, 'report')


def test_killed_sweep_resumes_to_identical_tables_and_plots(tmp_path):
  data_dir = tmp_path / 'data'
  data_dir.mkdir()
  _write_mnist(data_dir / 'mnist.npz')

  cut = tmp_path / 'cut'
  process = subprocess.Popen(_sweep_command(data_dir, cut),
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL,
                             start_new_session=True)
  rows = cut / 'table8'
  deadline = time.time() + 600
  checkpoint = None
  while time.time() < deadline and process.poll() is None and not checkpoint:
    # A checkpoint of round 2 of a row that has no results.json yet, once
    # the other row has one: the second row's run, interrupted.
    names = [n for n in os.listdir(rows) if (rows / n).is_dir()] if (
        rows.exists()) else []
    open_rows = [n for n in names if not (rows / n / 'results.json').exists()]
    if len(names) == 2 and len(open_rows) == 1:
      for root, dirs, _ in os.walk(rows / open_rows[0]):
        if 'program_state_2' in dirs:
          checkpoint = root
    time.sleep(0.05)
  assert checkpoint, 'the sweep ended before its second run\'s checkpoint'
  os.killpg(process.pid, signal.SIGKILL)  # the sweep and its run
  process.wait()
  finished = [d for d in os.listdir(rows)
              if (rows / d / 'results.json').exists()]
  assert len(finished) == 1, finished

  resumed = subprocess.run(_sweep_command(data_dir, cut), capture_output=True,
                           text=True, timeout=900, check=False)
  assert resumed.returncode == 0, resumed.stdout + resumed.stderr
  assert resumed.stdout.count('skip ') == 1

  # The sweep never interrupted: the first row's run as the sweep above ran
  # it, the second row's whole, by the command the sweep gave it.
  whole = tmp_path / 'whole'
  shutil.copytree(rows / finished[0], whole / 'table8' / finished[0])
  (interrupted,) = {d for d in os.listdir(rows)
                    if (rows / d).is_dir()} - set(finished)
  with open(rows / interrupted / 'results.json') as f:
    script, *args = json.load(f)['argv']
  assert os.path.basename(script) == 'run_fedhdp.py'
  out = f'--output_dir={rows / interrupted}'
  assert args.count(out) == 1, args
  args[args.index(out)] = f'--output_dir={whole / "table8" / interrupted}'
  done = binaries.run('run_fedhdp.py', args, timeout=900)
  assert done.returncode == 0, done.stdout + done.stderr

  a, b = _tables_and_plots(whole), _tables_and_plots(cut)
  names = sorted(os.listdir(a))
  assert names == sorted(os.listdir(b))
  assert any(n.endswith('.md') for n in names)
  assert any(n.endswith('.png') for n in names)
  match, mismatch, errors = filecmp.cmpfiles(a, b, names, shallow=False)
  assert not mismatch and not errors, (mismatch, errors)
