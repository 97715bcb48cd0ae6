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
"""Where one local step of FedHDP's CNN goes, batched and client by client.

    python benchmarks/profile_fedhdp.py --clients=28

One SGD step of `--clients` FEMNIST clients (the CNN of paper 001, Table 6:
28x28 inputs, 62 classes; batch 20; dropout on), timed in one run against a
2048x2048 float32 matmul:

- `batched, grouped` / `batched, im2col`: the direct backend's step
  (`fedhdp.batched_models`) with each form of its convolutions, and the
  parts of the grouped one timed alone (forward and gradient): the first
  convolution, the second, both conv+pool layers, the dropout masks;
- `client by client`: `models.cnn_model`'s own step for one client at a
  time, one call per client from Python, summed over the clients. TFF's
  runtime does better than this loop: it runs each client's whole local
  training as one graph and several clients at once (time_presets_fedhdp.py
  measures it).

FLOPs are 6 x forward multiply-adds per example (`timing.training_flops`);
a part's rate counts its own multiply-adds. Medians of `--repeats` calls.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
import statistics
import time
from typing import NamedTuple

from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
# benchmarks/timing.py: Python searches a script's own folder first.
import timing

_CLIENTS = flags.DEFINE_integer('clients', 28, 'Clients in the batched step '
                                '(the FEMNIST preset trains 28 at a time).')
_REPEATS = flags.DEFINE_integer('repeats', 7, 'Timed calls per case (>= 1).')

BATCH = 20


class _Inputs(NamedTuple):
  """One batch of every client: their weights (stacked, each a little
  apart), inputs, labels, dropout seeds and mask, and a hidden layer's
  input for the second convolution alone."""
  weights: list
  x: object
  y: object
  seeds: object
  mask: object
  hidden: object


def _inputs(tf, spec, k):
  """The `_Inputs` of `k` clients of `spec`, from fixed seeds."""
  import numpy as np
  return _Inputs(
      weights=[tf.constant(np.stack([w * (1 + 0.01 * i) for i in range(k)]))
               for w in spec.init(0)],
      x=tf.random.stateless_uniform([k, BATCH, 28, 28], seed=[1, 2]),
      y=tf.random.stateless_uniform([k, BATCH], seed=[1, 3], maxval=62,
                                    dtype=tf.int32),
      seeds=tf.random.stateless_uniform([k, 2], seed=[1, 4], maxval=2**30,
                                        dtype=tf.int32),
      mask=tf.ones([k, BATCH]),
      hidden=tf.random.stateless_uniform([k, BATCH, 14, 14, 16],
                                         seed=[1, 5]))


def _sgd_step(tf, loss_of):
  """A traced step: w - 0.01 grad of loss_of(weights) for every tensor."""

  @tf.function(autograph=False)
  def step(w):
    with tf.GradientTape() as tape:
      tape.watch(w)
      loss = loss_of(w)
    grads = tape.gradient(loss, w)
    return [v if g is None else v - 0.01 * g for v, g in zip(w, grads)]

  return step


def _layer_cases(tf, inputs):
  """The batched CNN's own layers, timed alone: [(name, fn, macs)]."""
  from tff_hdp.fedhdp import batched_models as bm
  x, weights = inputs.x, inputs.weights
  # pylint: disable=protected-access
  to_channels, grouped_layers = bm._clients_to_channels, bm._grouped_conv_layers
  # pylint: enable=protected-access

  def first_conv(w):
    z = bm.grouped_conv2d(to_channels(x[..., None]), w[0])
    return tf.reduce_sum(tf.square(z))

  def second_conv(w):
    scaled = inputs.hidden * w[1][:, None, None, None, :]  # Needs its gradient.
    z = bm.grouped_conv2d(to_channels(scaled), w[2])
    return tf.reduce_sum(tf.square(z))

  def conv_layers(w):
    return tf.reduce_sum(tf.square(grouped_layers(x[..., None], *w[:4])))

  masks = tf.function(lambda s: tf.map_fn(
      lambda seed: bm.cnn_dropout_masks(seed, BATCH, (7, 7, 32), 128), s,
      fn_output_signature=(tf.float32, tf.float32)))
  conv1_macs = 28 * 28 * 9 * 16
  conv2_macs = 14 * 14 * 9 * 16 * 32
  return [('  first convolution (grouped)',
           lambda f=_sgd_step(tf, first_conv): f(weights), conv1_macs),
          ('  second convolution (grouped)',
           lambda f=_sgd_step(tf, second_conv): f(weights), conv2_macs),
          ('  both conv+pool layers (grouped)',
           lambda f=_sgd_step(tf, conv_layers): f(weights),
           conv1_macs + conv2_macs),
          ('  dropout masks', lambda: masks(inputs.seeds), 0)]


