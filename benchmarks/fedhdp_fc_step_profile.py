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
"""Where a direct-backend FC NN step's time goes: its big operations alone.

`benchmark_fedhdp.py` runs it when a target of the direct round is missed:
the forward matmul x @ W1, the weight gradient x^T dz (as TensorFlow takes
it, and with x^T pre-transposed) and the memory-bound update W1 - dW1, for
every client of the round at once, each the median of five timings of five
calls, beside the step's own time in the speed benchmark.

`time_presets_fedhdp.py` takes two more from here: `matmul_ceiling` (the
first layer's forward and weight gradient at a round's batch sizes, the
ceiling of a row's fraction of the peak) and `other_layouts` (the same two
matmuls in other forms, timed in turn against the form the backend runs).
"""

import functools
import math

import fedhdp_rounds
# benchmarks/timing.py: Python searches a script's own folder first.
import timing


def profile_fc_step(tf, num_clients, spec):
  """Where a direct-backend FC step's time goes: its big ops, timed alone."""
  batch_size = fedhdp_rounds.BATCH_SIZE
  d, h = spec.shapes[0]
  x = tf.random.stateless_normal([num_clients, batch_size, d], seed=[1, 1])
  xt = tf.transpose(x, [0, 2, 1])
  w = tf.random.stateless_normal([num_clients, d, h], seed=[1, 2])
  dz = tf.random.stateless_normal([num_clients, batch_size, h], seed=[1, 3])
  ops = {
      'forward x @ W1': (tf.function(lambda a, b: tf.matmul(a, b)), (x, w)),
      'weight gradient x^T dz': (
          tf.function(lambda a, b: tf.matmul(a, b, adjoint_a=True)), (x, dz)),
      'same, x^T pre-transposed': (
          tf.function(lambda a, b: tf.matmul(a, b)), (xt, dz)),
      'update W1 - dW1 (memory-bound)': (
          tf.function(lambda a, b: a - b), (w, w)),
  }
  out = {}
  for name, (fn, args) in ops.items():
    fn(*args).numpy()
    times = []
    for _ in range(5):
      with timing.Clock() as c:
        for _ in range(5):
          fn(*args).numpy()
      times.append(c.wall / 5)
    out[name] = sorted(times)[len(times) // 2]
  return out


def print_profile(profile, direct_row, num_clients, samples):
  """`profile` beside one step of the speed benchmark's `direct_row` (the
  FC NN at E = 10, `samples` examples per client)."""
  batch_size = fedhdp_rounds.BATCH_SIZE
  steps = math.ceil(samples / batch_size) * 10
  print(f'  one FC step ({num_clients} clients, batch {batch_size}) '
        f"takes {direct_row['client_training_seconds'] / steps * 1e3:.2f} "
        'ms; its big operations, timed alone (ms):')
  for name, seconds in profile.items():
    print(f'    {name}: {seconds * 1e3:.2f}')


def _median_seconds(fn, args, calls: int = 5, repeats: int = 5) -> float:
  """Median over `repeats` of the mean seconds of `calls` calls."""
  fn(*args).numpy()  # Traced, and its buffers allocated, before timing.
  times = []
  for _ in range(repeats):
    with timing.Clock() as c:
      for _ in range(calls):
        out = fn(*args)
      out.numpy()
    times.append(c.wall / calls)
  return sorted(times)[len(times) // 2]


def matmul_ceiling(tf, spec, num_clients: int, batches) -> dict[int, tuple]:
  """{b: (forward s, weight-gradient s)}: an FC NN's first layer's two
  matmuls for `num_clients` stacked clients at batch b, timed alone.

  They are the FC step's arithmetic (layer 1 holds 98% of the FC NN's
  weights, and its input gradient is never formed); a round that ran only
  them, at these rates, would take `ceiling_seconds`.
  """
  d, h = spec.shapes[0]
  w = tf.random.stateless_normal([num_clients, d, h], seed=[2, 1])
  forward = tf.function(lambda a, b: tf.matmul(a, b))
  gradient = tf.function(lambda a, b: tf.matmul(a, b, adjoint_a=True))
  out = {}
  for b in batches:
    x = tf.random.stateless_normal([num_clients, b, d], seed=[2, 2])
    dz = tf.random.stateless_normal([num_clients, b, h], seed=[2, 3])
    out[b] = (_median_seconds(forward, (x, w)),
              _median_seconds(gradient, (x, dz)))
  return out


# The layer's two matmuls in the form the direct backend runs them
# (`batched_models._input_layer`: the gradient reads a pre-transposed x) and
# in other forms, per model: {name: (models, forward, weight gradient)},
# each a function of (x [k, b, d], x^T [k, d, b], weights, dz) in its
# form's layout. 'side by side': the global and personal models' columns as
# one [d, 2h] matrix (Ditto trains both on the same batch: one matmul for
# the two, its time halved); 'transposed': W1 kept as [h, d]; 'xla': the
# form as run, compiled by XLA.
_LAYOUTS = {
    'as run': (1, lambda tf, x, xt, w, dz: tf.matmul(x, w),
               lambda tf, x, xt, w, dz: tf.matmul(xt, dz)),
    'side by side': (2, lambda tf, x, xt, w, dz: tf.matmul(x, w),
                     lambda tf, x, xt, w, dz: tf.matmul(xt, dz)),
    'transposed': (1, lambda tf, x, xt, w, dz: tf.matmul(x, w, adjoint_b=True),
                   lambda tf, x, xt, w, dz: tf.matmul(dz, x, adjoint_a=True)),
    'xla': (1, lambda tf, x, xt, w, dz: tf.matmul(x, w),
            lambda tf, x, xt, w, dz: tf.matmul(xt, dz)),
}


def other_layouts(tf, spec, num_clients: int, batches,
                  repeats: int = 40) -> dict[str, dict[int, tuple]]:
  """{form: {b: (forward s, weight-gradient s) per model}} of `_LAYOUTS`:
  the layer's two matmuls for `num_clients` stacked clients at batch b, the
  forms timed in turn (`timing.time_in_turn`, three calls of each per
  repetition: one such matmul is a few milliseconds)."""
  d, h = spec.shapes[0]
  out = {name: {} for name in _LAYOUTS}
  for b in batches:
    x = tf.random.stateless_normal([num_clients, b, d], seed=[2, 2])
    xt = tf.transpose(x, [0, 2, 1])
    steps = {}
    for name, (models, forward, gradient) in _LAYOUTS.items():
      shape = ([num_clients, h, d] if name == 'transposed'
               else [num_clients, d, models * h])
      w = tf.random.stateless_normal(shape, seed=[2, 1])
      dz = tf.random.stateless_normal([num_clients, b, models * h],
                                      seed=[2, 3])
      for part, fn in (('forward', forward), ('gradient', gradient)):
        # A partial, not a lambda made in this loop: TensorFlow counts
        # traces by the wrapped code, and every such lambda shares one, so
        # each form's single trace would read as retracing and warn.
        steps[name, part] = (
            tf.function(functools.partial(fn, tf),
                        jit_compile=name == 'xla'), (x, xt, w, dz))
    seconds = timing.time_in_turn(tf, steps, repeats, calls=3)
    for name, (models, _, _) in _LAYOUTS.items():
      out[name][b] = (seconds[name, 'forward'] / models,
                      seconds[name, 'gradient'] / models)
  return out


def print_layouts(layouts):
  """Each form of `other_layouts` but the first: its per-model milliseconds
  and their ratio to the first's (the form as run), from the same run."""
  (first, as_run), *others = layouts.items()
  cells = '; '.join(f'batch {b}: x @ W1 {f * 1e3:.2f}, x^T dz {g * 1e3:.2f}'
                    for b, (f, g) in as_run.items())
  print(f'# the same matmuls timed in turn, ms per model: {first}: {cells}')
  for name, by_batch in others:
    cells = '; '.join(
        f'batch {b}: x @ W1 {f * 1e3:.2f} ({f / as_run[b][0]:.2f}), '
        f'x^T dz {g * 1e3:.2f} ({g / as_run[b][1]:.2f})'
        for b, (f, g) in by_batch.items())
    print(f'#   {name} (ratio to {first}): {cells}')


def ceiling_seconds(ceiling, batch_counts, models: int) -> float:
  """A round's seconds if it ran only `matmul_ceiling`'s matmuls:
  `batch_counts` = {b: steps at batch b per client and round}, for each of
  `models` models a client trains (2 with Ditto)."""
  return models * sum(n * sum(ceiling[b]) for b, n in batch_counts.items())


def print_ceiling(ceiling, num_clients, spec, peak):
  """Each matmul of `matmul_ceiling` with its GFLOP/s and fraction of
  `peak`."""
  d, h = spec.shapes[0]
  print(f'# the FC step\'s arithmetic, timed alone: layer 1 ({d}x{h}) of '
        f'{num_clients} stacked clients')
  for b, (forward, gradient) in ceiling.items():
    flops = 2 * num_clients * b * d * h
    cells = ', '.join(
        f'{name} {s * 1e3:.2f} ms = {flops / s / 1e9:.1f} GFLOP/s '
        f'({flops / s / peak:.2f})'
        for name, s in (('x @ W1', forward), ('x^T dz', gradient)))
    print(f'#   batch {b}: {cells}')
