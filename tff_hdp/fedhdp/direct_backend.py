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
"""FedHDP's round in plain TensorFlow (`round_executor.DIRECT`), without
TFF's runtime, the whole cohort as stacked tensors.

Same interface and the same round as `tff_backend.TffRound` (paper 001,
Algorithm 2; see `tff_backend` for the interface), executed differently (as
Robust-HDP's and UDP-Alg's 'direct' backends are beside their 'tff'): the
K sampled clients' models are stacked on a leading axis and every local step
of every client is one batched step (`batched_models`: one batched matmul or
one grouped convolution per layer for the cohort), inside one `tf.function`
per round; when TensorFlow sees a GPU, the same code runs there.

Client work (Algorithm 2's ClientUpdate, as `client_update`), for E epochs
over batches of `batch_size` in the order the driver gave:

    theta_k   <- theta_k   - eta   grad f_k(theta_k; B)
    theta_k,p <- theta_k,p - eta_p (grad f_k(theta_k,p; B)
                                    + lambda_k (theta_k,p - theta^t))

Aggregation is the aggregator's own maths (`group_aggregation`, TF Privacy's
queries), applied as `hdp_factory.HeterogeneousDPFactory` applies it, with
stateless draws from the SAME keys (`stateless_split(noise_key, l + 2)`:
group i's noise from key i, the clip count's from key l, the next state's
key is key l + 1). From the same state and inputs both backends give the
same global model, clip norm, personal models and measurements up to
float32 round-off (tests/fedhdp/test_direct_backend.py checks 1e-5 after
several rounds). How unequal clients, dropout, memory and tracing are
handled, and what it saves against TFF's runtime: docs/performance.md,
"How the direct backend runs a cohort" and "Speed".
"""

import collections
import functools
import os
import time
from typing import NamedTuple, Optional, Sequence

import numpy as np
import tensorflow as tf

from tff_hdp.fedhdp import batched_models
from tff_hdp.fedhdp import group_aggregation
from tff_hdp.fedhdp import hdp_factory
from tff_hdp import models
from tff_hdp import round_executor
from tff_hdp.fedhdp import tff_backend
from tff_hdp.privacy import mechanism_key


def _validate(spec, initial_weights, factory, settings):
  """`ClientSettings.validate`, plus lambdas per group and shapes."""
  settings.validate()
  if len(settings.ditto_lambdas) != len(factory.groups):
    raise ValueError(f'ditto_lambdas must give one lambda per privacy group '
                     f'({len(factory.groups)}), got '
                     f'{len(settings.ditto_lambdas)}')
  shapes = [tuple(np.shape(w)) for w in initial_weights]
  if shapes != [tuple(s) for s in spec.shapes]:
    raise ValueError(f'initial_weights must have the shapes {spec.shapes} of '
                     f'model {spec.name!r}, got {shapes}')


