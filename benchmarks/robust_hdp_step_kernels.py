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
"""Which kernels a Robust-HDP client's step spends its time in (paper 003).

    python benchmarks/robust_hdp_step_kernels.py
    ONEDNN_MAX_CPU_ISA=AVX2 python benchmarks/robust_hdp_step_kernels.py

One plain SGD step of cnn5 on 28 x 28 images (the step of
`benchmark_robust_hdp.py`'s table) at each `--batch_sizes`, on one core,
as a lane of `run_robust_hdp.py`'s clients has (one intra-op and one
inter-op thread: each kernel's time is one core's, not two independent
kernels' at once): its wall milliseconds, and each oneDNN primitive it
runs (TensorFlow's convolutions, pooling and dense layers on a CPU) with
its implementation, its shape and its milliseconds per step, from
oneDNN's own timer (`ONEDNN_VERBOSE=profile_exec`), each with its GFLOP/s
where it is a convolution or an inner product. What is not in a primitive
is TensorFlow's own (Eigen) ops and dispatch: the step's wall less the
primitives' sum.

`ONEDNN_MAX_CPU_ISA` caps the instructions oneDNN uses (AVX2 on an AVX-512
machine, say): the ISA line says which it took. The matmul peak of the same
ISA, one per core at once (`timing.peak`), is timed first, in this process,
before the steps, which run in a child process of their own (oneDNN's
verbose mode is read once, at its start) with its output captured.
"""

import collections
import math
import os
import re
import subprocess
import sys

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
# benchmarks/timing.py: Python searches a script's own folder first.
import timing

_BATCH_SIZES = flags.DEFINE_list('batch_sizes', ['16', '32', '64', '128'],
                                 'Batch sizes of the timed steps.')
_STEPS = flags.DEFINE_integer('steps', 20, 'Timed steps per batch size.')

# What the child runs: `benchmark_robust_hdp.py`'s SGD step (the step of its
# table) at one batch size, after a warm-up, between two marker lines;
# oneDNN prints one `exec` line per primitive run.
_CHILD = '''
import sys, time
import numpy as np
import tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
from tff_hdp import models
b, steps = int(sys.argv[1]), int(sys.argv[2])
import benchmark_robust_hdp  # From the working directory, benchmarks/.
spec = models.cnn5_model((28, 28), 10)
step = benchmark_robust_hdp._step_functions(tf, spec)['sgd']
w = [tf.constant(v) for v in spec.init(0)]
rng = np.random.default_rng(0)
x = tf.constant(rng.random((b, 28, 28), np.float32))
y = tf.constant(rng.integers(0, 10, b).astype(np.int32))
for _ in range(5):
  [t.numpy() for t in step(w, x, y)]
print('==timed', flush=True)
start = time.perf_counter()
for _ in range(steps):
  [t.numpy() for t in step(w, x, y)]
print('==wall', (time.perf_counter() - start) / steps, flush=True)
'''


def primitive_flops(kind: str, shape: str) -> float:
  """FLOPs of one oneDNN convolution or inner product from its verbose
  shape ('mb32_ic16oc32_ih14oh14kh5..._iw14ow14kw5...', 'mb32ic1568oc10');
  0 for another primitive. Every pass of a convolution (forward,
  backward data, backward weights) costs the same multiply-adds."""
  n = dict((k, int(v)) for k, v in re.findall(r'([a-z]+)(\d+)', shape))
  if kind == 'convolution':
    return 2.0 * math.prod(n[k] for k in ('mb', 'ic', 'oc', 'oh', 'ow', 'kh',
                                          'kw'))
  if kind == 'inner_product':
    return 2.0 * n['mb'] * n['ic'] * n['oc']
  return 0.0


def parse_verbose(text: str, steps: int):
  """(isa, wall seconds per step, [(ms per step, kind, implementation,
  propagation, shape)] longest first) from the child's output."""
  isa = re.search(r'onednn_verbose,info,cpu,isa:(.*)', text)
  timed = text.split('==timed', 1)[1]
  wall = float(re.search(r'==wall (\S+)', timed).group(1))
  ms = collections.defaultdict(float)
  for line in timed.splitlines():
    fields = line.split(',')
    if line.startswith('onednn_verbose') and fields[1:2] == ['exec']:
      # exec,cpu,kind,implementation,propagation,...,shape,milliseconds
      ms[tuple(fields[3:6]) + (fields[-2],)] += float(fields[-1]) / steps
  rows = sorted(((t, *key) for key, t in ms.items()), reverse=True)
  return (isa.group(1).strip() if isa else 'unknown'), wall, rows


def run_batch(batch_size: int, steps: int) -> str:
  """The child's output for one batch size."""
  env = dict(os.environ, ONEDNN_VERBOSE='profile_exec')
  # `python -c` looks first in its working directory: benchmarks/.
  result = subprocess.run([sys.executable, '-c', _CHILD, str(batch_size),
                           str(steps)], capture_output=True, text=True,
                          env=env, cwd=os.path.dirname(os.path.abspath(
                              __file__)), check=False)
  if result.returncode != 0:
    raise RuntimeError(result.stderr.strip().splitlines()[-1])
  return result.stdout


def main(argv):
  cli.check(len(argv) == 1, f'unexpected arguments: {argv[1:]}')
  cli.check(_STEPS.value >= 1, f'--steps must be >= 1, got {_STEPS.value}')
  cli.check(all(b.isdigit() and int(b) >= 1 for b in _BATCH_SIZES.value),
            f'--batch_sizes must be integers >= 1, got {_BATCH_SIZES.value}')
  import tensorflow as tf
  tf.config.threading.set_intra_op_parallelism_threads(1)
  peak = timing.peak(tf)
  lanes = timing.matmul_lanes(tf)
  print(f'cpu: {timing.cpu_name()}  ONEDNN_MAX_CPU_ISA='
        f'{os.environ.get("ONEDNN_MAX_CPU_ISA", "(unset)")}  matmul 2048^2 '
        f'peak: {peak / 1e9:.1f} GFLOP/s ({lanes} at once, one thread each;'
        f' a step runs on one core: its share is {peak / lanes / 1e9:.1f})')
  for b in map(int, _BATCH_SIZES.value):
    isa, wall, rows = parse_verbose(run_batch(b, _STEPS.value), _STEPS.value)
    inside = sum(r[0] for r in rows)
    print(f'\nbatch {b}: step {1e3 * wall:.2f} ms, of which oneDNN '
          f'primitives {inside:.2f} ms (isa: {isa})')
    for t, kind, impl, prop, shape in rows[:8]:
      flops = primitive_flops(kind, shape)
      rate = (f'  {flops / t / 1e6:6.1f} GFLOP/s ({flops / t / 1e6 / (peak / lanes / 1e9):.2f} '
              'of a core)' if flops else '')
      print(f'  {t:7.3f} ms  {kind} {prop} {impl} {shape}{rate}')


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