def _client_by_client(tf, spec, k, inputs):
  """One step of each client in turn, a Python loop over a traced step."""
  from tff_hdp import models

  @tf.function(autograph=False)
  def one_client(w, cx, cy, seed):
    with tf.GradientTape() as tape:
      tape.watch(w)
      loss = models.loss_fn(spec.apply(w, cx, True, seed), cy)
    return [v - 0.01 * g for v, g in zip(w, tape.gradient(loss, w))]

  def run():
    out = None
    for i in range(k):
      out = one_client([w[i] for w in inputs.weights], inputs.x[i],
                       inputs.y[i], inputs.seeds[i])
    return out

  return run


def _cases(tf, spec, k, inputs):
  """[(name, fn, forward multiply-adds per example)] of the table."""
  from tff_hdp.fedhdp import batched_models as bm

  def batched(conv):
    forward = bm.batched_model(spec, conv).forward
    return _sgd_step(tf, lambda w: tf.reduce_sum(bm.masked_loss(
        forward(w, inputs.x, inputs.seeds), inputs.y, inputs.mask)))

  all_macs = timing.forward_multiply_adds(spec)
  return ([('batched, grouped',
            lambda f=batched('grouped'): f(inputs.weights), all_macs),
           ('batched, im2col',
            lambda f=batched('im2col'): f(inputs.weights), all_macs)] +
          _layer_cases(tf, inputs) +
          [('client by client (a Python loop)',
            _client_by_client(tf, spec, k, inputs), all_macs)])


def _seconds(tf, fn, repeats):
  """Median wall seconds of `fn()` over `repeats` calls, after one."""
  tf.nest.map_structure(lambda t: t.numpy(), fn())  # Traces.
  times = []
  for _ in range(repeats):
    with timing.Clock() as clock:
      tf.nest.map_structure(lambda t: t.numpy(), fn())
    times.append(clock.wall)
  return statistics.median(times)


def main(argv):
  if len(argv) > 1:
    raise cli.UsageError(f'unexpected arguments: {" ".join(argv[1:])}')
  cli.check(_CLIENTS.value >= 1,
            f'--clients must be >= 1, got {_CLIENTS.value}')
  cli.check(_REPEATS.value >= 1,
            f'--repeats must be >= 1, got {_REPEATS.value}')
  import tensorflow as tf
  from tff_hdp import models
  from tff_hdp.fedhdp import batched_models as bm

  k = _CLIENTS.value
  spec = models.cnn_model((28, 28), 62)
  cases = _cases(tf, spec, k, _inputs(tf, spec, k))
  peak = timing.peak(tf)
  print(f'# {timing.cpu_name()}, {os.cpu_count()} cores; {k} clients x batch '
        f'{BATCH}; grouped convolutions have a gradient here: '
        f'{bm.grouped_conv_has_gradient()}')
  print('| part of the step | ms | GFLOP/s | of peak |')
  print('|---|---|---|---|')
  started = time.perf_counter()
  for name, fn, macs in cases:
    if 'grouped' in name and not bm.grouped_conv_has_gradient():
      continue
    t = _seconds(tf, fn, _REPEATS.value)
    rate = 6.0 * macs * k * BATCH / t
    print(f'| {name} | {1e3 * t:.1f} | '
          + (f'{rate / 1e9:.1f} | {rate / peak:.2f} |' if macs else '- | - |'),
          flush=True)
  print(f'# matmul peak (2048x2048 float32, timed first): '
        f'{peak / 1e9:.1f} GFLOP/s; {time.perf_counter() - started:.0f} s')

if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
