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
"""run_fedhdp.py as a user runs it: bad input, a short run, kill/resume."""

import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from tests import binaries

SCRIPT = binaries.script_path('run_fedhdp.py')
TINY = ['--preset=digits', '--num_clients=40', '--clients_per_round=10',
        '--noise_multiplier=1.0', '--clipped_count_stddev=2.0',
        '--local_epochs=1', '--eval_every=2', '--noprogress']


def _run(args, timeout=600):
  return binaries.run('run_fedhdp.py', args, timeout)


@pytest.mark.parametrize('args,message', [
    (['--r=1.5'], '--r must be in [0, 1]'),
    (['--r=-0.1'], '--r must be in [0, 1]'),
    (['--lambda_p=-1'], '--lambda_p must be >= 0'),
    (['--lambda_np=-0.5'], '--lambda_np must be >= 0'),
    (['--learning_rate=-0.1'], '--learning_rate must be > 0'),
    (['--personal_learning_rate=-1'], '--personal_learning_rate must be >= 0'),
    (['--optout_fraction=1'], '--optout_fraction must be in [0, 1)'),
    (['--optout_fraction=-0.2'], '--optout_fraction must be in [0, 1)'),
    (['--delta=1'], '--delta must be in (0, 1)'),
    (['--delta=0'], '--delta must be in (0, 1)'),
    (['--target_epsilon=0'], '--target_epsilon must be > 0'),
    (['--target_epsilon=-2'], '--target_epsilon must be > 0'),
    (['--num_clients=40', '--clients_per_round=41'],
     '--clients_per_round must be in [1, 40]'),
    (['--dataset=cifar'], "unknown dataset 'cifar'"),
    (['--algorithm=fedsgd'], "unknown algorithm 'fedsgd'"),
    (['--preset=mnist', '--data_dir=/nonexistent/dir'],
     '/nonexistent/dir/mnist.npz not found'),
    (['--preset=femnist', '--data_dir=/nonexistent/dir'],
     '/nonexistent/dir/emnist_all.sqlite not found'),
    (['--ditto_init=zero'], 'should be one of <first_round|initial>'),
    (['--rounds=many'], '--rounds'),
    (['--no_such_flag=1'], 'no_such_flag'),
    # The backend's name before it was 'direct', as Robust-HDP's and UDP-Alg's.
    (['--backend=vectorized'], 'should be one of <tff|direct>'),
])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, args,
                                                      message):
  binaries.assert_refused('run_fedhdp.py', args, message, tmp_path / 'out')


def test_missing_file_error_says_how_to_fetch(tmp_path):
  # Refused before TensorFlow loads (the kept process of
  # binaries.run_before_tensorflow).
  result = binaries.run_before_tensorflow(
      'run_fedhdp.py', ['--preset=mnist', f'--data_dir={tmp_path}',
                        f'--output_dir={tmp_path}/out'])
  assert result.returncode == 2
  assert str(tmp_path / 'mnist.npz') in result.stderr
  assert 'fetch' in result.stderr and 'mnist.npz' in result.stderr


def _record(path):
  with open(path) as f:
    runs = json.load(f)['runs']
  for run in runs:
    run.pop('wall_clock_seconds')
  return runs


def test_all_algorithms_short_run_writes_results(tmp_path):
  # On the direct backend (half the time of TFF's four traced processes);
  # the binary's default, TFF's, runs in the kill-and-resume test below.
  out = tmp_path / 'out'
  result = _run(TINY + ['--algorithm=all', '--rounds=2', '--backend=direct',
                        f'--output_dir={out}'])
  assert result.returncode == 0, result.stderr[-3000:]
  for name in ('Non-Private+Ditto', 'DP-FedAvg+Ditto', 'HDP-FedAvg+Ditto',
               'FedHDP+Ditto'):
    assert name in result.stdout
  runs = _record(out / 'results.json')
  assert [r['config']['algorithm'] for r in runs] == [
      'non_private', 'dp_fedavg', 'hdp_fedavg', 'fedhdp']
  for run in runs:
    assert set(run) >= {'config', 'metrics', 'epsilon', 'history', 'setup'}
    assert len(run['history']) == 2
  assert runs[1]['epsilon']['private'] > 0
  assert (out / 'table.txt').exists()
  assert len(os.listdir(out / 'tensorboard')) == 4


def test_killed_run_resumes_to_the_uninterrupted_run_of_its_key(tmp_path):
  # A default run: its noise and cohorts come from a secret key, kept in
  # its checkpoint, so the resumed run continues the same draws. Killed
  # after round 2's checkpoint, it resumes for rounds 3 and 4 (one more
  # checkpoint, one more evaluation).
  args = TINY + ['--algorithm=fedhdp', '--r=0.1', '--rounds=4',
                 '--checkpoint_every=2']
  killed = tmp_path / 'killed'
  process = subprocess.Popen(
      [sys.executable, SCRIPT, *args, f'--output_dir={killed}'],
      cwd=binaries.REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  checkpoints = killed / 'checkpoints' / 'fedhdp_r0.1'
  deadline = time.time() + 300
  while time.time() < deadline and process.poll() is None:
    if (checkpoints / 'program_state_2').exists():
      break
    time.sleep(0.05)
  assert process.poll() is None, 'the run ended before it could be killed'
  process.send_signal(signal.SIGKILL)
  process.wait()
  assert not (killed / 'results.json').exists()
  key = binaries.saved_key(checkpoints)
  # Killed, it keeps its key in folders only its owner can enter.
  for folder in (killed / 'checkpoints', checkpoints):
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700

  # The same command resumes it, in a fresh process; then, in the same
  # process (one start-up of TensorFlow for both), the run that key gives,
  # uninterrupted (`binaries.run_in_one_process` with its key).
  reference = tmp_path / 'reference'
  resumed, whole = binaries.run_in_one_process('run_fedhdp.py', [
      (args + [f'--output_dir={killed}'], None),
      (args + [f'--output_dir={reference}'], key)])
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert whole.returncode == 0, whole.stderr[-3000:]
  # Finished: its checkpoints, and with them its key, are gone.
  assert not (killed / 'checkpoints').exists()
  assert _record(killed / 'results.json') == _record(reference /
                                                     'results.json')
