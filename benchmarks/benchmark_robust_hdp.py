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

    python benchmarks/benchmark_robust_hdp.py           # several minutes
    python benchmarks/benchmark_robust_hdp.py --rounds=1

In one process, on synthetic data of the real shapes (28 x 28 images, the
cnn5 model, p = 28,938):

TensorFlow's threads are the driver's (`cohort.one_thread_per_lane`, as
`run_robust_hdp.py` sets them): on a CPU of two or more cores, one intra-op
thread, each lane of clients on a core of its own, unless
TF_NUM_INTRAOP_THREADS is set (e.g. =2 to time TensorFlow's default).

1. The float32 matmul peak: the best rate of a 2048 x 2048 `tf.matmul`, one
   per core at once with one intra-op thread (`timing.matmul_lanes`).
2. One DP-SGD step (per-example gradients, clipping, noise; with one
   intra-op thread, as a lane runs it; TensorFlow's inter-op threads, one
   per core unless TF_NUM_INTEROP_THREADS is set, may still run a step's
   independent ops on another core while the rest of the machine is idle)
   against one
   plain SGD step on the same batch, for b = 16, 32, 64 and 128:
   milliseconds, their ratio, the same step with the general per-example
   path in place of the factored one (`per_example.vectorized_gradients`:
   TF's `vectorized_map` of a `GradientTape` per example, the path of a
   model not built from `tff_hdp.layers`), and the achieved GFLOP/s and
   fraction of the matmul peak. The steps are timed in turn, one call of
   each per repetition, so that a change in the machine's speed during the
   run moves all of them alike. FLOPs per example and step: 3 x 2 x the
   forward multiply-adds (`timing.forward_multiply_adds`: conv 5x5x1x16 on
   28x28, conv 5x5x16x32 on 14x14, dense 1568x10), the usual 3x for forward plus
   backward; DP-SGD's extra work (norms, clipping) is not counted.
3. A full round: 20 clients x 2,400 examples, 1 epoch, Dist1's batch sizes,
   Robust-HDP with RPCA every round, on the direct backend: client training
   and the server step (RPCA) timed apart, and a 200-round run extrapolated.
   The clients are timed in two forms, one after the other in each round
   (the order alternating), from the same keys: as the driver's
   `direct_backend.DirectRound` trains them (`cohort.default_form`: on a CPU
   that runs two lanes at once, two lanes of clients, `cohort.IN_LANES`),
   and in the other CPU form (each client in turn, `cohort.IN_TURN`, or
   lanes if the driver's is in turn); each with its wall and CPU seconds
   and its fraction of the peak, and the updates of the two compared. FLOPs: 3 x 2
   x the forward multiply-adds of the E_i b_i examples the clients' steps
   take in expectation.
4. RPCA's noise estimate on that round's updates by each of its solvers
   (`--rpca_method`: the inexact ALM, the authors' ADMM), each sigma^2
   against the first solver's;
   and its profile (`rpca_profile`): iterations, milliseconds per
   iteration, and an iteration's two p x n x n matmuls (its floor) and its
   element-wise passes timed alone, the passes also fused by XLA.

Run it on a quiet machine (nothing else running): shared cores make every
figure slower, and a form with more threads takes a larger share of them.
The last line gives the ratios issues 41 and 51 set goals for:
`dp_sgd_over_sgd=<x at b=64> rpca_ialm_seconds=<s>
clients_fraction_of_peak=<the driver's> <other form>_clients_fraction_of_peak=<>
seconds_per_round=<s> run_minutes_200_rounds=<m>` (the driver's clients and
the configured solver). `--clients=k` times the first k of Dist1's 20
clients only, for a quicker look.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
import collections
import dataclasses
import json
import statistics

from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
# benchmarks/timing.py: Python searches a script's own folder first.
import timing

_ROUNDS = flags.DEFINE_integer('rounds', 2, 'Timed full rounds (>= 1).')
_STEPS = flags.DEFINE_integer('steps', 30, 'Timed steps per batch size.')
_CLIENTS = flags.DEFINE_integer(
    'clients', 20, "The full round's clients: the first k (2 to 20) of "
    "Dist1's 20.")
_OUTPUT = flags.DEFINE_string('output_json', None,
                              'Also write the figures to this JSON file.')


def time_steps(tf, step, args, steps):
  """Median seconds of `step(*args)` over `steps` calls, after a warm-up."""
  return timing.time_in_turn(tf, {None: (step, args)}, steps)[None]


def rpca_profile(tf, rpca, matrix, figures) -> str:
  """Each solver's iterations and milliseconds per iteration, against an
  iteration's two parts timed alone in float64, 100 times in one graph
  loop: its two p x n x n matmuls (x^T x and x W: `rpca._gram`,
  `rpca._svt_weights`), and its element-wise passes over p x n (the inexact
  ALM's pass, `rpca._ialm_phase`, without them), as TF ops and fused by XLA
  (`jit_compile`). Adds them to `figures[method]`."""
  n = matrix.shape[1]
  w = tf.eye(n, dtype=tf.float64)

  def matmuls(x, e, unused, error):
    x = tf.matmul(x, tf.matmul(x, x, transpose_a=True) * 0.0 + w)
    return x, e, unused, error

  def passes(m, x, e, error):
    """`rpca._ialm_phase`'s element-wise passes, x standing for -L = -x W."""
    minus_low = x
    d = x + minus_low  # Y_k / mu_{k-1}
    new_e = 0.5 * d
    error = error + rpca._squared_norm(d - e)  # pylint: disable=protected-access
    shifted = tf.add_n([m, minus_low, new_e])
    clipped = rpca._clip(shifted, 0.005)  # pylint: disable=protected-access
    return m, clipped - minus_low, new_e, error

  def per_call_ms(part, jit=False):
    body = tf.function(part, jit_compile=True) if jit else part

    @tf.function(autograph=False)
    def hundred(*state):
      return tf.while_loop(lambda i, *state: i < 100,
                           lambda i, *state: (i + 1, *body(*state)),
                           (tf.constant(0), *state))[1:]
    state = (matrix, 0.9 * matrix, 0.05 * matrix,
             tf.constant(0.0, tf.float64))
    return 1e3 * time_steps(tf, hundred, state, 3) / 100

  parts = dict(matmuls=per_call_ms(matmuls), passes=per_call_ms(passes),
               passes_xla=per_call_ms(passes, jit=True))
  lines = []
  for method, row in figures.items():
    iterations = int(tf.function(autograph=False)(
        lambda m, method=method: rpca.principal_component_pursuit(
            m, method=method)[2])(matrix))
    row.update(iterations=iterations,
               ms_per_iteration=1e3 * row['seconds'] / iterations,
               float64_parts_ms=parts)
    lines.append(f"{method} {iterations} iterations of "
                 f"{row['ms_per_iteration']:.2f} ms")
  return ('RPCA profile: ' + ', '.join(lines) + '; alone, in float64: an '
          f"iteration's two matmuls {parts['matmuls']:.2f} ms, its "
          f"element-wise passes {parts['passes']:.2f} ms "
          f"({parts['passes_xla']:.2f} ms fused by XLA)")


def _check_flags():
  cli.check(_ROUNDS.value >= 1, f'--rounds must be >= 1, got {_ROUNDS.value}')
  cli.check(_STEPS.value >= 1, f'--steps must be >= 1, got {_STEPS.value}')
  cli.check(2 <= _CLIENTS.value <= 20,
            f'--clients must be in [2, 20], got {_CLIENTS.value}')


def _machine_peak(tf):
  """Prints the CPU, TensorFlow's threads and the matmul peak (item 1);
  returns the peak in FLOP/s."""
  from tff_hdp.robust_hdp import cohort
  # The driver's threads: one per lane on a CPU (run_robust_hdp.py).
  one_per_lane = cohort.one_thread_per_lane()
  intra = tf.config.threading.get_intra_op_parallelism_threads()
  print(f'cpu: {timing.cpu_name()}  cores: {os.cpu_count()}  '
        f'tensorflow intra-op threads: {intra or "default"}'
        f'{" (one per lane, as the driver)" if one_per_lane else ""}')
  peak = timing.peak(tf)
  print(f'matmul 2048^2 peak: {peak / 1e9:.1f} GFLOP/s '
        f'({timing.matmul_lanes(tf)} at once)')
  return peak


def _step_functions(tf, spec):
  """{'sgd', 'dp', 'vectorized_map'}: one step of each (item 2), traced."""
  from tff_hdp import models
  from tff_hdp import per_example
  from tff_hdp.robust_hdp import dp_sgd
  query = dp_sgd.gaussian_query(3.0, 1.0)
  state = query.initial_global_state()

  @tf.function
  def dp_step(w, x, y, key):
    g = dp_sgd.private_gradient(spec, w, x, y, query, state,
                                tf.cast(tf.shape(y)[0], tf.float32), key)
    return [v - 0.1 * d for v, d in zip(w, g)]

  @tf.function
  def vectorized_map_dp_step(w, x, y, key):
    """`dp_step` with the general per-example path in place of the factored
    one: `vectorized_map` of a `GradientTape` per example."""
    grads = per_example.vectorized_gradients(spec, w, x, y)
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

  return dict(sgd=sgd_step, dp=dp_step, vectorized_map=vectorized_map_dp_step)


def _time_batch(tf, fns, weights, b, rng, flops_per_example, peak):
  """The three steps on one batch of `b` random examples: their figures,
  printed as a row of item 2's table."""
  import numpy as np
  x = tf.constant(rng.random((b, 28, 28), np.float32))
  y = tf.constant(rng.integers(0, 10, b).astype(np.int32))
  key = tf.constant([1, 2], tf.int64)
  # The vectorized_map path warns once while it traces
  # ("Conv2DBackpropFilter uses a while_loop": a loop over the examples);
  # the warning is silenced for that call.
  level = tf.get_logger().level
  tf.get_logger().setLevel('ERROR')
  try:
    fns['vectorized_map'](weights, x, y, key)
  finally:
    tf.get_logger().setLevel(level)
  steps = dict(sgd=(fns['sgd'], (weights, x, y)),
               dp=(fns['dp'], (weights, x, y, key)),
               vectorized_map=(fns['vectorized_map'], (weights, x, y, key)))
  t = timing.time_in_turn(tf, steps, _STEPS.value)
  after = fns['dp'](weights, x, y, key)
  gap = max(float(np.max(np.abs(a - o))) for a, o in zip(
      after, fns['vectorized_map'](weights, x, y, key)))
  rate = lambda t: flops_per_example * b / t
  print(f"{b:5d}  {1e3 * t['sgd']:6.2f}  {1e3 * t['dp']:10.2f} "
        f"({t['dp'] / t['sgd']:.2f})  {1e3 * t['vectorized_map']:18.2f} "
        f"({t['vectorized_map'] / t['sgd']:.2f})  "
        f"{rate(t['sgd']) / 1e9:11.1f} ({rate(t['sgd']) / peak:.2f})  "
        f"{rate(t['dp']) / 1e9:14.1f} ({rate(t['dp']) / peak:.2f})")
  return dict(
      sgd_ms=1e3 * t['sgd'], dp_sgd_ms=1e3 * t['dp'],
      ratio=t['dp'] / t['sgd'],
      vectorized_map_ms=1e3 * t['vectorized_map'],
      vectorized_map_ratio=t['vectorized_map'] / t['sgd'],
      max_weight_difference=gap,
      sgd_gflops=rate(t['sgd']) / 1e9,
      dp_sgd_gflops=rate(t['dp']) / 1e9)


def time_dp_steps(tf, spec, rng, peak):
  """Item 2: {batch size: figures} of one DP-SGD step against SGD's."""
  fns = _step_functions(tf, spec)
  weights = [tf.constant(w) for w in spec.init(0)]
  flops_per_example = 3 * 2 * timing.forward_multiply_adds(spec)
  lanes = timing.matmul_lanes(tf)
  if lanes > 1:
    print(f'(the steps run with one intra-op thread: at most 1/{lanes} of '
          'the peak; independent ops of a step may run on another core)')
  print('\nbatch  sgd ms  dp-sgd ms (ratio)  vectorized_map ms (ratio)  '
        'sgd GFLOP/s (peak)  dp-sgd GFLOP/s (peak)')
  figures = {b: _time_batch(tf, fns, weights, b, rng, flops_per_example, peak)
             for b in (16, 32, 64, 128)}
  print('(vectorized_map: the general per-example path, '
        '`per_example.vectorized_gradients`, a GradientTape per example; '
        'its steps\' weights differ from dp-sgd\'s by at most '
        f"{max(v['max_weight_difference'] for v in figures.values()):.1e})")
  return figures


class FullRound:
  """Item 3: a round of the first `clients` of Dist1's 20 (2,400 random
  examples each), its clients in the driver's form and in the other, its
  server step by each RPCA solver."""

  def __init__(self, tf, spec, clients, rng):
    import numpy as np
    from tff_hdp.robust_hdp import cohort
    from tff_hdp.robust_hdp import config as config_lib
    from tff_hdp.robust_hdp import direct_backend as robust_direct_backend
    from tff_hdp.robust_hdp import dp_sgd
    from tff_hdp.robust_hdp import privacy_preferences
    from tff_hdp.robust_hdp import process
    self._tf = tf
    eps, batch_sizes = privacy_preferences.load_distribution('dist1', 20)
    self.config = config_lib.RobustHdpConfig(
        algorithm='robust_hdp', epsilons=tuple(eps[:clients]),
        batch_sizes=tuple(batch_sizes[:clients]), backend='direct')
    self.data = [(rng.random((2400, 28, 28), np.float32),
                  rng.integers(0, 10, 2400).astype(np.int32))
                 for _ in range(clients)]
    self.clients = process.client_privacy(self.config, [2400] * clients)
    settings = dp_sgd.DpSgdSettings()
    # One direct round per RPCA solver; the clients' rows come from the
    # first. (Robust-HDP's server is told no variances: `Rule.told`.)
    variances = process.true_variances(self.config, self.clients,
                                       spec.num_parameters)
    self.runners = {
        method: robust_direct_backend.DirectRound(
            spec, spec.init(0),
            process.build_aggregator(
                dataclasses.replace(self.config, rpca_method=method),
                self.clients, variances),
            settings=settings)
        for method in config_lib.RPCA_METHODS}
    self.info = [dict(index=np.int32(i), batch_size=np.int32(c.batch_size),
                      noise_multiplier=np.float32(c.noise_multiplier))
                 for i, c in enumerate(self.clients)]
    # The driver's form and the other CPU form, side by side.
    self.driver_form = cohort.default_form(spec)
    self.other_form = (cohort.IN_TURN if self.driver_form == cohort.IN_LANES
                       else cohort.IN_LANES)
    self._other = cohort.cohort_function(spec, settings, True,
                                         self.other_form)
    self._packed = cohort.pack_clients(self.data)

  def other_rows(self, state):
    """The round's rows in `other_form`, from the direct round's keys."""
    import numpy as np
    from tff_hdp.privacy import mechanism_key
    from tff_hdp.robust_hdp import process
    tf = self._tf
    key = process.round_key(tf.constant(mechanism_key.as_key(state['key'])),
                            tf.constant(int(state['round_num'])))
    keys = tf.stack([process.client_key(key, i['index']) for i in self.info])
    packed = self._packed
    return self._other(
        [tf.constant(w) for w in state['global_weights']], packed[0],
        packed[1], packed[2], np.array([i['batch_size'] for i in self.info]),
        np.array([i['noise_multiplier'] for i in self.info]), keys)

  def time(self, rounds):
    """`rounds` timed rounds after a warm-up: {form: [(wall, CPU)]} of the
    clients, {solver: [wall]} of the server, the largest gaps between the
    solvers' weights and between the forms' rows, the last rows."""
    import numpy as np
    from tff_hdp.privacy import mechanism_key
    from tff_hdp.robust_hdp import config as config_lib
    states = {method: r.initialize(mechanism_key.new_key(0))
              for method, r in self.runners.items()}
    client_times = collections.defaultdict(list)
    server_times = collections.defaultdict(list)
    weights_gap = rows_gap = 0.0
    first = config_lib.RPCA_METHODS[0]
    timed = dict(
        driver=lambda: self.runners[first].client_updates(
            states[first], self.data, self.info),
        other=lambda: self.other_rows(states[first]))
    for r in range(rounds + 1):  # Round 0 is the warm-up.
      clocks, form_rows = {}, {}
      for name in (('driver', 'other') if r % 2 else ('other', 'driver')):
        with timing.Clock() as clocks[name]:
          form_rows[name] = timed[name]()
          form_rows[name].numpy()
      rows = form_rows['driver']
      rows_gap = max(rows_gap, float(np.max(np.abs(
          rows.numpy() - form_rows['other'].numpy()))))
      round_weights = {}
      for method, runner in self.runners.items():
        with timing.Clock() as s:
          states[method], measurements = runner.server_update(states[method],
                                                              rows)
        round_weights[method] = np.asarray(measurements['weights'])
        if r:
          server_times[method].append(s.wall)
      if r:
        for name, c in clocks.items():
          client_times[name].append((c.wall, c.cpu))
      weights_gap = max(weights_gap, float(np.max(np.abs(
          round_weights['admm'] - round_weights['ialm']))))
    return client_times, server_times, weights_gap, rows_gap, rows

  def figures(self, times, flops_per_example, peak):
    """The round's figures (`figures['round']`) from `time`'s output."""
    client_times, server_times, weights_gap, rows_gap, _ = times
    steps = sum(-(-2400 // c.batch_size) for c in self.clients)
    round_flops = flops_per_example * sum(
        -(-2400 // c.batch_size) * c.batch_size for c in self.clients)
    server_s = {m: statistics.median(t) for m, t in server_times.items()}
    timed_clients = {}
    for name, label in (
        ('driver', f'as the driver trains them ({self.driver_form})'),
        ('other', f'{self.other_form}')):
      wall = statistics.median(w for w, _ in client_times[name])
      per_round = wall + server_s[self.config.rpca_method]
      timed_clients[name] = dict(
          form=self.driver_form if name == 'driver' else self.other_form,
          client_seconds=wall,
          client_cpu_seconds=statistics.median(
              c for _, c in client_times[name]),
          client_gflops=round_flops / wall / 1e9,
          fraction_of_peak=round_flops / wall / peak,
          seconds_per_round=per_round,
          run_minutes_200_rounds=200 * per_round / 60,
          run_minutes_200_rounds_by_solver={
              m: 200 * (wall + t) / 60 for m, t in server_s.items()},
          label=label)
    return dict(clients=timed_clients, server_seconds=server_s,
                rpca_weights_max_difference=weights_gap,
                rows_max_difference=rows_gap,
                dp_sgd_steps=steps, round_gflop=round_flops / 1e9)


def print_round(figures, k):
  """Item 3's lines, from `FullRound.figures` of `k` clients."""
  server_s = figures['server_seconds']
  print(f"\nfull round ({k} x 2,400, Dist1, {figures['dp_sgd_steps']} "
        f"DP-SGD steps, {figures['round_gflop']:.0f} GFLOP): server (RPCA) "
        + ', '.join(f'{m} {t:.2f} s' for m, t in server_s.items()) +
        ' (weights differ by at most '
        f"{figures['rpca_weights_max_difference']:.1e}); the clients' "
        'rows of the two forms differ by at most '
        f"{figures['rows_max_difference']:.1e}")
  for row in figures['clients'].values():
    print(f"clients, {row['label']}: {row['client_seconds']:.1f} s "
          f"(cpu {row['client_cpu_seconds']:.1f} s, "
          f"{row['client_gflops']:.1f} GFLOP/s, "
          f"{row['fraction_of_peak']:.2f} of peak); 200 rounds: " +
          ', '.join(f'{minutes:.0f} min with {m}' for m, minutes in
                    row['run_minutes_200_rounds_by_solver'].items()))
  if k < 20:
    print(f'(--clients={k}: a part of the round; the 200-round figures are '
          'for these clients only)')


def time_rpca(tf, rows):
  """Item 4: {solver: figures} of RPCA's noise estimate on the round's
  `rows`, printed; the first of `config_lib.RPCA_METHODS` is the reference
  of the others' sigma^2. Then its profile (`rpca_profile`)."""
  import numpy as np
  from tff_hdp.robust_hdp import config as config_lib
  from tff_hdp.robust_hdp import rpca
  matrix = tf.transpose(tf.cast(rows, tf.float64))
  figures = {}
  reference, variances = config_lib.RPCA_METHODS[0], {}
  for method in config_lib.RPCA_METHODS:
    solve = tf.function(autograph=False)(
        lambda m, method=method: rpca.noise_variances(m, method=method))
    variances[method] = solve(matrix).numpy()
    row = dict(seconds=time_steps(tf, solve, (matrix,), 3))
    compared = ''
    if method != reference:
      row['max_relative_difference'] = float(np.max(np.abs(
          variances[method] / variances[reference] - 1)))
      share = row['seconds'] / figures[reference]['seconds']
      compared = (f" ({share:.2f} of {reference}'s time; sigma^2 differs "
                  f"from {reference}'s by at most "
                  f"{row['max_relative_difference']:.1e} relative)")
    figures[method] = row
    print(f'RPCA {method} on the {matrix.shape[0]} x {matrix.shape[1]} '
          f"updates: {row['seconds']:.3f} s{compared}")
  print(rpca_profile(tf, rpca, matrix, figures))
  return figures


def print_summary(figures):
  """One machine-readable line of the ratios issues 41 and 51 set goals
  for."""
  timed_clients = figures['round']['clients']
  driver, second = timed_clients['driver'], timed_clients['other']
  print(f"dp_sgd_over_sgd={figures['steps'][64]['ratio']:.2f} "
        f"rpca_ialm_seconds={figures['rpca']['ialm']['seconds']:.3f} "
        f"clients_fraction_of_peak={driver['fraction_of_peak']:.2f} "
        f"{second['form']}_clients_fraction_of_peak="
        f"{second['fraction_of_peak']:.2f} "
        f"seconds_per_round={driver['seconds_per_round']:.1f} "
        f"run_minutes_200_rounds={driver['run_minutes_200_rounds']:.0f}")


def main(argv):
  cli.check_no_arguments(argv)
  _check_flags()
  import numpy as np
  import tensorflow as tf
  from tff_hdp import models
  # Retires TFF's default context, whose idle executor factory, collected
  # at interpreter exit, prints a traceback (tff_hdp/runtime.py).
  from tff_hdp import runtime  # pylint: disable=unused-import

  peak = _machine_peak(tf)
  spec = models.cnn5_model((28, 28), 10)
  rng = np.random.default_rng(0)
  figures = collections.OrderedDict(peak_gflops=peak / 1e9, steps={})
  figures['steps'] = time_dp_steps(tf, spec, rng, peak)
  full_round = FullRound(tf, spec, _CLIENTS.value, rng)
  times = full_round.time(_ROUNDS.value)
  figures['round'] = full_round.figures(
      times, 3 * 2 * timing.forward_multiply_adds(spec), peak)
  print_round(figures['round'], _CLIENTS.value)
  figures['rpca'] = time_rpca(tf, times[-1])
  if _OUTPUT.value:
    with open(_OUTPUT.value, 'w') as f:
      json.dump(figures, f, indent=1)
  print_summary(figures)


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
