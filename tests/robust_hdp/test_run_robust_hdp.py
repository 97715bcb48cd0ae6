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
"""run_robust_hdp.py as a user runs it: bad input, a short run, resume."""

import os

import pytest

from tests import binaries

# The digits' 20 clients with two distinct (epsilon, b): two noise
# calibrations (about 1 s each) where a preset such as dist1 needs twenty.
TINY = ['--dataset=digits', '--model=fc', '--rounds=2', '--eval_every=1',
        '--noprogress', '--backend=direct', '--rpca_max_iterations=100',
        '--epsilons=' + ','.join(['1.5', '3'] * 10),
        '--batch_sizes=' + ','.join(['16', '32'] * 10)]


@pytest.mark.parametrize('args,message', [
    (['--algorithm=fedavg'], '--algorithm=fedavg: give all, or distinct names'),
    (['--algorithm=weiavg,weiavg'], 'give all, or distinct names'),
    (['--shards_per_client=0'], '--shards_per_client must be >= 1'),
    (['--examples_per_client=25'],
     '(25) must be a positive multiple of shards_per_client (10)'),
    (['--privacy_distribution=dist10'], "unknown privacy distribution"),
    (['--num_clients=30'], 'is given for 20, 40, 60 clients, not 30'),
    (['--epsilons=1,2'], 'give both --epsilons and --batch_sizes'),
    (['--num_clients=2', '--epsilons=1,2', '--batch_sizes=16'],
     'one value per client'),
    (['--num_clients=2', '--epsilons=1,-2', '--batch_sizes=16,16'],
     '--epsilons must be > 0'),
    (['--num_clients=2', '--epsilons=1,x', '--batch_sizes=16,16'],
     '--epsilons takes float values'),
    (['--learning_rate=0'], '--learning_rate must be > 0'),
    (['--clip=-1'], '--clip must be > 0'),
    (['--delta=1'], '--delta must be in (0, 1)'),
    (['--rounds=0'], '--rounds must be >= 1'),
    (['--rpca_block_rows=0'], '--block_rows must be >= 1'),
    (['--dataset=cifar'], 'cifar'),
    (['--dataset=fashion_mnist', '--data_dir=/nonexistent/dir'],
     '/nonexistent/dir/train-images-idx3-ubyte.gz not found'),
    (['--dataset=cifar10', '--data_dir=/nonexistent/dir'],
     '/nonexistent/dir/cifar-10-python.tar.gz not found'),
    (['--dataset=mnist', '--data_dir=/nonexistent/dir'],
     '/nonexistent/dir/mnist.npz not found'),
])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, args,
                                                      message):
  binaries.assert_refused('run_robust_hdp.py', args, message, tmp_path / 'out')


def test_short_run_writes_results_and_resumes(tmp_path):
  out = tmp_path / 'out'
  args = TINY + ['--algorithm=robust_hdp', f'--output_dir={out}']
  # The command, then the same command again, one after the other in one
  # process (one start-up of TensorFlow for both).
  first, second = binaries.run_in_one_process('run_robust_hdp.py',
                                              [(args, None), (args, None)])
  assert first.returncode == 0, first.stderr
  assert 'Robust-HDP' in first.stdout
  (run,) = first.results_json['runs']
  assert run['config']['algorithm'] == 'robust_hdp'
  assert len(run['clients']) == 20
  for client in run['clients']:
    assert set(client) >= {'target_epsilon', 'noise_multiplier', 'batch_size',
                           'num_examples', 'achieved_epsilon', 'true_sigma2'}
    assert client['batch_size'] <= client['num_examples']
  assert [h['round'] for h in run['history']] == [1, 2]
  for entry in run['history']:
    assert len(entry['weights']) == len(entry['sigma_hat2']) == 20
    assert 'noise_power' in entry and 'accuracy' in entry
  assert (out / 'table.txt').read_text().startswith('dataset=digits')
  assert os.listdir(out / 'tensorboard' / 'robust_hdp')
  # Finished: no checkpoint (nor its key) is left; the same command again
  # reuses the finished results, and another configuration is refused.
  assert not (out / 'checkpoints').exists()
  assert second.returncode == 0, second.stderr
  assert 'finished: from results.json' in second.stdout
  again = second.results_json['runs'][0]
  assert again['history'] == run['history']
  assert again['metrics'] == run['metrics']
  # Refused before TensorFlow loads.
  binaries.assert_usage_error(
      binaries.run_before_tensorflow('run_robust_hdp.py',
                                     args + ['--learning_rate=0.2']),
      'results.json holds a finished run robust_hdp of another configuration')
