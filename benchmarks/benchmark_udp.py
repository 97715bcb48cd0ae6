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
"""Times UDP-Alg's round at paper 004's scale, against the same-run peak.

    python benchmarks/benchmark_udp.py                  # CIFAR-10 and FEMNIST
    python benchmarks/benchmark_udp.py --settings=cifar10 --rounds=2

In one process, on synthetic data of the real shapes (values do not change
the work):

1. The float32 matmul peak: the best rate of a 2048 x 2048 `tf.matmul`.
2. For each setting, rounds of the direct round's step
   (`direct_backend.RoundStep`, one tf.function) with exactly qN users
   (CIFAR-10: 100 users, q = 0.1, 500
   examples each, LeNet on 32 x 32 x 3; FEMNIST: 3,400 users, q = 0.05, 200
   examples each, LeNet on 28 x 28 with 62 classes), K = 50 local steps of
   batch 64: seconds per round (the first, with tracing, apart) and the
   achieved GFLOP/s from the FLOP count below against the peak (the local
   training's share is item 4's).
3. Memory: the hypernetwork phi and the embedding table, in float32.
4. A profile of one local step of the cohort: as the round takes it
   (`hypernetfl.local_deltas`, each user's own LeNet under
   `vectorized_map`, whose convolutions TF runs user by user), against one
   LeNet shared by all the users on the same cohort x b examples, a plain
   batched TF step of the same FLOPs: what the step would cost if the
   users' weights were free, the floor of any batching of their
   convolutions. The two are timed in turn; the K steps alone are set
   beside the round (timed one call at a time, so they can exceed it by
   the calls' overhead).

FLOPs per round: the local training, users x K x b x 3 x 2 x LeNet's forward
multiply-adds (`lenet_multiply_adds`; 3x for forward plus backward), plus
the hypernetwork, users x 3 x 2 x its multiply-adds per generated model
(generation, and the VJP's two products). Clipping, noise and the update are
not counted. Run it on a quiet machine: shared cores make every figure
slower.
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

# name: (users, q, examples per user, input shape, classes)
SETTINGS = {
    'cifar10': (100, 0.1, 500, (32, 32, 3), 10),
    'femnist': (3400, 0.05, 200, (28, 28), 62),
}

_SETTINGS = flags.DEFINE_list('settings', ['cifar10', 'femnist'],
                              f'Any of {", ".join(SETTINGS)}.')
_ROUNDS = flags.DEFINE_integer('rounds', 2,
                               'Timed rounds per setting, after the first.')


def lenet_multiply_adds(spec) -> int:
  """Multiply-adds of one example's forward pass through LeNet."""
  h, w = spec.input_shape[:2]
  (k, _, cin, c1), _, (_, _, _, c2), _, (flat, d1), _, (_, d2), _, (
      _, classes), _ = spec.shapes
  h1, w1 = h - k + 1, w - k + 1
  h2, w2 = h1 // 2 - k + 1, w1 // 2 - k + 1
  return (h1 * w1 * c1 * k * k * cin + h2 * w2 * c2 * k * k * c1 +
          flat * d1 + d1 * d2 + d2 * classes)


def local_step_profile(tf, target, cohort, batch, rng, repeats=10):
  """(per-user ms, shared-LeNet ms) of one local step of `cohort` users
  with `batch` examples each (item 4 of the module doc)."""
  from tff_hdp import models  # pylint: disable=g-import-not-at-top
  from tff_hdp.udp import hypernetfl  # pylint: disable=g-import-not-at-top
  shape, classes = target.input_shape, target.num_classes
  init = target.init(0)
  thetas = [tf.constant(np.repeat(w[np.newaxis], cohort, 0)) for w in init]
  x = tf.constant(rng.random((cohort, batch) + tuple(shape), np.float32))
  y = tf.constant(rng.integers(0, classes, (cohort, batch)).astype(np.int32))
  indices = tf.constant(np.tile(np.arange(batch, dtype=np.int32),
                                (1, cohort, 1)))
  mask = tf.ones([1, cohort, batch])
  per_user = tf.function(lambda t: hypernetfl.local_deltas(
      target, t, x, y, indices, mask, tf.constant(0.01)))

  @tf.function
  def shared(w):
    with tf.GradientTape() as tape:
      tape.watch(w)
      loss = models.loss_fn(target.apply(w, tf.reshape(
          x, [-1] + list(shape))), tf.reshape(y, [-1]))
    return [v - 0.01 * g for v, g in zip(w, tape.gradient(loss, w))]

  steps = {'per_user': (per_user, (thetas,)),
           'shared': (shared, ([tf.constant(w) for w in init],))}
  times = timing.time_in_turn(tf, steps, repeats)
  return 1e3 * times['per_user'], 1e3 * times['shared']


