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
"""Times Robust-HDP's pieces at paper 003's MNIST scale, against the same-run peak.

    python run_scripts/benchmark_robust_hdp.py           # about 5 minutes
    python run_scripts/benchmark_robust_hdp.py --rounds=1

In one process, on synthetic data of the real shapes (28 x 28 images, the
cnn5 model, p = 28,938):

1. The float32 matmul peak: the best rate of a 2048 x 2048 `tf.matmul`.
2. One DP-SGD step (per-example gradients, clipping, noise) against one
   plain SGD step on the same batch, for b = 16, 32, 64 and 128:
   milliseconds, their ratio, the same step with `vectorized_map`
   per-example gradients (the path before `tff_hdp.per_example`), and the achieved GFLOP/s and
   fraction of the matmul peak. FLOPs per example and step: 3 x 2 x the
   forward multiply-adds (`timing.forward_multiply_adds`: conv 5x5x1x16 on
   28x28, conv 5x5x16x32 on 14x14, dense 1568x10), the usual 3x for forward plus
   backward; DP-SGD's extra work (norms, clipping) is not counted.
3. A full round: 20 clients x 2,400 examples, 1 epoch, Dist1's batch sizes,
   Robust-HDP with RPCA every round, on the direct runner: client training
   and the server step (RPCA) timed apart, and a 200-round run extrapolated.
4. RPCA's noise estimate on that round's updates, now and with the solver
   of commit RPCA_BEFORE (read with `git show`), with their difference.

Run it on a quiet machine (nothing else running): shared cores make every
figure slower. The last line is `dp_sgd_over_sgd=<x at b=64>
seconds_per_round=<s> run_minutes_200_rounds=<m>`.
"""

import os
import sys

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# pylint: disable=g-import-not-at-top,wrong-import-position
import collections
import dataclasses
import json
import statistics

from absl import app
from absl import flags

from run_scripts import cli
from run_scripts import timing

_ROUNDS = flags.DEFINE_integer('rounds', 2, 'Timed full rounds (>= 1).')
_STEPS = flags.DEFINE_integer('steps', 30, 'Timed steps per batch size.')
_OUTPUT = flags.DEFINE_string('output_json', None,
                              'Also write the figures to this JSON file.')
# The last commit before RPCA's two-matmul, mixed-precision iteration.
RPCA_BEFORE = '4987cd9'


def time_steps(tf, step, args, steps):
  """Median seconds of `step(*args)` over `steps` calls, after a warm-up."""
  step(*args)
  times = []
  for _ in range(steps):
    with timing.Clock() as c:
      tf.nest.map_structure(lambda t: t.numpy(), step(*args))
    times.append(c.wall)
  return statistics.median(times)