def _phases(total_steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """(active clients, end step) of each phase, for clients sorted by steps.

  With `total_steps` sorted descending, the clients still training at step t
  are the first n(t) = #{k: total_k > t}; n is constant on each phase
  [end_{p-1}, end_p).
  """
  ends = np.unique(total_steps[total_steps > 0])
  counts = np.array([(total_steps >= e).sum() for e in ends], np.int32)
  return counts, ends.astype(np.int32)


def _computed_rows(rows: np.ndarray, steps: np.ndarray,
                   phase_clients: np.ndarray, phase_end: np.ndarray) -> int:
  """Example rows the batched steps of `client_work` run, summed.

  Step t runs the n(t) active clients' batches at the width of the widest:
  the batch size, or less when all of them are short.
  """
  t = np.arange(int(phase_end.max(initial=0)))
  active = np.repeat(phase_clients, np.diff(phase_end, prepend=0))
  batch_index = t[:, None] % np.maximum(steps, 1)[None, :]
  real = rows[batch_index, np.arange(len(steps))[None, :]]
  real = np.where(np.arange(len(steps))[None, :] < active[:, None], real, 0)
  return int(np.sum(active * real.max(axis=1, initial=0)))


def _rows(structure, start, stop):
  """Rows [start, stop) of every tensor of a nested structure (views)."""
  return tf.nest.map_structure(lambda v: v[start:stop], structure)


def _broadcast_rows(values: tf.Tensor, rank: int) -> tf.Tensor:
  """[K] -> [K, 1, ..., 1] broadcastable against a rank-`rank` tensor."""
  return tf.reshape(values, tf.concat([tf.shape(values),
                                       tf.ones([rank - 1], tf.int32)], 0))


def personal_update(personal, steps, global_weights, pull):
  """Ditto's step of every client's personal model, given its loss step:

      theta_k,p - (steps_k + pull_k (theta_k,p - theta^t))

  with `steps` = eta_p grad f_k(theta_k,p; B) and `pull` = eta_p lambda_k
  ([K]). As TensorFlow ops, four passes over each stacked tensor.
  """
  return tuple(
      q - (d + _broadcast_rows(pull, q.shape.rank) * (q - w0))
      for q, d, w0 in zip(personal, steps, global_weights))


# `personal_update` compiled by XLA, which fuses its four elementwise ops into
# one pass: the step is bound by memory traffic over the stacked weights
# (docs/performance.md, "How the direct backend runs a cohort"). The same
# numbers up to float32 round-off (XLA may contract a multiply-add into one
# FMA). XLA compiles once per shape of the part's weights; it runs on a GPU
# as well.
fused_personal_update = tf.function(personal_update, jit_compile=True,
                                    autograph=False)


class PackedCohort(NamedTuple):
  """The sorted cohort (or a part of it) as the traced client work takes
  it."""
  x: np.ndarray  # [S_max, K, B, ...] step-major data (`pack_cohort`).
  y: np.ndarray  # [S_max, K, B] labels.
  rows: np.ndarray  # [S_max, K] real examples of each batch.
  steps: np.ndarray  # [K] batches per epoch.
  phase_clients: np.ndarray  # Per phase, its active clients (`_phases`).
  phase_end: np.ndarray  # Per phase, its end step.
  lambdas: np.ndarray  # [K] lambda_k of each client's group.
  client_ids: np.ndarray  # [K] (the dropout seeds').


def _cohort_signature(spec: models.ModelSpec, batch: int) -> PackedCohort:
  vector = tf.TensorSpec((None,), tf.int32)
  return PackedCohort(
      x=tf.TensorSpec((None, None, batch) + spec.input_shape, tf.float32),
      y=tf.TensorSpec((None, None, batch), tf.int32),
      rows=tf.TensorSpec((None, None), tf.int32),
      steps=vector, phase_clients=vector, phase_end=vector,
      lambdas=tf.TensorSpec((None,), tf.float32), client_ids=vector)


class _Traced(NamedTuple):
  """What one traced `client_work` is built for (Python values,
  `_client_work_fn`'s arguments)."""
  model: batched_models.BatchedModel
  batch: int  # B.
  ditto: bool  # Whether Ditto's personal step runs.
  num_parts: int  # Independent parts of the cohort that step side by side.


class _LocalSteps:
  """Algorithm 2's ClientUpdate for a sorted cohort, as graph-building
  methods called inside `client_work`'s `tf.function` (one per trace)."""

  def __init__(self, traced: _Traced, cohort: PackedCohort, global_weights,
               round_num, rates, ints):
    self.model, self.batch, self.ditto, self.num_parts = traced
    self.cohort = cohort
    self.global_weights = tuple(global_weights)
    # `process`'s server message: decayed rates and the dropout key.
    decay = tf.pow(rates[2], tf.cast(round_num // ints[0], tf.float32))
    self.learning_rate = rates[0] * decay
    self.personal_learning_rate = rates[1] * decay
    self.num_clients = tf.shape(cohort.x)[1]
    if self.model.uses_seeds:
      key = tf.stack([ints[1], round_num])
      self.client_seeds = batched_models.fold_in_rows(key, cohort.client_ids)
    else:
      self.client_seeds = tf.zeros([self.num_clients, 2], tf.int32)

  def run(self, personal):
    """(theta_k, theta_k,p) of every client after its E epochs."""
    weights = tuple(
        tf.tile(w[tf.newaxis], [self.num_clients] + [1] * w.shape.rank)
        for w in self.global_weights)
    personal = tuple(personal)
    # x is [S_max, K, B, ...]: batch b of all clients is one contiguous block
    # (equal-sized clients, e.g. non-IID MNIST, read it without a copy);
    # otherwise client k's batch b is row b * K + k of [S_max * K, B, ...].
    x_rows = tf.reshape(self.cohort.x,
                        tf.concat([[-1], tf.shape(self.cohort.x)[2:]], 0))
    if self.model.prepare is not None:
      x_rows = self.model.prepare(x_rows)
    y_rows = tf.reshape(self.cohort.y, [-1, self.batch])
    real_rows = tf.reshape(self.cohort.rows, [-1])
    self.data = (x_rows, y_rows, real_rows)
    _, _, weights, personal = tf.while_loop(
        lambda p, *_: p < tf.size(self.cohort.phase_clients), self.phase,
        (tf.constant(0), tf.constant(0), weights, personal))
    return weights, personal

  def scaled_gradients(self, weights, x, y, mask, seeds, scale):
    """Per client, `scale` x the gradient of its batch's mean loss.

    Scaling the loss (a scalar) instead of the gradient (as large as the
    model) saves one pass over the stacked weights per step; it changes the
    result only by float32 round-off.
    """
    with tf.GradientTape() as tape:
      tape.watch(weights)
      losses = batched_models.masked_loss(
          self.model.forward(list(weights), x, seeds), y, mask)
      total = tf.reduce_sum(losses) * scale  # Client k's gradient is its own.
    return tape.gradient(total, weights)

  def batches(self, t, n):
    """Step t's batches of the first n clients: (x, y, real rows)."""
    b = tf.math.floormod(t, self.cohort.steps[:n])  # Same order every epoch.
    k = self.num_clients

    def same_batch():  # Rows [b K, b K + n): a view, no copy.
      return _rows(self.data, b[0] * k, b[0] * k + n)

    def own_batches():
      index = b * k + tf.range(n)
      return tf.nest.map_structure(lambda v: tf.gather(v, index), self.data)

    return tf.cond(tf.reduce_all(tf.equal(b, b[0])), same_batch, own_batches)

  def part_step(self, live, live_personal, xb, yb, mask, seeds, lambdas):
    """One local step of a part of the cohort."""
    steps_taken = self.scaled_gradients(live, xb, yb, mask, seeds,
                                        self.learning_rate)
    new_live = tuple(w - d for w, d in zip(live, steps_taken))
    if self.ditto:
      personal_seeds = (batched_models.fold_in_each(seeds, 7)
                        if self.model.uses_seeds else None)
      personal_steps = self.scaled_gradients(live_personal, xb, yb, mask,
                                             personal_seeds,
                                             self.personal_learning_rate)
      pull = self.personal_learning_rate * lambdas  # eta_p lambda_k.
      live_personal = fused_personal_update(
          tuple(live_personal), tuple(personal_steps), self.global_weights,
          pull)
    return new_live, live_personal

  def local_step(self, t, parts, bounds):
    """Step t of the first n = bounds[-1] clients, all still training.

    The n clients are split into independent parts [bounds[i],
    bounds[i+1]), which TensorFlow runs concurrently (one per core).
    """
    n = bounds[-1]
    xb, yb, rb = self.batches(t, n)
    # When every client's batch is short (the last of an epoch: at once
    # for equal-sized clients), only its real rows run. The dropped rows
    # are padding, masked out of the loss; a kept row's results, dropout
    # masks included, do not depend on the batch's width.
    width = tf.reduce_max(rb)
    xb, yb = tf.cond(
        width < self.batch,
        lambda: (self.model.take_examples(xb, width), yb[:, :width]),
        lambda: (xb, yb))
    mask = tf.sequence_mask(rb, width, tf.float32)
    seeds = (batched_models.fold_in_each(self.client_seeds[:n], t)
             if self.model.uses_seeds else None)
    new_parts = []
    for i, (live, live_personal) in enumerate(parts):
      lo, hi = bounds[i], bounds[i + 1]
      step = functools.partial(
          self.part_step, live, live_personal, _rows(xb, lo, hi), yb[lo:hi],
          mask[lo:hi], None if seeds is None else seeds[lo:hi],
          self.cohort.lambdas[lo:hi])
      # A part is empty when fewer clients than parts are left.
      new_parts.append(tf.cond(hi > lo, step,
                               lambda p=(live, live_personal): p))
    return t + 1, tuple(new_parts)

  def phase(self, p, start, weights, personal):
    """Steps [start, phase_end[p]) of the phase's active prefix."""
    n = self.cohort.phase_clients[p]
    end = self.cohort.phase_end[p]
    bounds = [(i * n) // self.num_parts for i in range(self.num_parts + 1)]
    parts = tuple(
        (tuple(w[bounds[i]:bounds[i + 1]] for w in weights),
         tuple(q[bounds[i]:bounds[i + 1]] for q in personal)
         if self.ditto else ())
        for i in range(self.num_parts))
    _, parts = tf.while_loop(
        lambda t, _: t < end,
        lambda t, state: self.local_step(t, state, bounds),
        (start, parts))
    weights = tuple(
        tf.concat([part[0][j] for part in parts] + [w[n:]], 0)
        for j, w in enumerate(weights))
    if self.ditto:
      personal = tuple(
          tf.concat([part[1][j] for part in parts] + [q[n:]], 0)
          for j, q in enumerate(personal))
    return p + 1, end, weights, personal


@functools.lru_cache(maxsize=32)
def _client_work_fn(model: batched_models.BatchedModel, batch: int,
                    ditto: bool, num_parts: int):
  """The cohort's ClientUpdate as one `tf.function` (traced once, shared).

  Everything else (learning rates, their decay, the dropout seed) is an
  argument, so backends that differ only in those (e.g. the four algorithms
  of a run) share one traced function. `num_parts` independent parts of the
  cohort step side by side.
  """
  spec = model.spec
  signature = [
      batched_models.weights_spec(spec, ()),  # theta^t
      batched_models.weights_spec(spec, (None,)),  # personal (sorted cohort)
      _cohort_signature(spec, batch),
      tf.TensorSpec((), tf.int32),  # round number
      tf.TensorSpec((3,), tf.float32),  # eta, eta_p, decay factor
      tf.TensorSpec((2,), tf.int32),  # decay period (rounds), dropout seed
  ]

  traced = _Traced(model, batch, ditto, num_parts)

  @tf.function(input_signature=signature, autograph=False)
  def client_work(global_weights, personal, cohort, round_num, rates, ints):
    steps = _LocalSteps(traced, cohort, global_weights, round_num, rates,
                        ints)
    weights, personal = steps.run(personal)
    delta = [w - w0 for w, w0 in zip(weights, global_weights)]
    return delta, list(personal)

  return client_work


def _cohort_records(spec: models.ModelSpec, groups, estimator, clip_norm,
                    deltas, client_groups):
  """`group_aggregation.client_record` of every client, stacked: (per group
  per weight tensor [K, ...], [K, l] counts, [K] clip-count records)."""
  weight_specs = [tf.TensorSpec(s, tf.float32) for s in spec.shapes]

  def client_records(args):
    flat, group = args
    return group_aggregation.client_record(groups, estimator, clip_norm, flat,
                                           group)

  return tf.map_fn(
      client_records, (list(deltas), client_groups),
      fn_output_signature=([weight_specs] * len(groups),
                           tf.TensorSpec([len(groups)], tf.float32),
                           tf.TensorSpec([], tf.float32)))


def _estimator(factory: hdp_factory.HeterogeneousDPFactory):
  return group_aggregation.clip_estimator(factory.initial_clip,
                                          factory.target_quantile,
                                          factory.clip_learning_rate)


@functools.lru_cache(maxsize=32)
def _aggregation_fn(spec: models.ModelSpec,
                    factory: hdp_factory.HeterogeneousDPFactory):
  """`HeterogeneousDPFactory`'s round over the stacked deltas, in plain TF.

  The bodies of its `client_records` (per client, mapped over the cohort)
  and `server_update`, with the same `group_aggregation` calls and keys.
  Returns (theta^{t+1}, t + 1, S^{t+1}, the next noise key, measurements,
  per group its noised sum).
  """
  groups = tuple(factory.groups)
  estimator = _estimator(factory)
  signature = [
      batched_models.weights_spec(spec, ()),  # theta^t
      batched_models.weights_spec(spec, (None,)),  # deltas
      tf.TensorSpec((None,), tf.int32),  # group of each client
      tf.TensorSpec((), tf.int32),  # round number
      tf.TensorSpec((), tf.float32),  # S^t
      tf.TensorSpec((2,), tf.int64),  # noise key
  ]

  @tf.function(input_signature=signature, autograph=False)
  def aggregate(global_weights, deltas, client_groups, round_num, clip_norm,
                noise_key):
    records, counts, below = _cohort_records(spec, groups, estimator,
                                             clip_norm, deltas, client_groups)
    sums = [[tf.reduce_sum(v, 0) for v in group_records]
            for group_records in records]
    out = group_aggregation.server_aggregate(
        groups, estimator, factory.clipped_count_stddev, clip_norm, noise_key,
        group_aggregation.Totals(sums, tf.reduce_sum(counts, 0),
                                 tf.reduce_sum(below, 0)),
        expected_counts=factory.expected_counts)
    new_global = [w + d for w, d in zip(global_weights, out.delta)]
    return (new_global, round_num + 1, out.clip_norm, out.noise_key,
            out.measurements, out.releases)

  return aggregate


@functools.lru_cache(maxsize=32)
def _clipped_sums_fn(spec: models.ModelSpec,
                     factory: hdp_factory.HeterogeneousDPFactory):
  """Per group, the clipped sum of the given clients' updates: what the
  group's release adds its noise to, for these clients alone."""
  groups = tuple(factory.groups)
  estimator = _estimator(factory)

  @tf.function(input_signature=[
      batched_models.weights_spec(spec, (None,)),  # deltas
      tf.TensorSpec((None,), tf.int32),  # group of each client
      tf.TensorSpec((), tf.float32),  # S^t
  ], autograph=False)
  def clipped_sums(deltas, client_groups, clip_norm):
    records, _, _ = _cohort_records(spec, groups, estimator, clip_norm,
                                    deltas, client_groups)
    ones = tf.ones(tf.shape(client_groups), tf.float32)
    return [[tf.tensordot(ones, v, axes=1) for v in group_records]
            for group_records in records]

  return clipped_sums


def step_bytes_per_client(spec: models.ModelSpec,
                          settings: tff_backend.ClientSettings) -> int:
  """Rough memory of one client in a batched step.

  Its weights, their gradients and updates (twice with Ditto), and one
  batch's activations kept for the backward pass, in float32.
  """
  models_trained = 2 if settings.ditto else 1
  return 4 * (4 * models_trained * spec.num_parameters + 6 *
              settings.batch_size * batched_models.activation_floats(spec))


def pack_cohort(client_data, order: np.ndarray, batch_size: int,
                input_shape: tuple[int, ...]):
  """The cohort's data in `order`, padded, step-major: [S_max, K, B, ...].

  Returns:
    (x [S_max, K, B, ...] float32, y [S_max, K, B] int32, rows [S_max, K]
    int32 real examples of each batch, steps [K] int32 batches per epoch).
  """
  sizes = np.array([len(client_data[c][1]) for c in order], np.int64)
  steps = -(-sizes // batch_size)
  max_steps = max(int(steps.max(initial=0)), 1)
  shape = tuple(input_shape)
  x = np.zeros((max_steps, len(order), batch_size) + shape, np.float32)
  y = np.zeros((max_steps, len(order), batch_size), np.int32)
  for i, c in enumerate(order):
    cx, cy = client_data[c]
    full, rest = divmod(int(sizes[i]), batch_size)
    cx = np.asarray(cx, np.float32).reshape((sizes[i],) + shape)
    cy = np.asarray(cy, np.int32)
    used = full * batch_size
    x[:full, i] = cx[:used].reshape((full, batch_size) + shape)
    y[:full, i] = cy[:used].reshape((full, batch_size))
    if rest:
      x[full, i, :rest] = cx[used:]
      y[full, i, :rest] = cy[used:]
  rows = np.clip(sizes[None] - np.arange(max_steps)[:, None] * batch_size, 0,
                 batch_size).astype(np.int32)
  return x, y, rows, steps.astype(np.int32)


class ClientWork(NamedTuple):
  """What `DirectRound.client_work` returns."""
  deltas: list  # Per weight tensor, [K, ...] the updates, clients sorted.
  groups: np.ndarray  # [K] their group indices, sorted alike.
  client_ids: np.ndarray  # [K] their client ids, sorted alike.
  personal: list  # Per client, in the caller's order, its personal model.
  seconds: dict  # 'prepare' and 'client_work' seconds.
  work: dict  # Example-passes: 'examples', 'computed', 'padded_to_largest'.


class DirectRound(round_executor.RoundExecutor):
  """Runs each round as batched TensorFlow over the stacked cohort."""

  backend = round_executor.DIRECT

  def __init__(self, spec: models.ModelSpec,
               initial_weights: Sequence[np.ndarray],
               factory: hdp_factory.HeterogeneousDPFactory,
               settings: tff_backend.ClientSettings,
               *,
               memory_budget_bytes: int = 512 * 2**20,
               parallel_parts: Optional[int] = None,
               cnn_conv: Optional[str] = None):
    """Initializes the backend.

    Args:
      spec: The model.
      initial_weights: theta^0.
      factory: The aggregator; its groups, clip parameters and seed define
        the server step (as `HeterogeneousDPFactory.create` does).
      settings: The clients' work.
      memory_budget_bytes: Rough bound on the memory one batched step may
        use; a cohort larger than it allows trains in consecutive parts
        (FEMNIST's CNN: about 28 clients per part by default; the FC NN: all
        of them). Results do not depend on it.
      parallel_parts: The cohort steps as this many independent parts, which
        TensorFlow runs concurrently. Default: 2 on a CPU with 2 or more
        cores (batched small matmuls use one core well, two less so), 1 when
        TensorFlow sees a GPU. Results do not depend on it.
      cnn_conv: The CNN's convolutions, 'grouped' or 'im2col'
        (`batched_models.batched_model`); results do not depend on it.
    """
    _validate(spec, initial_weights, factory, settings)
    if memory_budget_bytes <= 0:
      raise ValueError(
          f'memory_budget_bytes must be > 0, got {memory_budget_bytes}')
    if parallel_parts is None:
      gpu = bool(tf.config.list_logical_devices('GPU'))
      parallel_parts = 1 if gpu else min(2, os.cpu_count() or 1)
    if parallel_parts < 1:
      raise ValueError(f'parallel_parts must be >= 1, got {parallel_parts}')
    self._spec = spec
    self._factory = factory
    self._settings = settings
    self._model = batched_models.batched_model(spec, cnn_conv)
    self._initial_weights = [np.array(w, np.float32) for w in initial_weights]
    self._client_work = _client_work_fn(self._model, settings.batch_size,
                                        settings.ditto, parallel_parts)
    self._aggregate = _aggregation_fn(spec, factory)
    self._clipped_sums = _clipped_sums_fn(spec, factory)
    self._rates = np.array([settings.learning_rate,
                            settings.personal_learning_rate,
                            settings.lr_decay_factor], np.float32)
    self._ints = np.array([settings.lr_decay_rounds, settings.seed], np.int32)
    self._lambdas = np.asarray(settings.ditto_lambdas, np.float32)
    self.clients_per_call = max(
        1, int(memory_budget_bytes // step_bytes_per_client(spec, settings)))
    self.last_round_seconds = {}
    self.last_round_work = {}

  @property
  def batched_model(self) -> batched_models.BatchedModel:
    return self._model

  def initialize(self, key):
    """The state of `TffRound.initialize(key)`, built directly."""
    return collections.OrderedDict(
        global_weights=[w.copy() for w in self._initial_weights],
        round_num=np.asarray(0, np.int32),
        aggregator=collections.OrderedDict(
            clip_norm=np.asarray(self._factory.initial_clip, np.float32),
            noise_key=mechanism_key.as_key(key).copy()))

  def next(self, state, cohort) -> round_executor.RoundOutput:
    """One round on `cohort` (an `executors.Cohort`); see `tff_backend`.

    `client_work`, then `aggregate`. `last_round_seconds` then holds where
    the round's time went: 'prepare' (padding and stacking on the host),
    'client_work', 'aggregate', 'total'; `last_round_work` the client work
    in example-passes of one model: 'examples' (the clients' real examples
    times E), 'computed' (the rows the batched steps ran: finished clients
    drop out; a client's last, smaller batch is padded to the widest batch
    of the step) and 'padded_to_largest' (what padding each call's clients
    to its largest client and every batch to the batch size would have
    run). An empty cohort takes the same release: the groups' noise on
    zero sums (`client_work` gives zero rows).
    """
    t0 = time.perf_counter()
    work = self.client_work(state, cohort)
    t1 = time.perf_counter()
    new_state, measurements, _ = self.aggregate(state, work.deltas,
                                                work.groups)
    t2 = time.perf_counter()
    self.last_round_seconds = dict(work.seconds, aggregate=t2 - t1,
                                   total=t2 - t0)
    self.last_round_work = dict(work.work)
    return round_executor.RoundOutput(new_state, measurements, work.personal)

  def client_work(self, state, cohort) -> ClientWork:
    """Algorithm 2's ClientUpdate of `cohort` (an `executors.Cohort`).

    The clients run sorted by step count, longest first, at most
    `clients_per_call` at a time (the activations of a CNN cohort are
    large); `ClientWork` gives their updates, groups and client ids in that
    order and their personal models in the caller's. No client: no
    update.
    """
    t0 = time.perf_counter()
    cohort.check()
    client_data, client_info = cohort.data, cohort.info
    k = len(client_data)
    s = self._settings
    sizes = np.array([len(y) for _, y in client_data], np.int64)
    total_steps = -(-sizes // s.batch_size) * s.local_epochs
    order = np.argsort(-total_steps, kind='stable')
    groups = np.array([int(client_info[c]['group']) for c in order], np.int32)
    client_ids = np.array([int(client_info[c]['client_id']) for c in order],
                          np.int32)
    global_weights = [np.asarray(w, np.float32)
                      for w in state['global_weights']]
    round_num = np.asarray(state['round_num'], np.int32)
    seconds = collections.Counter(prepare=time.perf_counter() - t0)
    work = collections.Counter(examples=int(sizes.sum()) * s.local_epochs)
    deltas, new_personal = [], []
    for start in range(0, k, self.clients_per_call):
      t1 = time.perf_counter()
      part = order[start:start + self.clients_per_call]
      packed = self._packed(client_data, part, total_steps[part],
                            groups[start:start + len(part)],
                            client_ids[start:start + len(part)], work)
      personal = self._stacked_personal(cohort.personal, part,
                                        global_weights)
      t2 = time.perf_counter()
      delta, trained = self._client_work(global_weights, personal, packed,
                                         round_num, self._rates, self._ints)
      deltas.append(delta)
      if s.ditto:
        new_personal.append([p.numpy() for p in trained])
      seconds['prepare'] += t2 - t1
      seconds['client_work'] += time.perf_counter() - t2
    if not deltas:
      deltas = [[np.zeros((0,) + w.shape, np.float32) for w in global_weights]]
    return ClientWork(
        deltas=(deltas[0] if len(deltas) == 1 else
                [tf.concat(parts, 0) for parts in zip(*deltas)]),
        groups=groups,
        client_ids=client_ids,
        personal=self._personal_out(new_personal, order, cohort.personal),
        seconds={'prepare': seconds['prepare'],
                 'client_work': seconds['client_work']},
        work=dict(work))

  def _packed(self, client_data, part, total_steps, groups, client_ids,
              work) -> PackedCohort:
    """Part `part` of the sorted cohort, packed; adds its rows to `work`."""
    s = self._settings
    x, y, rows, steps = pack_cohort(client_data, part, s.batch_size,
                                    self._spec.input_shape)
    phase_clients, phase_end = _phases(total_steps)
    work['computed'] += _computed_rows(rows, steps, phase_clients, phase_end)
    work['padded_to_largest'] += (s.batch_size * len(part) *
                                  int(phase_end.max(initial=0)))
    return PackedCohort(x, y, rows, steps, phase_clients, phase_end,
                        self._lambdas[groups], client_ids)

  def _stacked_personal(self, personal_weights, part, global_weights):
    """The part's personal models stacked ([K, ...] per tensor); with Ditto
    off, not trained: an empty stack."""
    if not self._settings.ditto:
      return [np.zeros((0,) + w.shape, np.float32) for w in global_weights]
    return [
        np.stack([np.asarray(personal_weights[c][i], np.float32)
                  for c in part])
        for i in range(len(global_weights))
    ]

  def _personal_out(self, new_personal, order, personal_weights):
    """The trained personal models back in the caller's client order; with
    Ditto off, unchanged, as from TFF."""
    k = len(order)
    if not (self._settings.ditto and k):
      return [[np.asarray(w) for w in p] for p in personal_weights]
    stacked = [np.concatenate(parts) for parts in zip(*new_personal)]
    position = np.empty(k, np.int64)
    position[order] = np.arange(k)
    return [[p[position[c]] for p in stacked] for c in range(k)]

  def aggregate(self, state, deltas, client_groups):
    """Algorithm 2's server step on the cohort's updates.

    Args:
      state: The round's state.
      deltas: Per weight tensor, the stacked [K, ...] updates Delta_j.
      client_groups: [K] their group indices.

    Returns:
      (the new state, the measurements as floats, per group its noised sum
      per weight tensor: the group's release before its mean).
    """
    aggregator = state['aggregator']
    new_global, new_round, clip_norm, noise_key, measurements, releases = (
        self._aggregate(
            [np.asarray(w, np.float32) for w in state['global_weights']],
            deltas, np.asarray(client_groups, np.int32),
            np.asarray(state['round_num'], np.int32),
            np.asarray(aggregator['clip_norm'], np.float32),
            np.asarray(aggregator['noise_key'], np.int64)))
    new_state = collections.OrderedDict(
        global_weights=[w.numpy() for w in new_global],
        round_num=new_round.numpy(),
        aggregator=collections.OrderedDict(clip_norm=clip_norm.numpy(),
                                           noise_key=noise_key.numpy()))
    return (new_state, {key: float(v) for key, v in measurements.items()},
            releases)

  def clipped_sums(self, state, deltas, client_groups):
    """Per group, the clipped sum of these clients' updates at the state's
    clip norm (numpy, per weight tensor): what `aggregate` would add the
    group's noise to, were they the cohort."""
    sums = self._clipped_sums(
        deltas, np.asarray(client_groups, np.int32),
        np.asarray(state['aggregator']['clip_norm'], np.float32))
    return [[v.numpy() for v in group] for group in sums]
