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
"""Times the round backends side by side, and their memory.

    python benchmarks/benchmark_fedhdp.py                   # the full benchmark
    python benchmarks/benchmark_fedhdp.py --quick           # reduced, under five minutes
    python benchmarks/benchmark_fedhdp.py --case=small_cnn  # the small CNN alone

Speed: in one process, on the same synthetic data (random 28x28 inputs,
`--samples_per_client` examples per client, batch 20), one DP-FedAvg round
(z_eff = 1, adaptive clipping) of

- `stock_tff`: TFF's own `tff.learning.algorithms.build_unweighted_fed_avg`
  with `DifferentiallyPrivateFactory.gaussian_adaptive`, a Keras model of the
  same architecture and `dataset.batch(20).repeat(E)` per client;
- `api`: our public API as a TFF user runs it (`build_fedhdp_process` from
  the same Keras model, one private level, every client every round, fed by
  `build_data_source`);
- `tff`: our `TffRound` (the FedHDP process on TFF's runtime);
- `direct`: our `DirectRound` (the same round without TFF's runtime, the
  cohort as stacked tensors);
- `*+ditto`: the same with Ditto personal models (full run only);

for the FC NN (100 clients, E = 1 and E = 10) and the CNN (20 clients,
E = 1). Variants run interleaved round by round (the machine is shared and
noisy) after one warm-up round each; the table gives medians: seconds per
round (wall and CPU, the TFF worker process included), client-steps per
second, and client-training FLOP/s as a fraction of this machine's float32
matmul peak (the best rate of a 2048x2048 matmul timed between rounds; the
JSON output also has the ratio per CPU-second, which other processes on a
shared machine disturb less). Client-training FLOPs
are counted analytically: 3 x 2 x (multiply-adds of one example's forward
pass) per example and epoch, twice with Ditto. For the direct backend the
fraction uses its client-work time alone; for the TFF runtimes (which do not
expose it) the whole round.

Memory (resident set, /proc/self/status): the peak of a FEMNIST-sized run
(3,400 clients' CNN personal models in a memory-mapped store, 3% of clients
per round, Ditto on, synthetic data), and the resident memory at round 50 and
500 (quick: 50 and 150) of a small-model run through the driver
(`training.train`, digits, Poisson sampling, so the cohort and the size of
each privacy group change every round) for both backends; for the TFF
backend the worker process's memory is given too.

The small CNN (`--case=small_cnn`, also part of the full and quick runs):
what a TFF user runs first, their own Keras CNN on 20 clients of real MNIST
images, our `build_fedhdp_process` against TFF's DP-FedAvg in milliseconds
per client and round beside this run's matmul peak (the setting in
`fedhdp_small_cnn.py`).

If a target of the issue is missed, the output says so and shows where the
direct round's time goes. The last line is
`speedup_vs_stock_tff=<x> peak_fraction=<y>` (FC NN, E = 10), or, with
`--case=small_cnn`, `small_cnn_api_vs_stock=<x>` (the wall-time ratio).

Each part is a file of its own beside this one, which holds the flags and
the report: `fedhdp_speed.py` (the speed table and its targets),
`fedhdp_small_cnn.py`, `fedhdp_fc_step_profile.py` (where a direct FC step's
time goes), `fedhdp_femnist_memory.py` and `fedhdp_long_run_memory.py`; the
rounds they time, and the memory readings, are `fedhdp_rounds.py`'s.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# TensorFlow before absl's app.run: Keras 2.14 cannot build a model with an
# input shape (the `api` variant's) when TensorFlow is first imported inside
# app.run's main (Flatten fails on the unknown batch dimension).
import tensorflow  # pylint: disable=g-import-not-at-top,unused-import,wrong-import-position

# pylint: disable=g-import-not-at-top,wrong-import-position
import json
import time

from absl import app
from absl import flags
from absl import logging

from tff_hdp.run_scripts import cli
# The benchmark's parts: Python searches a script's own folder first.
import fedhdp_fc_step_profile
import fedhdp_femnist_memory
import fedhdp_long_run_memory
import fedhdp_small_cnn
import fedhdp_speed

_CASE = flags.DEFINE_enum(
    'case', 'all', ['all', 'small_cnn'], 'all: every setting below (with '
    '--quick, the reduced set); small_cnn: only the small CNN of a TFF user, '
    'our public API against TFF\'s DP-FedAvg (no memory runs).')
_QUICK = flags.DEFINE_bool(
    'quick', False, 'Reduced run (FC NN at E = 10 only, fewer rounds, a '
    'shorter memory run), under five minutes.')
_ROUNDS = flags.DEFINE_integer(
    'rounds', None, 'Timed rounds per variant after the warm-up (>= 1; '
    'default 5, quick 2); for the small CNN, repetitions of ours, TFF, TFF, '
    'ours (two rounds of each per repetition).')
_FC_CLIENTS = flags.DEFINE_integer('fc_clients', 100,
                                   'Clients per round for the FC NN (>= 1).')
_CNN_CLIENTS = flags.DEFINE_integer('cnn_clients', 20,
                                    'Clients per round for the CNN (>= 1).')
_SAMPLES = flags.DEFINE_integer('samples_per_client', 100,
                                'Training examples per client (>= 1).')
_LONG_RUN_ROUNDS = flags.DEFINE_list(
    'memory_rounds', None, 'Rounds at which the small-model run reads its '
    'resident memory, the last one ending it (default 50,500; quick 50,150).')
_SPEED_ONLY = flags.DEFINE_bool(
    'speed_only', False, 'Only the speed table (no memory runs).')
_OUTPUT_JSON = flags.DEFINE_string(
    'output_json', None, 'Also write every measurement to this JSON file.')


def _check_flags():
  """(quick, timed rounds, the long run's checkpoints), from the flags."""
  quick = _QUICK.value
  rounds = _ROUNDS.value if _ROUNDS.value is not None else (2 if quick else 5)
  cli.check(rounds >= 1, f'--rounds must be >= 1, got {rounds}')
  cli.check(_FC_CLIENTS.value >= 1,
            f'--fc_clients must be >= 1, got {_FC_CLIENTS.value}')
  cli.check(_CNN_CLIENTS.value >= 1,
            f'--cnn_clients must be >= 1, got {_CNN_CLIENTS.value}')
  cli.check(_SAMPLES.value >= 1,
            f'--samples_per_client must be >= 1, got {_SAMPLES.value}')
  checkpoints = _LONG_RUN_ROUNDS.value or (['50', '150'] if quick else
                                           ['50', '500'])
  try:
    checkpoints = [int(c) for c in checkpoints]
  except ValueError:
    raise cli.UsageError('--memory_rounds takes increasing round numbers '
                         f'>= 1, got {",".join(checkpoints)}') from None
  cli.check(all(c >= 1 for c in checkpoints) and
            checkpoints == sorted(set(checkpoints)),
            '--memory_rounds takes increasing round numbers >= 1, got '
            f'{",".join(map(str, checkpoints))}')
  if _OUTPUT_JSON.value:
    parent = os.path.dirname(os.path.abspath(_OUTPUT_JSON.value))
    cli.check(os.path.isdir(parent),
              f'--output_json: directory {parent} does not exist')
  return quick, rounds, checkpoints


def memory(quick: bool, checkpoints: list[int]) -> dict:
  """The memory measurements (module doc), printed as they end."""
  from tff_hdp import runtime
  femnist = fedhdp_femnist_memory.femnist_memory(
      rounds=1 if quick else 3, max_samples=120 if quick else 400)
  fedhdp_femnist_memory.print_femnist_memory(femnist)
  long_runs = [fedhdp_long_run_memory.long_run_memory(checkpoints, 'direct')]
  with runtime.local_cpp_context():
    worker = runtime.install_local_cpp_context()
    long_runs.append(
        fedhdp_long_run_memory.long_run_memory(checkpoints, 'tff', worker))
  for run in long_runs:
    fedhdp_long_run_memory.print_long_run(run)
  return {'femnist_memory': femnist, 'long_run_memory': long_runs}


def speed(tf, quick: bool, rounds: int):
  """The speed table's rows and the small CNN's result, timed."""
  from tff_hdp import models
  from tff_hdp import runtime
  with runtime.local_cpp_context():
    worker = runtime.install_local_cpp_context()
    fc, cnn = models.fc_model(), models.cnn_model()
    settings = [fedhdp_speed.Setting('FC NN', fc, _FC_CLIENTS.value, 10)]
    if not quick:
      settings = [fedhdp_speed.Setting('FC NN', fc, _FC_CLIENTS.value, 1)] + (
          settings + [fedhdp_speed.Setting('CNN', cnn, _CNN_CLIENTS.value, 1)])
    variants = ['stock_tff', 'api', 'tff', 'direct']
    if not quick:
      variants += ['tff+ditto', 'direct+ditto']
    rows = []
    for setting in settings:
      rows += fedhdp_speed.time_setting(tf, worker.process.pid, setting,
                                        _SAMPLES.value, rounds, variants)
      print(f'# timed {setting.name} E={setting.epochs}', flush=True)
    small = fedhdp_small_cnn.time_small_cnn(tf, worker.process.pid, rounds)
    print('# timed small CNN', flush=True)
  return rows, small


def _print_checks(checks):
  for ok, line in checks:
    print(('target met:    ' if ok else 'TARGET MISSED: ') + line)


def _report_speed(tf, rows, small, results):
  """Prints the speed table, the small CNN's and the targets; if one of the
  direct round's is missed, where its time goes (adding the FC step's
  profile to `results`)."""
  from tff_hdp import models
  print()
  fedhdp_speed.print_table(rows)
  direct = fedhdp_speed.fc_e10(rows, 'direct')
  print(f"\nmatmul peak (2048x2048 float32, best of the run): "
        f"{direct['peak_gflops']:.1f} GFLOP/s")
  checks = fedhdp_speed.checks(rows)
  fedhdp_small_cnn.print_small_cnn(small)
  _print_checks(checks + [fedhdp_small_cnn.check(small)])
  if not all(ok for ok, _ in checks):  # The direct round's targets.
    fedhdp_speed.print_breakdown(rows)
    profile = fedhdp_fc_step_profile.profile_fc_step(tf, _FC_CLIENTS.value,
                                                     models.fc_model())
    results['fc_step_profile'] = profile
    fedhdp_fc_step_profile.print_profile(profile, direct, _FC_CLIENTS.value,
                                         _SAMPLES.value)


def _small_cnn_case(tf, rounds, results, started):
  """--case=small_cnn: the small CNN alone."""
  from tff_hdp import runtime
  with runtime.local_cpp_context():
    worker = runtime.install_local_cpp_context()
    small = fedhdp_small_cnn.time_small_cnn(tf, worker.process.pid, rounds)
  results['small_cnn'] = small
  fedhdp_small_cnn.print_small_cnn(small)
  _print_checks([fedhdp_small_cnn.check(small)])
  _finish(results, started)
  print(f"small_cnn_api_vs_stock={small['api_vs_stock']:.2f}")


def main(argv):
  cli.check_no_arguments(argv)
  quick, rounds, checkpoints = _check_flags()
  logging.set_verbosity(logging.WARNING)  # TFF's INFO lines while building.

  import tensorflow as tf

  started = time.perf_counter()
  gpus = tf.config.list_physical_devices('GPU')
  kind = ('small CNN' if _CASE.value == 'small_cnn' else
          'quick' if quick else 'full')
  print(f'# benchmark ({kind}): TensorFlow '
        f'{tf.__version__}, {os.cpu_count()} CPU cores, GPUs: '
        f'{[g.name for g in gpus] or "none"}', flush=True)
  results = {'quick': quick, 'gpus': [g.name for g in gpus]}
  if _CASE.value == 'small_cnn':
    _small_cnn_case(tf, rounds, results, started)
    return

  # Memory first, so that the FEMNIST-sized run's peak is its own.
  if not _SPEED_ONLY.value:
    results.update(memory(quick, checkpoints))
  rows, small = speed(tf, quick, rounds)
  results['speed'] = rows
  results['small_cnn'] = small
  _report_speed(tf, rows, small, results)
  _finish(results, started)
  speedup, fraction = fedhdp_speed.speedup_and_fraction(rows)
  print(f'speedup_vs_stock_tff={speedup:.2f} peak_fraction={fraction:.2f}')


def _finish(results, started):
  """Writes --output_json (if given) and prints the run's total time."""
  results['seconds'] = time.perf_counter() - started
  if _OUTPUT_JSON.value:
    with open(_OUTPUT_JSON.value, 'w') as f:
      json.dump(results, f, indent=1, default=str)
  print(f"\n# total {results['seconds']:.0f} s")


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
