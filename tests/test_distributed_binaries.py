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
"""The three binaries' --tff_workers, as a user runs them."""

import json

import portpicker
import pytest

from tests import binaries
from tests import conftest
from tff_hdp import distributed

# One short run of each system, on the TFF backend: one round, whose cohort
# reaches both workers (Robust-HDP's is every client; FedHDP's and
# UDP-Alg's are drawn under --mechanism_seed=0: `FIRST_COHORT`).
RUNS = {
    'run_fedhdp.py': ['--preset=digits', '--num_clients=10',
                      '--clients_per_round=3', '--noise_multiplier=1.0',
                      '--clipped_count_stddev=1.0', '--rounds=1',
                      '--algorithm=fedhdp', '--r=0.1', '--eval_every=1',
                      '--backend=tff', '--mechanism_seed=0'],
    'run_robust_hdp.py': [
        '--dataset=digits', '--model=fc', '--rounds=1', '--eval_every=1',
        '--backend=tff', '--rpca_max_iterations=100', '--num_clients=4',
        '--algorithm=robust_hdp', '--epsilons=1.5,3,1.5,3',
        '--batch_sizes=16,32,16,32'],
    'run_udp.py': ['--dataset=digits', '--num_users=12', '--rounds=1',
                   '--local_steps=2', '--eval_every=1', '--algorithm=udp',
                   '--backend=tff', '--mechanism_seed=0'],
}
# (N, q) of the Poisson runs above.
FIRST_COHORT = {'run_fedhdp.py': (10, 0.3), 'run_udp.py': (12, 0.2)}


def _run(script, args):
  return binaries.run(script, [*args, '--noprogress'])


def _refused(script, args):
  """`_run` of a command refused before TensorFlow loads, in the process
  `binaries.run_before_tensorflow` keeps."""
  return binaries.run_before_tensorflow(script, [*args, '--noprogress'])


@pytest.mark.parametrize('script', sorted(RUNS))
def test_binary_runs_on_two_workers(tmp_path, two_workers, script):
  addresses = distributed.local_addresses(two_workers)
  out = tmp_path / 'out'
  result = _run(script, RUNS[script] + [f'--tff_workers={",".join(addresses)}',
                                        f'--output_dir={out}'])
  assert result.returncode == 0, result.stderr
  (run,) = json.loads((out / 'results.json').read_text())['runs']
  assert run['config']['tff_workers'] == addresses
  assert len(run['history']) == 1
  if script in FIRST_COHORT:  # Cut over both workers.
    assert len(conftest.poisson_cohort(0, *FIRST_COHORT[script], 0)) >= 2


@pytest.mark.parametrize('script', sorted(RUNS))
def test_unreachable_worker_is_one_line_exit_2(tmp_path, script):
  # Refused after --tff_worker_timeout (a short one: nothing listens).
  address = f'127.0.0.1:{portpicker.pick_unused_port()}'
  out = tmp_path / 'out'
  result = _refused(script, RUNS[script] + [f'--tff_workers={address}',
                                            '--tff_worker_timeout=0.5',
                                            f'--output_dir={out}'])
  assert result.returncode == 2, result.stderr
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1 and (
      f'no TFF worker answers at {address} after 0.5s' in lines[0]), lines
  assert not out.exists()


@pytest.mark.parametrize('script', ['run_robust_hdp.py', 'run_udp.py'])
def test_workers_need_the_tff_backend(tmp_path, script):
  out = tmp_path / 'out'
  result = _refused(script, RUNS[script] + ['--backend=direct',
                                            '--tff_workers=127.0.0.1:1',
                                            f'--output_dir={out}'])
  assert result.returncode == 2, result.stderr
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1 and 'tff_workers needs backend tff' in lines[0]
  assert not out.exists()
