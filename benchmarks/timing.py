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

`Clock`, `matmul_peak`, `peak` and `cpu_name` are `tff_hdp.machine`'s (the
binaries record the same in results.json): `Clock` measures wall and CPU
seconds of a block; `matmul_peak` times a large float32 `tf.matmul` in the
same run, the reference every benchmark reports its achieved FLOP/s against
(`peak`). Here: `time_in_turn` times several steps side by side;
`forward_multiply_adds` and `training_flops` count a training step's work.

Not installed with `tff_hdp`: the benchmarks import it as the plain module
`timing` (Python searches a script's own folder first), the tests as
`benchmarks.timing` (pytest.ini puts the repository root on their path).
Run as a script, it prints the CPU and its peak.
"""

import collections
import math
import os
import statistics

from tff_hdp.machine import Clock  # pylint: disable=unused-import
from tff_hdp.machine import cpu_name
from tff_hdp.machine import cpu_seconds_of  # pylint: disable=unused-import
from tff_hdp.machine import matmul_lanes  # pylint: disable=unused-import
from tff_hdp.machine import matmul_peak  # pylint: disable=unused-import
from tff_hdp.machine import peak


def time_in_turn(tf, steps, repeats: int, calls: int = 1) -> dict:
  """{name: median wall seconds per call} of each `steps[name] = (fn, args)`,
  after a warm-up call of each, calling each `calls` times per repetition
  in turn (the last call's result awaited): a change of the machine's speed
  during the run moves all of them alike. `calls` > 1 for a step so short
  that one call would be mostly its dispatch."""
  times = collections.defaultdict(list)
  for fn, args in steps.values():
    tf.nest.map_structure(lambda t: t.numpy(), fn(*args))
  for _ in range(repeats):
    for name, (fn, args) in steps.items():
      with Clock() as c:
        for _ in range(calls):
          out = fn(*args)
        tf.nest.map_structure(lambda t: t.numpy(), out)
      times[name].append(c.wall / calls)
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



if __name__ == '__main__':
  # `python benchmarks/timing.py`: the CPU and its matmul peak, for a figure
  # timed outside a benchmark (a reproduction's wall time).
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  print(f'cpu: {cpu_name()} x {os.cpu_count()}; 2048^2 float32 matmul peak: '
        f'{peak(tf) / 1e9:.1f} GFLOP/s')
