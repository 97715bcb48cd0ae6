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
"""A round of DP-SGD for the whole cohort in one computation (paper 003).

`cohort_updates` returns, for every client i, what `dp_sgd.client_update`
returns for it alone with key k_i: Delta theta_i after E_i = K ceil(N_i/b_i)
steps of eqs. (1), (6),

  theta_i <- theta_i - (eta_l / b_i) [ sum_{j in B_i^t} clip_c(g_j)
                                       + N(0, c^2 z_i^2 I) ],

with each client's own N_i, b_i and z_i, its batches and noise drawn from
k_i as there (`dp_sgd.poisson_key`, `shuffle_key`, `noise_key`,
`gaussian_noise`). Three forms:

- IN_LANES: the clients cut into `parallel_parts` lanes of about equal work,
  each lane `dp_sgd.client_update` of its clients in turn; TensorFlow runs
  the lanes at once (on a CPU, one per core). Any model; the same updates
  as IN_TURN, bit for bit.
- IN_TURN: `dp_sgd.client_update` of each client in turn: any model.
- STACKED: step t of every client still training is one batched step,
  each client's rows in groups of `rows_per_group` with its own weights
  (`layers.grouped_dense`, `layers.grouped_conv2d`; 'fc' and 'cnn5',
  `grouped_forward`), in `parallel_parts` independent parts; only the
  order of float32 sums differs.

`default_form` picks one per device (why: its docstring,
docs/performance_robust_hdp.md);
tests/robust_hdp/test_cohort.py checks every form client by client.
"""

import functools
import os
from typing import Callable, NamedTuple, Optional, Sequence

import numpy as np
import tensorflow as tf

from tff_hdp import layers
from tff_hdp import models
from tff_hdp import per_example
from tff_hdp.robust_hdp import dp_sgd

STACKED = 'stacked'
IN_TURN = 'in_turn'
IN_LANES = 'in_lanes'
FORMS = (STACKED, IN_TURN, IN_LANES)
# Rows of a group: a client's batch takes ceil(|B|/ROWS_PER_GROUP) groups.
ROWS_PER_GROUP = 8


def _max_pool(x: tf.Tensor) -> tf.Tensor:
  """2x2 max-pooling of [G, B, H, W, C]."""
  s = tf.shape(x)
  pooled = tf.nn.max_pool2d(
      tf.reshape(x, tf.concat([[-1], s[2:]], 0)), ksize=2, strides=2,
      padding='VALID')
  return tf.reshape(pooled, tf.concat([s[:2], tf.shape(pooled)[1:]], 0))


def _grouped_fc(weights, x):
  """`models.fc_model`'s forward for G groups: x [G, B, ...]."""
  w1, b1, w2, b2 = weights
  s = tf.shape(x)
  x = tf.reshape(tf.cast(x, tf.float32), [s[0], s[1], w1.shape[1]])
  hidden = tf.nn.relu(layers.grouped_dense(x, w1, b1))
  return layers.grouped_dense(hidden, w2, b2)


def _grouped_cnn5(weights, x):
  """`models.cnn5_model`'s forward for G groups: x [G, B, H, W(, C)]."""
  c1, cb1, c2, cb2, w, b = weights
  x = tf.cast(x, tf.float32)
  if x.shape.rank == 4:
    x = x[..., tf.newaxis]
  for kernel, bias in ((c1, cb1), (c2, cb2)):
    x = _max_pool(tf.nn.relu(layers.grouped_conv2d(x, kernel, bias,
                                                   padding='SAME')))
  s = tf.shape(x)
  return layers.grouped_dense(tf.reshape(x, [s[0], s[1], w.shape[1]]), w, b)


def grouped_forward(spec: models.ModelSpec) -> Optional[Callable]:
  """`forward(weights [G, ...], x [G, B, ...]) -> logits [G, B, classes]`:
  `spec`'s forward for G groups, each with its own weights, as recorded
  grouped layers; None if `spec` has none ('fc' and 'cnn5' do)."""
  if spec.forward is models.fc_model().forward:
    return _grouped_fc
  if spec.forward is models.cnn5_model().forward:
    return _grouped_cnn5
  return None


