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
"""Times HDP-Bench's --quick leaderboard with each number of jobs, in turn.

    python benchmarks/benchmark_hdp_bench.py               # --jobs=2 then 1
    python benchmarks/benchmark_hdp_bench.py --jobs=2 --bench_args=--rounds=2

In one process: the float32 matmul peak (`timing.peak`), then
`run_scripts/hdp_bench.py --quick` once per value of --jobs (each into a new
folder, so nothing is resumed), then the peak again. Prints each run's wall
time, the processor seconds it used (user + system, of the binary, its
workers and its calibration processes: on a busy machine a better guide
than the wall time to what it needs), the sum of its runs' own seconds
(what the runs took on the threads each had), the ratio of the first --jobs
value's wall time to each other's, and one machine-readable line. Issue 40
asks the quick leaderboard for <= 10 minutes on 2 cores. Run it on a quiet
machine.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
import json
import resource
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
# benchmarks/timing.py: Python searches a script's own folder first.
import timing

_JOBS = flags.DEFINE_list('jobs', ['2', '1'], 'The --jobs values, in turn.')
_ARGS = flags.DEFINE_list('bench_args', [],
                          "More of hdp_bench.py's flags (e.g. --rounds=2).")
_GOAL = 600.0  # Seconds: issue 40's bound on the quick leaderboard.


def main(argv):
  cli.check_no_arguments(argv)
  try:
    jobs = [int(j) for j in _JOBS.value]
  except ValueError:
    raise cli.UsageError(f'--jobs takes integers, got '
                         f'{",".join(_JOBS.value)}') from None
  cli.check(bool(jobs) and all(j >= 1 for j in jobs),
            f'--jobs must be integers >= 1, got {",".join(_JOBS.value)}')
  import tensorflow as tf
  print(f'CPU: {timing.cpu_name()}, {os.cpu_count()} cores')
  peak_before = timing.peak(tf)
  print(f'float32 matmul peak before: {peak_before / 1e9:.0f} GFLOP/s',
        flush=True)
  script = os.path.join(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))), 'run_scripts', 'hdp_bench.py')
  walls, cpus = {}, {}
  for j in jobs:
    with tempfile.TemporaryDirectory() as out:
      start = time.perf_counter()
      before = _children_cpu()
      result = subprocess.run(
          [sys.executable, script, '--quick', '--noprogress', f'--jobs={j}',
           f'--output_dir={out}/bench', *_ARGS.value],
          capture_output=True, text=True, check=False)
      walls[j] = time.perf_counter() - start
      cpus[j] = _children_cpu() - before
      if result.returncode != 0:
        raise SystemExit(f'hdp_bench.py --jobs={j} failed: '
                         f'{result.stderr.strip().splitlines()[-1:]}')
      with open(f'{out}/bench/runs.jsonl') as f:
        runs = [json.loads(line) for line in f if line.strip()]
    own = sum(r['seconds'] or 0.0 for r in runs)
    print(f'--jobs={j}: {walls[j]:.0f} s wall, {cpus[j]:.0f} processor s, '
          f'for {len(runs)} runs (their own seconds sum to {own:.0f}); issue '
          f'40\'s goal <= {_GOAL:.0f} s: '
          f'{"met" if walls[j] <= _GOAL else "not met"}', flush=True)
  peak_after = timing.peak(tf)
  print(f'float32 matmul peak after: {peak_after / 1e9:.0f} GFLOP/s')
  first = jobs[0]
  for j in jobs[1:]:
    print(f'wall(--jobs={j}) / wall(--jobs={first}): '
          f'{walls[j] / walls[first]:.2f}')
  # One machine-readable line.
  print(' '.join(f'quick_seconds_jobs{j}={w:.0f}' for j, w in walls.items())
        + ' ' + ' '.join(f'quick_cpu_seconds_jobs{j}={c:.0f}'
                         for j, c in cpus.items())
        + f' peak_gflops={peak_before / 1e9:.0f},{peak_after / 1e9:.0f}')


def _children_cpu() -> float:
  """User + system seconds of this process's finished children, theirs
  included."""
  usage = resource.getrusage(resource.RUSAGE_CHILDREN)
  return usage.ru_utime + usage.ru_stime


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
