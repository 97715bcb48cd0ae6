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
"""The machine and code a figure came from (shared by the binaries and the
benchmarks of `benchmarks/`).

`provenance` is what every results.json records: the commit it ran at, the
CPU, and for a long run the same-machine matmul peak (`peak`), so that a
kept run names where it came from without prose. `Clock` measures wall and
CPU seconds of a block (optionally adding a TFF worker process's CPU);
`matmul_peak` times a large float32 `tf.matmul`, the reference every speed
figure is reported against (`peak`). TensorFlow is passed in, so importing
this module stays TensorFlow-free.
"""

import concurrent.futures
import os
import subprocess
import time
from typing import Any, Optional


def cpu_seconds_of(pid) -> float:
  """User + system CPU seconds of process `pid` (0 if it is gone)."""
  try:
    with open(f'/proc/{pid}/stat') as f:
      fields = f.read().rsplit(')', 1)[1].split()
  except OSError:
    return 0.0
  return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


class Clock:
  """Wall and CPU seconds of a block (this process plus the TFF worker)."""

  def __init__(self, worker_pid=None):
    self._worker_pid = worker_pid

  def _cpu(self):
    cpu = time.process_time()
    if self._worker_pid is not None:
      cpu += cpu_seconds_of(self._worker_pid)
    return cpu

  def __enter__(self):
    self.wall0, self.cpu0 = time.perf_counter(), self._cpu()
    return self

  def __exit__(self, *exc):
    self.wall = time.perf_counter() - self.wall0
    self.cpu = self._cpu() - self.cpu0


_MATMUL = {}


def matmul_lanes(tf) -> int:
  """How many matmuls `matmul_peak` runs at once: 1 with TensorFlow's
  default threads (one matmul takes every core), else one per group of
  intra-op threads the cores hold (`tf.config.threading`, or
  TF_NUM_INTRAOP_THREADS), so that the peak is every core's whatever the
  process's threads (Robust-HDP's binaries run one thread per lane)."""
  threads = tf.config.threading.get_intra_op_parallelism_threads()
  if not threads:
    try:
      threads = int(os.environ.get('TF_NUM_INTRAOP_THREADS', '0'))
    except ValueError:
      threads = 0
  cores = len(os.sched_getaffinity(0))
  return 1 if threads <= 0 or threads >= cores else cores // threads


def matmul_peak(tf, size: int = 2048, repeats: int = 3) -> tuple[float, float]:
  """Best float32 matmul rate: (FLOP per wall second, per CPU second), of
  `matmul_lanes` independent size^2 matmuls at once, each called from a
  thread of its own (one graph of several matmuls did not always run them
  at once)."""
  lanes = matmul_lanes(tf)
  if (size, lanes) not in _MATMUL:
    a = [tf.random.stateless_normal([size, size], seed=[1, 2 + k])
         for k in range(lanes)]
    matmul = tf.function(lambda m: tf.reduce_sum(tf.matmul(m, m)[:1]))
    pool = concurrent.futures.ThreadPoolExecutor(lanes)
    call = lambda: list(pool.map(lambda m: matmul(m).numpy(), a))
    call()
    _MATMUL[size, lanes] = call
  call = _MATMUL[size, lanes]
  flops = 2.0 * size**3 * lanes
  best_wall, best_cpu = 0.0, 0.0
  for _ in range(repeats):
    with Clock() as c:
      call()
    best_wall = max(best_wall, flops / c.wall)
    best_cpu = max(best_cpu, flops / c.cpu)
  return best_wall, best_cpu


def peak(tf) -> float:
  """The same-run reference every benchmark reports against: the best
  float32 2048^2 matmul rate (FLOP per wall second) over 2 x 5 calls."""
  return max(matmul_peak(tf, repeats=5)[0] for _ in range(2))


def cpu_name() -> str:
  """The CPU's model name from /proc/cpuinfo ('unknown' if unreadable)."""
  try:
    with open('/proc/cpuinfo') as f:
      for line in f:
        if line.startswith('model name'):
          return line.split(':', 1)[1].strip()
  except OSError:
    pass
  return 'unknown'


# A run at least this long records the matmul peak (about 2 s to time).
PEAK_AFTER_SECONDS = 300.0


def commit(directory: Optional[str] = None) -> Optional[str]:
  """The git commit of the checkout holding `directory` (default this
  package's), with '-dirty' if tracked files differ from it; None outside
  a git checkout."""
  directory = directory or os.path.dirname(os.path.abspath(__file__))
  try:
    head = subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=directory,
                          capture_output=True, text=True, timeout=10)
    if head.returncode:
      return None
    dirty = subprocess.run(['git', 'diff', '--quiet', 'HEAD'], cwd=directory,
                           capture_output=True, timeout=10).returncode
  except (OSError, subprocess.SubprocessError):
    return None
  return head.stdout.strip() + ('-dirty' if dirty else '')


def provenance(tf=None, seconds: float = 0.0) -> dict[str, Any]:
  """{'commit', 'cpu', 'cores'[, 'matmul_peak_gflops']}: where a result came
  from. With `tf` and a run of at least `PEAK_AFTER_SECONDS`, the 2048^2
  float32 matmul peak timed now (as the benchmarks' same-run peak; other
  work on the machine lowers it)."""
  record = {'commit': commit(), 'cpu': cpu_name(),
            'cores': len(os.sched_getaffinity(0))}
  if tf is not None and seconds >= PEAK_AFTER_SECONDS:
    record['matmul_peak_gflops'] = round(peak(tf) / 1e9, 1)
  return record