def time_setting(tf, name, peak):
  """Items 2 to 4 of the module doc for setting `name`, printed."""
  from tff_hdp import models
  from tff_hdp.data import federated_data
  from tff_hdp.udp import config as config_lib
  from tff_hdp.udp import direct_backend
  from tff_hdp.udp import hypernetwork
  from tff_hdp.udp import training
  num_users, q, size, shape, classes = SETTINGS[name]
  cohort = int(round(q * num_users))
  target = models.lenet_model(shape, classes)
  net = hypernetwork.HyperNetwork(
      target, hypernetwork.default_embedding_dim(num_users))
  rng = np.random.default_rng(0)
  users = [(rng.random((size,) + shape, dtype=np.float32),
            rng.integers(0, classes, size).astype(np.int32))
           for _ in range(cohort)]
  data = federated_data.FederatedData(name=name, input_shape=shape,
                                      num_classes=classes, train=users,
                                      test=users, server_test=users[0])
  config = config_lib.UdpConfig(sampling_rate=q)
  round_fn = direct_backend.RoundStep(
      net, training.round_constants(config, 1.0, q * num_users),
      config.batch_size).round_fn
  phi = [tf.constant(p) for p in net.init(0)]
  embeddings = net.init_embeddings(cohort, 0)
  weights = np.ones(cohort, np.float32)
  chosen = np.arange(cohort)
  batches = training.local_batches(data, chosen, config.local_steps,
                                   config.batch_size, rng)
  key = np.array([0, 1], np.int64)
  with timing.Clock() as first:
    round_fn(phi, embeddings, *batches, weights, key).phi[0].numpy()
  seconds = []
  for _ in range(_ROUNDS.value):
    with timing.Clock() as c:
      round_fn(phi, embeddings, *batches, weights, key).phi[0].numpy()
    seconds.append(c.wall)
  per_round = float(np.median(seconds))
  local = (cohort * config.local_steps * config.batch_size * 3 * 2 *
           lenet_multiply_adds(target))
  # One multiply-add per hypernetwork weight and generated model.
  hyper = cohort * 3 * 2 * net.num_parameters
  flops = local + hyper
  phi_mb = 4 * net.num_parameters / 2**20
  table_mb = 4 * num_users * net.embedding_dim / 2**20
  print(f'{name}: users={num_users} q={q} cohort={cohort} '
        f'lenet_parameters={target.num_parameters} '
        f'hypernetwork_parameters={net.num_parameters} '
        f'first_round_seconds={first.wall:.1f} '
        f'seconds_per_round={per_round:.2f} '
        f'gflop_per_round={flops / 1e9:.1f} '
        f'achieved_gflops={flops / per_round / 1e9:.1f} '
        f'peak_fraction={flops / per_round / peak:.3f} '
        f'phi_mib={phi_mb:.1f} embedding_table_mib={table_mb:.3f} '
        f'run_minutes_500_rounds={500 * per_round / 60:.0f}', flush=True)
  per_user_ms, shared_ms = local_step_profile(tf, target, cohort,
                                              config.batch_size, rng)
  step_flops = (cohort * config.batch_size * 3 * 2 *
                lenet_multiply_adds(target))
  of_peak = lambda ms: step_flops / (ms / 1e3) / peak
  print(f'{name} local step of the {cohort} users: '
        f'per_user_ms={per_user_ms:.1f} ({of_peak(per_user_ms):.2f} of '
        f'peak), one_shared_lenet_ms={shared_ms:.1f} '
        f'({of_peak(shared_ms):.2f} of peak); its {config.local_steps} '
        f'steps alone: {config.local_steps * per_user_ms / 1e3:.2f} s of '
        f'the {per_round:.2f} s round', flush=True)


def main(argv):
  if len(argv) > 1:
    raise cli.UsageError(f'unexpected arguments: {" ".join(argv[1:])}')
  for name in _SETTINGS.value:
    cli.check(name in SETTINGS, f'unknown setting {name!r} for --settings; '
              f'allowed: {", ".join(SETTINGS)}')
  cli.check(_ROUNDS.value >= 1, f'--rounds must be >= 1, got {_ROUNDS.value}')
  import tensorflow as tf
  # Retires TFF's default context, whose idle executor factory, collected
  # at interpreter exit, prints a traceback (tff_hdp/runtime.py).
  from tff_hdp import runtime  # pylint: disable=unused-import

  peak = timing.peak(tf)
  print(f'cpu: {timing.cpu_name()}')
  print(f'matmul_peak_gflops={peak / 1e9:.1f}', flush=True)
  for name in _SETTINGS.value:
    time_setting(tf, name, peak)


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