class Clients(NamedTuple):
  """The cohort's per-client values, row i client i's."""
  num_examples: tf.Tensor  # [n] N_i >= 1.
  batch_sizes: tf.Tensor  # [n] b_i >= 1 (capped by the caller to N_i).
  # [n] z_i, or None for non-private SGD (every client).
  noise_multipliers: Optional[tf.Tensor]
  keys: tf.Tensor  # [n, 2] int64, client i's mechanism key of the round.


class _Sorted:
  """The cohort's per-client values, sorted by step count, longest first:
  the clients still training are a prefix, and a finished one drops out."""

  def __init__(self, clients: Clients, settings):
    num_examples = tf.cast(clients.num_examples, tf.int32)
    batch_sizes = tf.cast(clients.batch_sizes, tf.int32)
    steps_per_epoch = (num_examples + batch_sizes - 1) // batch_sizes
    steps = settings.local_epochs * steps_per_epoch
    self.order = tf.argsort(steps, direction='DESCENDING', stable=True)
    take = lambda v: tf.gather(v, self.order)
    self.num_examples = take(num_examples)
    self.batch_sizes = take(batch_sizes)
    self.steps_per_epoch = take(steps_per_epoch)
    self.steps = take(steps)
    self.keys = take(clients.keys)
    self.noise_multipliers = (
        None if clients.noise_multipliers is None else
        take(tf.cast(clients.noise_multipliers, tf.float32)))


