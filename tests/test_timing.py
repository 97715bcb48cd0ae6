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
"""The benchmarks' FLOP counts, against layer-by-layer counts by hand; their
flags' errors; the order and arithmetic of their timings in turn; the size
of their functions (the project's rule).

`benchmarks/` is not installed; the tests import its `timing` from the
repository root (pytest.ini's pythonpath), as `benchmarks.timing`.
"""

import ast
import glob
import os
import subprocess
import sys

import pytest

from benchmarks import timing
from tff_hdp import models


def test_fc_multiply_adds():
  # 784 -> 50 -> 10.
  assert timing.forward_multiply_adds(models.fc_model()) == 784 * 50 + 50 * 10


def test_cnn_multiply_adds():
  # 3x3 conv 1->16 at 28x28, pool, 3x3 conv 16->32 at 14x14, pool,
  # dense 7*7*32 -> 128 -> 62.
  expected = (28 * 28 * 9 * 16 + 14 * 14 * 9 * 16 * 32 + 1568 * 128 +
              128 * 62)
  assert timing.forward_multiply_adds(models.cnn_model()) == expected


def test_cnn5_multiply_adds():
  # Robust-HDP's CNN: 5x5 conv 1->16 at 28x28, 5x5 conv 16->32 at 14x14,
  # dense 1568 -> 10.
  expected = 28 * 28 * 25 * 16 + 14 * 14 * 25 * 16 * 32 + 1568 * 10
  assert timing.forward_multiply_adds(models.cnn5_model()) == expected


def test_training_flops_are_six_per_multiply_add():
  spec = models.fc_model()
  assert timing.training_flops(spec, 10) == pytest.approx(
      6 * 10 * (784 * 50 + 50 * 10))


def test_in_turn_calls_each_step_in_turn_and_gives_seconds_per_call(
    monkeypatch):
  tf = pytest.importorskip('tensorflow')
  order = []
  clock = iter(range(100))

  class Clock:  # Each timed block takes 6 "seconds" of a fake clock.
    def __enter__(self):
      self.start = next(clock) * 6
      return self

    def __exit__(self, *unused):
      self.wall = next(clock) * 6 - self.start

  monkeypatch.setattr(timing, 'Clock', Clock)
  steps = {name: (lambda name=name: order.append(name) or tf.constant(0), ())
           for name in ('a', 'b')}
  seconds = timing.time_in_turn(tf, steps, repeats=2, calls=3)
  # A warm-up call of each, then per repetition three calls of each in turn.
  assert order == ['a', 'b'] + (['a'] * 3 + ['b'] * 3) * 2
  assert seconds == {'a': 2, 'b': 2}  # 6 "seconds" over 3 calls.


@pytest.mark.parametrize('intraop,cores,lanes', [
    (None, 2, 1), ('2', 2, 1), ('1', 2, 2), ('1', 4, 4), ('2', 4, 2),
    ('8', 2, 1)])
def test_matmul_peak_takes_every_core_whatever_the_threads(
    intraop, cores, lanes, monkeypatch):
  # One matmul with TensorFlow's default threads (every core's), else one
  # per group of intra-op threads (Robust-HDP's binaries run one a lane).
  if intraop is None:
    monkeypatch.delenv('TF_NUM_INTRAOP_THREADS', raising=False)
  else:
    monkeypatch.setenv('TF_NUM_INTRAOP_THREADS', intraop)
  monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: set(range(cores)))
  tf = pytest.importorskip('tensorflow')
  monkeypatch.setattr(tf.config.threading,
                      'get_intra_op_parallelism_threads', lambda: 0)
  assert timing.matmul_lanes(tf) == lanes


@pytest.mark.parametrize('script,flag', [
    ('profile_fedhdp.py', '--clients=0'),
    ('time_presets_fedhdp.py', '--presets=cifar'),
    ('benchmark_robust_hdp.py', '--clients=1'),
])
def test_benchmark_binaries_refuse_bad_flags_in_one_line(script, flag):
  path = os.path.join(os.path.dirname(os.path.dirname(__file__)),
                      'benchmarks', script)
  result = subprocess.run([sys.executable, path, flag], capture_output=True,
                          text=True, timeout=300, check=False)
  assert result.returncode == 2, result.stderr
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith(f'{script}: error: --'), lines



def test_benchmark_functions_are_short():
  # The project's rule, benchmarks included: no function over 80 lines or 8
  # parameters (self and cls not counted).
  folder = os.path.join(os.path.dirname(os.path.dirname(__file__)),
                        'benchmarks')
  too_big = []
  for path in sorted(glob.glob(os.path.join(folder, '*.py'))):
    with open(path) as f:
      tree = ast.parse(f.read())
    for node in ast.walk(tree):
      if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        continue
      a = node.args
      names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
      params = len(names) + bool(a.vararg) + bool(a.kwarg) - (
          names[:1] in (['self'], ['cls']))
      lines = node.end_lineno - node.lineno + 1
      if lines > 80 or params > 8:
        too_big.append(f'{os.path.basename(path)}:{node.lineno} {node.name}: '
                       f'{lines} lines, {params} parameters')
  assert not too_big, too_big