def main(argv):
  cli.check(len(argv) <= 1, f'unexpected arguments: {" ".join(argv[1:])}')
  cli.check(_ROUNDS.value >= 1, f'--rounds must be >= 1, got {_ROUNDS.value}')
  cli.check(_STEPS.value >= 1, f'--steps must be >= 1, got {_STEPS.value}')
  import numpy as np
  import tensorflow as tf
  from tff_hdp import models
  from tff_hdp.robust_hdp import config as config_lib
  from tff_hdp.robust_hdp import dp_sgd
  from tff_hdp.robust_hdp import privacy_preferences
  from tff_hdp.robust_hdp import process
  from tff_hdp.robust_hdp import training

  print(f'cpu: {timing.cpu_name()}  cores: {os.cpu_count()}')
  peak = max(timing.matmul_peak(tf, repeats=5)[0] for _ in range(2))
  print(f'matmul 2048^2 peak: {peak / 1e9:.1f} GFLOP/s')
  spec = models.cnn5_model((28, 28), 10)
  flops_per_example = 3 * 2 * timing.forward_multiply_adds(spec)
  weights = [tf.constant(w) for w in spec.init(0)]
  rng = np.random.default_rng(0)
  figures = collections.OrderedDict(peak_gflops=peak / 1e9, steps={})

  query = dp_sgd.gaussian_query(3.0, 1.0)
  state = query.initial_global_state()

  @tf.function
  def dp_step(w, x, y, key):
    g = dp_sgd.private_gradient(spec, w, x, y, query, state,
                                tf.cast(tf.shape(y)[0], tf.float32), key)
    return [v - 0.1 * d for v, d in zip(w, g)]

  def vectorized_map_gradients(w, x, y):
    """The per-example gradients before tff_hdp.per_example: TF's
    `vectorized_map` of a `GradientTape` per example (kept here to time)."""

    def one(example):
      with tf.GradientTape() as tape:
        tape.watch(w)
        loss = models.loss_fn(spec.apply(w, example[0][tf.newaxis]),
                              example[1][tf.newaxis])
      return tape.gradient(loss, w)

    return tf.vectorized_map(one, (x, y))

  @tf.function
  def old_dp_step(w, x, y, key):
    grads = vectorized_map_gradients(w, x, y)
    g = dp_sgd.noised_average(dp_sgd.clipped_sum(query, state, grads),
                              tf.constant(3.0), tf.cast(tf.shape(y)[0],
                                                        tf.float32), key)
    return [v - 0.1 * d for v, d in zip(w, g)]

  @tf.function
  def sgd_step(w, x, y):
    with tf.GradientTape() as tape:
      tape.watch(w)
      loss = models.loss_fn(spec.apply(w, x), y)
    return [v - 0.1 * d for v, d in zip(w, tape.gradient(loss, w))]

  print('\nbatch  sgd ms  dp-sgd ms (ratio)  before ms (ratio)  '
        'sgd GFLOP/s (peak)  dp-sgd GFLOP/s (peak)')
  for b in (16, 32, 64, 128):
    x = tf.constant(rng.random((b, 28, 28), np.float32))
    y = tf.constant(rng.integers(0, 10, b).astype(np.int32))
    key = tf.constant([1, 2])
    t_sgd = time_steps(tf, sgd_step, (weights, x, y), _STEPS.value)
    t_dp = time_steps(tf, dp_step, (weights, x, y, key), _STEPS.value)
    t_old = time_steps(tf, old_dp_step, (weights, x, y, key), _STEPS.value)
    gap = max(float(np.max(np.abs(a - o))) for a, o in zip(
        dp_step(weights, x, y, key), old_dp_step(weights, x, y, key)))
    rate = lambda t: flops_per_example * b / t
    figures['steps'][b] = dict(sgd_ms=1e3 * t_sgd, dp_sgd_ms=1e3 * t_dp,
                               ratio=t_dp / t_sgd,
                               before_ms=1e3 * t_old,
                               before_ratio=t_old / t_sgd,
                               max_weight_difference=gap,
                               sgd_gflops=rate(t_sgd) / 1e9,
                               dp_sgd_gflops=rate(t_dp) / 1e9)
    print(f'{b:5d}  {1e3 * t_sgd:6.2f}  {1e3 * t_dp:9.2f} ({t_dp / t_sgd:.2f})  '
          f'{1e3 * t_old:9.2f} ({t_old / t_sgd:.2f})  '
          f'{rate(t_sgd) / 1e9:8.1f} ({rate(t_sgd) / peak:.2f})  '
          f'{rate(t_dp) / 1e9:11.1f} ({rate(t_dp) / peak:.2f})')
  print('(before: vectorized_map per-example gradients; the two steps\' '
        'weights differ by at most '
        f"{max(v['max_weight_difference'] for v in figures['steps'].values()):.1e})")

  eps, batch_sizes = privacy_preferences.load_distribution('dist1', 20)
  config = config_lib.RobustHdpConfig(algorithm='robust_hdp',
                                      epsilons=tuple(eps),
                                      batch_sizes=tuple(batch_sizes),
                                      backend='direct')
  data = [(rng.random((2400, 28, 28), np.float32),
           rng.integers(0, 10, 2400).astype(np.int32)) for _ in range(20)]
  clients = training.client_privacy(config, [2400] * 20)
  # One runner per RPCA solver; the clients' rows come from the first.
  runners = {
      method: process.DirectRunner(
          spec, spec.init(0),
          training.build_aggregator(
              dataclasses.replace(config, rpca_method=method), clients, None),
          settings=dp_sgd.DpSgdSettings(), seed=0)
      for method in config_lib.RPCA_METHODS}
  info = [dict(index=np.int32(i), batch_size=np.int32(c.batch_size),
               noise_multiplier=np.float32(c.noise_multiplier))
          for i, c in enumerate(clients)]
  states = {method: r.initialize() for method, r in runners.items()}
  client_times = []
  server_times = collections.defaultdict(list)
  weights_gap = 0.0
  for r in range(_ROUNDS.value + 1):  # Round 0 is the warm-up.
    first = config_lib.RPCA_METHODS[0]
    with timing.Clock() as c:
      rows = runners[first].client_updates(states[first], data, info)
      rows.numpy()
    round_weights = {}
    for method, runner in runners.items():
      with timing.Clock() as s:
        states[method], measurements = runner.server_update(states[method],
                                                            rows)
      round_weights[method] = np.asarray(measurements['weights'])
      if r:
        server_times[method].append(s.wall)
    if r:
      client_times.append(c.wall)
    weights_gap = max(weights_gap, float(np.max(np.abs(
        round_weights['admm'] - round_weights['ialm']))))
  steps = sum(-(-2400 // c.batch_size) for c in clients)
  client_s = statistics.median(client_times)
  server_s = {m: statistics.median(t) for m, t in server_times.items()}
  per_round = client_s + server_s[config.rpca_method]
  round_flops = flops_per_example * sum(
      -(-2400 // c.batch_size) * c.batch_size for c in clients)
  figures['round'] = dict(client_seconds=client_s, server_seconds=server_s,
                          rpca_weights_max_difference=weights_gap,
                          dp_sgd_steps=steps,
                          client_gflops=round_flops / client_s / 1e9,
                          run_minutes_200_rounds=200 * per_round / 60)
  print(f'\nfull round (20 x 2,400, Dist1, {steps} DP-SGD steps): clients '
        f'{client_s:.1f} s ({round_flops / client_s / 1e9:.1f} GFLOP/s, '
        f'{round_flops / client_s / peak:.2f} of peak), server (RPCA) '
        + ', '.join(f'{m} {t:.2f} s' for m, t in server_s.items()) +
        f' (weights differ by at most {weights_gap:.1e}); 200 rounds with '
        f'{config.rpca_method}: {200 * per_round / 60:.0f} min, with ialm: '
        f"{200 * (client_s + server_s['ialm']) / 60:.0f} min")
  # RPCA now and as of RPCA_BEFORE, on the last round's update matrix.
  from tff_hdp.robust_hdp import rpca
  before = timing.module_at_commit(RPCA_BEFORE, 'tff_hdp/robust_hdp/rpca.py')
  matrix = tf.transpose(tf.cast(rows, tf.float64))
  figures['rpca'] = {}
  for method in config_lib.RPCA_METHODS:
    row = {}
    for name, module in (('now', rpca), ('before', before)):
      if module is None:
        continue
      solve = tf.function(autograph=False)(
          lambda m, module=module, method=method: module.noise_variances(
              m, method=method))
      row[name + '_variances'] = solve(matrix).numpy()
      row[name + '_seconds'] = time_steps(tf, solve, (matrix,), 3)
    if before is not None:
      row['max_relative_difference'] = float(np.max(np.abs(
          row['now_variances'] / row['before_variances'] - 1)))
    figures['rpca'][method] = {k: v for k, v in row.items()
                               if not k.endswith('variances')}
    print(f'RPCA {method} on the {matrix.shape[0]} x {matrix.shape[1]} '
          f"updates: {row['now_seconds']:.3f} s" + (
              '' if before is None else
              f" (at {RPCA_BEFORE}: {row['before_seconds']:.3f} s; sigma^2 "
              f"equal to {row['max_relative_difference']:.1e} relative)"))
  if _OUTPUT.value:
    with open(_OUTPUT.value, 'w') as f:
      json.dump(figures, f, indent=1)
  print(f"dp_sgd_over_sgd={figures['steps'][64]['ratio']:.2f} "
        f'seconds_per_round={per_round:.1f} '
        f"run_minutes_200_rounds={figures['round']['run_minutes_200_rounds']:.0f}")


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