class _Step:
  """Step t of the clients still training (graph-building, one per trace).

  The clients still training are cut into `parts` ranges of about equal
  batch sizes, each stepped by its own subgraph: TensorFlow runs them at
  once (on a CPU, one per core).
  """

  def __init__(self, spec, forward, x, y, clients: _Sorted, settings,
               rows_per_group: int, parts: int):
    self.spec, self.forward = spec, forward
    self.x, self.y = x, y
    self.clients = clients
    self.settings = settings
    self.rows = rows_per_group
    self.parts = parts
    self.private = clients.noise_multipliers is not None
    self.poisson = settings.poisson and self.private
    self.max_examples = tf.shape(y)[1]

  def draws(self, t, lo, hi):
    """Per client of [lo, hi): its batch's draws (Poisson: uniform
    [N_max]; shuffled: the epoch's order [N_max]) and, if private, its
    noise."""
    c = self.clients
    n_max = self.max_examples
    shapes = [tuple(s) for s in self.spec.shapes]

    def one(args):
      key, num_examples, steps_per_epoch, stddev = args
      if self.poisson:
        # The first N_i of N_max uniform draws are the N_i draws of
        # `dp_sgd.batch_indices` (Philox: element j is counter j's).
        draw = tf.random.stateless_uniform(
            [n_max], seed=dp_sgd.poisson_key(key, t))
        order = tf.zeros([n_max], tf.int32)
      else:
        draw = tf.zeros([n_max])
        order = tf.random.experimental.stateless_shuffle(
            tf.range(num_examples),
            seed=dp_sgd.shuffle_key(key, t // steps_per_epoch))
        order = tf.pad(order, [[0, n_max - num_examples]])
      noise = (dp_sgd.gaussian_noise(shapes, stddev,
                                     dp_sgd.noise_key(key, t))
               if self.private else [])
      return draw, order, noise

    stddev = (self.settings.clip * c.noise_multipliers[lo:hi]
              if self.private else tf.zeros([hi - lo]))
    signature = (tf.TensorSpec([None], tf.float32),
                 tf.TensorSpec([None], tf.int32),
                 [tf.TensorSpec(s, tf.float32) for s in shapes]
                 if self.private else [])
    return tf.map_fn(
        one, (c.keys[lo:hi], c.num_examples[lo:hi],
              c.steps_per_epoch[lo:hi], stddev),
        fn_output_signature=signature, parallel_iterations=2)

  def batch_rows(self, t, lo, hi, draw, order):
    """(client, example, rank in the client's batch) of every row of step
    t, sorted by client (of [lo, hi), from 0) then rank, and each client's
    batch size."""
    c = self.clients
    num_examples = c.num_examples[lo:hi]
    batch_sizes = c.batch_sizes[lo:hi]
    if self.poisson:
      rate = (tf.cast(batch_sizes, tf.float32) /
              tf.cast(num_examples, tf.float32))
      picked = ((draw < rate[:, tf.newaxis]) &
                (tf.range(self.max_examples)[tf.newaxis] <
                 num_examples[:, tf.newaxis]))
      where = tf.cast(tf.where(picked), tf.int32)  # Row-major: by client.
      client, example = where[:, 0], where[:, 1]
      sizes = tf.reduce_sum(tf.cast(picked, tf.int32), 1)
      start = tf.cumsum(sizes, exclusive=True)
      rank = tf.range(tf.shape(client)[0]) - tf.gather(start, client)
      return client, example, rank, sizes
    # Fixed-size batches: slot k of the epoch's order, as batch_indices.
    start = (t % c.steps_per_epoch[lo:hi]) * batch_sizes
    sizes = tf.minimum(batch_sizes, num_examples - start)
    width = tf.reduce_max(sizes)
    where = tf.cast(tf.where(tf.range(width)[tf.newaxis] <
                             sizes[:, tf.newaxis]), tf.int32)
    client, rank = where[:, 0], where[:, 1]
    example = tf.gather_nd(order, tf.stack(
        [client, tf.gather(start, client) + rank], 1))
    return client, example, rank, sizes

  def groups(self, lo, hi, client, example, rank, sizes):
    """The step's rows cut into groups of `rows` per client, a client's
    last group padded (at most a group of padding per client; a padded row
    has zero loss and zero weight): (the group's client [G] (from 0), its
    inputs [G, rows, ...], labels, real-row mask)."""
    r = self.rows
    per_client = (sizes + r - 1) // r
    num_groups = tf.maximum(tf.reduce_sum(per_client), 1)  # >= 1 (oneDNN).
    group_client = tf.repeat(tf.range(hi - lo), per_client)
    group_client = tf.pad(group_client,
                          [[0, num_groups - tf.shape(group_client)[0]]])
    first_group = tf.cumsum(per_client, exclusive=True)
    slot = (tf.gather(first_group, client) + rank // r) * r + rank % r
    cells = [num_groups * r]
    example = tf.scatter_nd(slot[:, tf.newaxis], example, cells)
    real = tf.scatter_nd(slot[:, tf.newaxis], tf.ones_like(slot), cells)
    caller = tf.gather(self.clients.order,
                       lo + tf.repeat(group_client, r))  # Rows of x, y.
    index = tf.stack([caller, example], 1)
    xg = tf.gather_nd(self.x, index)
    yg = tf.gather_nd(self.y, index)
    lead = [num_groups, r]
    return (group_client,
            tf.reshape(xg, tf.concat([lead, tf.shape(xg)[1:]], 0)),
            tf.reshape(yg, lead),
            tf.reshape(tf.cast(real, tf.float32), lead))

  def gradients(self, live, group_client, xg, yg, real, sizes):
    """Per client of `live`: sum_j s_j g_j over its rows, s_j the clip
    factor (private) or 1 / |B| (non-private), per weight tensor."""
    weights = [tf.gather(w, group_client) for w in live]

    def summed_loss(w):
      losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=yg, logits=self.forward(w, xg))
      return tf.reduce_sum(losses * real)

    grads = per_example.recorded_gradients(summed_loss, weights)
    if self.private:  # The clip factor depends on c alone, not on z_i.
      query = dp_sgd.gaussian_query(self.settings.clip, 1.0)
      scale = dp_sgd.clip_factors(query, query.initial_global_state(),
                                  tf.sqrt(grads.squared_norms())) * real
    else:  # The mean gradient of the batch (`models.loss_fn`).
      scale = real / tf.cast(tf.gather(sizes, group_client),
                             tf.float32)[:, tf.newaxis]
    return [tf.math.unsorted_segment_sum(g, group_client, tf.shape(sizes)[0])
            for g in grads.weighted_sum(scale)]

  def part(self, t, lo, hi, live):
    """Step t of clients [lo, hi) (`live`: their weights)."""
    draw, order, noise = self.draws(t, lo, hi)
    client, example, rank, sizes = self.batch_rows(t, lo, hi, draw, order)
    group_client, xg, yg, real = self.groups(lo, hi, client, example, rank,
                                             sizes)
    summed = self.gradients(live, group_client, xg, yg, real, sizes)
    lr = tf.constant(self.settings.learning_rate, tf.float32)
    if self.private:  # (sum + noise) / b_i: `dp_sgd.noised_average`.
      denominator = tf.cast(self.clients.batch_sizes[lo:hi], tf.float32)
      summed = [(s + e) / tf.reshape(denominator,
                                     [-1] + [1] * (s.shape.rank - 1))
                for s, e in zip(summed, noise)]
    return [w - lr * g for w, g in zip(live, summed)]

  def bounds(self, active):
    """`parts` + 1 client bounds cutting [0, active) into ranges of about
    equal summed b_i (the clients are sorted by b_i, smallest first)."""
    load = tf.cumsum(tf.cast(self.clients.batch_sizes[:active], tf.float32))
    total = load[-1]
    cuts = [tf.cast(tf.searchsorted(
        load, [total * k / self.parts], side='left')[0], tf.int32)
            for k in range(1, self.parts)]
    return [tf.constant(0)] + [tf.minimum(c, active) for c in cuts] + [active]

  def __call__(self, t, stacked):
    """Step t of the clients still training; `stacked` [n, ...] weights."""
    active = tf.reduce_sum(tf.cast(self.clients.steps > t, tf.int32))
    bounds = self.bounds(active)
    new = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
      live = [w[lo:hi] for w in stacked]
      # A part is empty when a few clients are left.
      new.append(tf.cond(hi > lo, lambda lo=lo, hi=hi, live=live: self.part(
          t, lo, hi, live), lambda live=live: live))
    return t + 1, [
        tf.ensure_shape(tf.concat([p[i] for p in new] + [w[active:]], 0),
                        w.shape) for i, w in enumerate(stacked)]


def default_form(spec: models.ModelSpec) -> str:
  """STACKED for a model with a grouped form on a GPU; on a CPU, IN_LANES
  where TensorFlow can run two lanes at once (`parallel_lanes`), else
  IN_TURN.

  On the 2-core CPUs measured, TensorFlow's (oneDNN's) grouped convolutions
  of many small groups ran well below the rate of each client's own
  convolutions on its own batch (which stays in cache), so stacking the
  clients made a round slower there; on a GPU, stacking replaces each
  client's small kernel launches by one per layer. Two lanes of clients at
  once, each with its own kernels, took 0.90 and 0.88 of the wall time of
  the clients in turn in two quiet runs of
  `benchmarks/benchmark_robust_hdp.py` (docs/performance_robust_hdp.md).
  """
  if tf.config.list_logical_devices('GPU'):
    return STACKED if grouped_forward(spec) is not None else IN_TURN
  return IN_LANES if parallel_lanes() >= 2 else IN_TURN


def parallel_lanes() -> int:
  """Lanes TensorFlow can run at once on this process's CPU: its cores, or
  fewer if its inter-op threads are set fewer (`tf.config.threading`, or
  TF_NUM_INTEROP_THREADS, which the sweeps' `--parallel` sets)."""
  threads = tf.config.threading.get_inter_op_parallelism_threads()
  if not threads:
    try:
      threads = int(os.environ.get('TF_NUM_INTEROP_THREADS', '0'))
    except ValueError:
      threads = 0
  cores = _cpu_cores()
  return min(cores, threads) if threads > 0 else cores


def one_thread_per_lane() -> bool:
  """Gives each lane a core of its own: where the clients run in lanes on
  a CPU (`default_form`), sets TensorFlow's intra-op threads to 1, unless
  they were set (`tf.config.threading`, TF_NUM_INTRAOP_THREADS) or
  TensorFlow has started, when they can no longer change. Returns whether
  it set them.

  A lane's kernels (a DP-SGD step at Dist1's batch sizes) are too small to
  gain from being split over threads; split anyway, the two lanes' kernels
  wait on each other's threads, and a round's clients are slower than with
  one thread a lane (measured: docs/performance_robust_hdp.md).
  `run_robust_hdp.py`
  calls it before TensorFlow starts, as can any caller of
  `training.train`; a library cannot, once its user's TensorFlow has
  started.
  """
  if tf.config.list_physical_devices('GPU') or parallel_lanes() < 2:
    return False
  if (tf.config.threading.get_intra_op_parallelism_threads() or
      os.environ.get('TF_NUM_INTRAOP_THREADS')):
    return False
  try:
    tf.config.threading.set_intra_op_parallelism_threads(1)
  except RuntimeError:  # TensorFlow has started.
    return False
  return True


def _cpu_cores() -> int:
  """The CPU cores this process may run on."""
  try:
    return len(os.sched_getaffinity(0))
  except AttributeError:  # Not on Linux.
    return os.cpu_count() or 1


class Layout(NamedTuple):
  """How a round's computation is laid out; results do not depend on it.

  Attributes:
    form: A form of `FORMS`; None: `default_form(spec)`. STACKED needs
      `grouped_forward(spec)`.
    rows_per_group: STACKED's rows per group.
    parallel_parts: IN_LANES's lanes, or STACKED's independent parts of a
      step, which TensorFlow runs at once; None: 2 on a CPU of 2 or more
      cores, 1 on a GPU.
  """
  form: Optional[str] = None
  rows_per_group: int = ROWS_PER_GROUP
  parallel_parts: Optional[int] = None


def cohort_updates(spec: models.ModelSpec,
                   weights: Sequence[tf.Tensor],
                   x: tf.Tensor,
                   y: tf.Tensor,
                   clients: Clients,
                   *,
                   settings: dp_sgd.DpSgdSettings,
                   layout: Layout = Layout()) -> list[tf.Tensor]:
  """Every client's Delta theta_i of one round, in one computation.

  Args:
    spec: The model.
    weights: theta^e, shared by all clients.
    x: [n, N_max, ...] the clients' examples, client i's first N_i real.
    y: [n, N_max] their labels (int32).
    clients: Their N_i, b_i, z_i and keys (`Clients`).
    settings: c, eta_l, K and the batch sampling.
    layout: The form, STACKED's rows per group and the parallel parts
      (`Layout`; results do not depend on it).

  Returns:
    Per weight tensor, [n, *shape]: row i is `dp_sgd.client_update(spec,
    weights, x[i, :N_i], y[i, :N_i], batch_size=b_i, noise_multiplier=z_i,
    key=clients.keys[i], settings=settings)`, up to float32 round-off.

  Raises:
    ValueError: For an unknown form, or STACKED for a model without a
      grouped form.
  """
  form, rows_per_group, parallel_parts = layout
  form = form or default_form(spec)
  if form not in FORMS:
    raise ValueError(f'form must be one of {FORMS}, got {form!r}')
  forward = grouped_forward(spec)
  if form == STACKED and forward is None:
    raise ValueError(f'model {spec.name!r} has no grouped form (STACKED '
                     'takes fc and cnn5); use IN_TURN')
  weights0 = [tf.convert_to_tensor(w, tf.float32) for w in weights]
  x = tf.convert_to_tensor(x, tf.float32)
  y = tf.cast(y, tf.int32)
  if parallel_parts is None:
    parallel_parts = (1 if tf.config.list_logical_devices('GPU') else
                      min(2, parallel_lanes()))
  if form == IN_TURN:
    return _in_turn(spec, weights0, x, y, clients, settings)
  if form == IN_LANES:
    return _in_lanes(spec, weights0, x, y, clients, settings, parallel_parts)
  clients = _Sorted(clients, settings)
  step = _Step(spec, forward, x, y, clients, settings, rows_per_group,
               parallel_parts)
  n = tf.shape(y)[0]
  stacked = [tf.tile(w[tf.newaxis], tf.concat([[n], tf.ones_like(
      tf.shape(w))], 0)) for w in weights0]
  step_fn = dp_sgd.own_graph(lambda t, stacked: step(t, stacked)[1])
  _, stacked = tf.while_loop(
      lambda t, _: t < tf.reduce_max(tf.concat([clients.steps, [0]], 0)),
      lambda t, stacked: (t + 1, step_fn(t, stacked)),
      (tf.constant(0, tf.int32), stacked))
  inverse = tf.math.invert_permutation(clients.order)
  return [tf.gather(w, inverse) - w0 for w, w0 in zip(stacked, weights0)]


def _one_client(spec, weights, x, y, clients: Clients, settings):
  """`fn(i)`: `dp_sgd.client_update` of client i of the cohort."""
  private = clients.noise_multipliers is not None
  num_examples = tf.cast(clients.num_examples, tf.int32)
  batch_sizes = tf.cast(clients.batch_sizes, tf.int32)
  noise = (tf.cast(clients.noise_multipliers, tf.float32) if private else
           None)

  def one(i):
    n = num_examples[i]
    return dp_sgd.client_update(
        spec, weights, x[i, :n], y[i, :n], batch_size=batch_sizes[i],
        noise_multiplier=noise[i] if private else None,
        key=clients.keys[i], settings=settings)

  return one


def _in_turn(spec, weights, x, y, clients: Clients, settings):
  """IN_TURN: `dp_sgd.client_update` of each client in turn."""
  return tf.map_fn(
      _one_client(spec, weights, x, y, clients, settings),
      tf.range(tf.shape(y)[0]), parallel_iterations=1,
      fn_output_signature=[tf.TensorSpec(s, tf.float32) for s in spec.shapes])


# A step's fixed cost (the ops between kernels, the noise), in examples of
# work: a lane's load is sum_i E_i (b_i + STEP_COST_EXAMPLES). cnn5's DP-SGD
# step took about (b + 13) examples' time at b = 16 and 64 on the CPU
# measured. Only the balance of the lanes depends on it, not the updates.
STEP_COST_EXAMPLES = 16


def lanes(steps: tf.Tensor, batch_sizes: tf.Tensor,
          parts: int) -> list[tf.Tensor]:
  """Per lane of `parts`, its clients, longest first: longest processing
  time first (Graham, 1969), client i's work E_i (b_i +
  STEP_COST_EXAMPLES) going to the lane of least work so far, which is
  within 4/3 of the best balance."""
  cost = tf.cast(steps, tf.int64) * tf.cast(
      batch_sizes + STEP_COST_EXAMPLES, tf.int64)
  order = tf.argsort(cost, direction='DESCENDING', stable=True)

  def assign(j, loads, lane):
    k = tf.argmin(loads, output_type=tf.int32)
    return (j + 1, tf.tensor_scatter_nd_add(loads, [[k]], [cost[order[j]]]),
            tf.tensor_scatter_nd_update(lane, [[j]], [k]))

  n = tf.size(cost)
  lane = tf.while_loop(  # lane[j]: the lane of client order[j].
      lambda j, *_: j < n, assign,
      (tf.constant(0), tf.zeros([parts], tf.int64),
       tf.zeros([n], tf.int32)))[2]
  return [tf.boolean_mask(order, tf.equal(lane, k)) for k in range(parts)]


def _in_lanes(spec, weights, x, y, clients: Clients, settings, parts: int):
  """IN_LANES: each lane's clients (`lanes`) in turn; the lanes are
  independent loops of one graph, which TensorFlow's executor runs at
  once."""
  num_examples = tf.cast(clients.num_examples, tf.int32)
  batch_sizes = tf.cast(clients.batch_sizes, tf.int32)
  steps = settings.local_epochs * (
      (num_examples + batch_sizes - 1) // batch_sizes)
  one = _one_client(spec, weights, x, y, clients, settings)
  members = lanes(steps, batch_sizes, parts)
  rows = []
  for mine in members:

    def body(j, arrays, mine=mine):
      return j + 1, [a.write(j, d) for a, d in zip(arrays, one(mine[j]))]

    arrays = [tf.TensorArray(tf.float32, size=tf.size(mine),
                             element_shape=s) for s in spec.shapes]
    _, arrays = tf.while_loop(lambda j, _, mine=mine: j < tf.size(mine),
                              body, (tf.constant(0), arrays),
                              parallel_iterations=1)
    rows.append([a.stack() for a in arrays])
  return [tf.dynamic_stitch(members, [r[i] for r in rows])
          for i in range(len(spec.shapes))]


@functools.lru_cache(maxsize=None)
def cohort_function(spec: models.ModelSpec, settings: dp_sgd.DpSgdSettings,
                    private: bool, form: Optional[str] = None,
                    parallel_parts: Optional[int] = None):
  """`cohort_updates` as one `tf.function` per (model, settings, private,
  form, parts), traced once for any cohort size, returning [n, p] rows
  (`flatten_rows`).

  Called as `fn(weights, x, y, num_examples, batch_sizes,
  noise_multipliers, client_keys)`: weights float32 in `spec.shapes`, x
  float32 [n, N_max, *spec.input_shape], y int32 [n, N_max], num_examples
  and batch_sizes int32 [n], noise_multipliers float32 [n] (ignored when
  not private), client_keys int64 [n, 2].
  """
  form = form or default_form(spec)
  signature = [
      [tf.TensorSpec(s, tf.float32) for s in spec.shapes],
      tf.TensorSpec((None, None) + tuple(spec.input_shape), tf.float32),
      tf.TensorSpec((None, None), tf.int32),
      tf.TensorSpec((None,), tf.int32),
      tf.TensorSpec((None,), tf.int32),
      tf.TensorSpec((None,), tf.float32),
      tf.TensorSpec((None, 2), tf.int64),
  ]

  @tf.function(input_signature=signature, autograph=False)
  def updates(weights, x, y, num_examples, batch_sizes, noise_multipliers,
              client_keys):
    return flatten_rows(cohort_updates(
        spec, weights, x, y,
        Clients(num_examples, batch_sizes,
                noise_multipliers if private else None, client_keys),
        settings=settings,
        layout=Layout(form=form, parallel_parts=parallel_parts)))

  return updates


def pack_clients(client_data) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Clients' (x_i, y_i) padded to one array: (x [n, N_max, ...] float32, y
  [n, N_max] int32, num_examples [n] int32), as `cohort_function` takes
  them (the padding is never read)."""
  sizes = np.array([len(y) for _, y in client_data], np.int32)
  n_max = int(sizes.max(initial=1))
  shape = np.shape(client_data[0][0])[1:] if len(client_data) else ()
  x = np.zeros((len(client_data), n_max) + tuple(shape), np.float32)
  y = np.zeros((len(client_data), n_max), np.int32)
  for i, (xi, yi) in enumerate(client_data):
    x[i, :sizes[i]] = xi
    y[i, :sizes[i]] = yi
  return x, y, sizes


def flatten_rows(deltas: Sequence[tf.Tensor]) -> tf.Tensor:
  """Per-tensor [n, *shape] updates as [n, p] rows (`aggregator.flatten`'s
  order for each client)."""
  return tf.concat([tf.reshape(d, [tf.shape(d)[0], -1]) for d in deltas], 1)
