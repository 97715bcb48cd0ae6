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
"""Times per-example gradients' two paths on the same model, against the peak.

    python benchmarks/benchmark_per_example.py                # cnn5 and fc
    python benchmarks/benchmark_per_example.py --models=cnn5 --repeats=50

In one process, on synthetic data of the real shapes (28 x 28 images, 10
classes, batch 64; values do not change the work):

1. The float32 matmul peak: the best rate of a 2048 x 2048 `tf.matmul`
   (`timing.peak`).
2. For each model (Robust-HDP's cnn5, the FC NN), the per-example work of
   one DP-SGD step (`dp_sgd.private_gradient` before its noise): every
   example's gradient norm, then the sum of the gradients clipped to c = 1,
   by the two paths of `tff_hdp.per_example` on the same weights and batch:
   - factored: `batch_gradients` on the package's model, one batched
     forward and backward pass through its recorded layers;
   - vectorized_map: `vectorized_gradients`, the path `batch_gradients`
     takes for a model of plain TF ops (`MaterializedGradients`).
   Both are compiled `tf.function`s (autograph off, as DP-SGD runs them),
   called once each to warm up (and trace), then timed in turn, one call of
   each per repetition, so that a change of the machine's speed moves both
   alike (`timing.time_in_turn`); the median of the repetitions is
   reported, with vectorized_map's time over the factored one's, the
   achieved GFLOP/s and its fraction of the peak, and the largest
   difference of the two clipped sums relative to the largest entry.

FLOPs per step: batch x 3 x 2 x the forward multiply-adds
(`timing.training_flops`), the usual 3x for forward plus backward; the
norms and the clipping are not counted. Run it on a quiet machine: shared
cores make every figure slower. The last line is
`vectorized_map_over_factored <model>=<ratio> ...`.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
from absl import app
from absl import flags
import numpy as np

from tff_hdp.run_scripts import cli
# benchmarks/timing.py: Python searches a script's own folder first.
import timing

# name: (input shape, classes)
MODELS = {'cnn5': ((28, 28), 10), 'fc': ((28, 28), 10)}

_MODELS = flags.DEFINE_list('models', list(MODELS),
                            f'Any of {", ".join(MODELS)}.')
_BATCH = flags.DEFINE_integer('batch', 64, 'Examples per step (>= 1).')
_REPEATS = flags.DEFINE_integer(
    'repeats', 30, 'Timed calls of each path, after one warm-up call (>= 1).')


def clipped_sum_steps(tf, per_example, spec, clip: float = 1.0) -> dict:
  """{path: tf.function(w, x, y) -> sum_j clip_c(g_j)}, the two paths."""

  def clipped_sum(grads):
    scale = tf.minimum(1.0, clip / tf.sqrt(grads.squared_norms()))
    return grads.weighted_sum(scale)

  return {
      'factored': tf.function(
          lambda w, x, y: clipped_sum(per_example.batch_gradients(
              spec, w, x, y)), autograph=False),
      'vectorized_map': tf.function(
          lambda w, x, y: clipped_sum(per_example.MaterializedGradients(
              per_example.vectorized_gradients(spec, w, x, y))),
          autograph=False),
  }


def main(argv):
  cli.check_no_arguments(argv)
  cli.check_names(_MODELS.value, MODELS, 'models', 'model')
  cli.check(_BATCH.value >= 1, f'--batch must be >= 1, got {_BATCH.value}')
  cli.check(_REPEATS.value >= 1,
            f'--repeats must be >= 1, got {_REPEATS.value}')
  import tensorflow as tf
  from tff_hdp import models
  from tff_hdp import per_example

  print(f'cpu: {timing.cpu_name()}  cores: {os.cpu_count()}')
  peak = timing.peak(tf)
  print(f'matmul_peak_gflops={peak / 1e9:.1f}', flush=True)
  batch = _BATCH.value
  rng = np.random.default_rng(0)
  ratios = {}
  for name in _MODELS.value:
    shape, classes = MODELS[name]
    spec = models.build_model(name, shape, classes)
    weights = [tf.constant(w) for w in spec.init(0)]
    x = tf.constant(rng.random((batch,) + shape, np.float32))
    y = tf.constant(rng.integers(0, classes, batch).astype(np.int32))
    steps = {path: (fn, (weights, x, y))
             for path, fn in clipped_sum_steps(tf, per_example, spec).items()}
    # vectorized_map's known warning on a convolution ("Conv2DBackpropFilter
    # uses a while_loop"), the reason for the factored path, is not repeated.
    level = tf.get_logger().level
    tf.get_logger().setLevel('ERROR')
    try:
      t = timing.time_in_turn(tf, steps, _REPEATS.value)
    finally:
      tf.get_logger().setLevel(level)
    sums = {path: fn(*args) for path, (fn, args) in steps.items()}
    gap = max(float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))
              for a, b in zip(sums['vectorized_map'], sums['factored']))
    rate = lambda seconds: timing.training_flops(spec, batch) / seconds
    ratios[name] = t['vectorized_map'] / t['factored']
    print(f'{name}: batch={batch} parameters={spec.num_parameters} '
          f"factored_ms={1e3 * t['factored']:.2f} "
          f"vectorized_map_ms={1e3 * t['vectorized_map']:.2f} "
          f'vectorized_map_over_factored={ratios[name]:.2f} '
          f"factored_gflops={rate(t['factored']) / 1e9:.1f} "
          f"({rate(t['factored']) / peak:.3f} of peak) "
          f"vectorized_map_gflops={rate(t['vectorized_map']) / 1e9:.1f} "
          f"({rate(t['vectorized_map']) / peak:.3f} of peak) "
          f'max_relative_difference={gap:.1e}', flush=True)
  print('vectorized_map_over_factored ' +
        ' '.join(f'{name}={r:.2f}' for name, r in ratios.items()))


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
