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
"""Timing helpers shared by the benchmark binaries of `benchmarks/`.

`Clock` measures wall and CPU seconds of a block (optionally adding a TFF
worker process's CPU); `matmul_peak` times a large float32 `tf.matmul` in the
same run, the reference every benchmark reports its achieved FLOP/s against
(`peak`); `time_in_turn` times several steps side by side;
`forward_multiply_adds` and `training_flops` count a training step's work.

Not installed with `tff_hdp`: the benchmarks import it as the plain module
`timing` (Python searches a script's own folder first), the tests as
`benchmarks.timing` (pytest.ini puts the repository root on their path).
Run as a script, it prints the CPU and its peak.
"""

import collections
import concurrent.futures
import math
import os
import statistics
import time


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


def time_in_turn(tf, steps, repeats: int) -> dict:
  """{name: median wall seconds} of each `steps[name] = (fn, args)`, after a
  warm-up call of each, calling each once per repetition in turn: a change
  of the machine's speed during the run moves all of them alike."""
  times = collections.defaultdict(list)
  for fn, args in steps.values():
    tf.nest.map_structure(lambda t: t.numpy(), fn(*args))
  for _ in range(repeats):
    for name, (fn, args) in steps.items():
      with Clock() as c:
        tf.nest.map_structure(lambda t: t.numpy(), fn(*args))
      times[name].append(c.wall)
  return {name: statistics.median(t) for name, t in times.items()}


def forward_multiply_adds(spec) -> int:
  """Multiply-adds of one example's forward pass through `spec`.

  For the models of `tff_hdp.models` built from 'SAME' convolutions, each
  followed by 2x2 pooling (FedHDP's cnn, Robust-HDP's cnn5), and dense
  layers: a convolution [k, k, C, O] at layer i sees (H/2^i) x (W/2^i)
  positions; a dense layer [d, h] costs d*h. Biases, activations, pooling
  and dropout are not counted (a few percent at most).
  """
  h, w = spec.input_shape[:2]
  convs = [s for s in spec.shapes if len(s) == 4]
  total = sum((h >> i) * (w >> i) * math.prod(s) for i, s in enumerate(convs))
  return total + sum(math.prod(s) for s in spec.shapes if len(s) == 2)


def training_flops(spec, examples: float) -> float:
  """FLOPs of SGD over `examples` example-passes: 3 x 2 x multiply-adds
  (forward, and a backward pass of twice the forward's work)."""
  return 6.0 * forward_multiply_adds(spec) * examples


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



if __name__ == '__main__':
  # `python benchmarks/timing.py`: the CPU and its matmul peak, for a figure
  # timed outside a benchmark (a reproduction's wall time).
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  print(f'cpu: {cpu_name()} x {os.cpu_count()}; 2048^2 float32 matmul peak: '
        f'{peak(tf) / 1e9:.1f} GFLOP/s')
