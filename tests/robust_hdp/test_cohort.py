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
"""Tests of tff_hdp/robust_hdp/cohort.py against dp_sgd.client_update, client
by client: the same keys give the same batches, noise and updates (IN_TURN
and IN_LANES bit for bit, STACKED up to float32 round-off)."""

import functools
import os
import types

import numpy as np
import pytest
import tensorflow as tf

from tests import binaries
from tff_hdp import models
from tff_hdp.robust_hdp import cohort
from tff_hdp.robust_hdp import dp_sgd
from tff_hdp.robust_hdp import direct_backend as robust_direct_backend

SHAPES = {'fc': (6, 5), 'cnn5': (8, 8), 'cnn': (8, 8)}
CLASSES = 4
# Shared by the tests, so that their traces are too: clip binding for most
# examples, two local epochs.
POISSON = dp_sgd.DpSgdSettings(clip=0.3, learning_rate=0.5, local_epochs=2)
SHUFFLED = POISSON._replace(poisson=False)


def _cohort(name, n, seed=0, batch_sizes=(1, 2, 4, 8), sizes=(3, 24)):
  """A model, theta^e and n clients of different N_i, b_i, z_i and keys."""
  spec = models.build_model(name, SHAPES[name], CLASSES)
  rng = np.random.default_rng(seed)
  weights = [tf.constant(w + rng.normal(scale=0.1, size=w.shape)
                         .astype(np.float32)) for w in spec.init(seed)]
  num_examples = rng.integers(sizes[0], sizes[1] + 1, n).astype(np.int32)
  batch = np.minimum(rng.choice(batch_sizes, n), num_examples).astype(
      np.int32)
  # From nearly no noise (the clipped gradients dominate) to much.
  noise = np.exp(rng.uniform(np.log(1e-4), np.log(2.0), n)).astype(np.float32)
  x = rng.random((n, num_examples.max()) + SHAPES[name]).astype(np.float32)
  y = rng.integers(0, CLASSES, (n, num_examples.max())).astype(np.int32)
  keys = rng.integers(-2**63, 2**63 - 1, (n, 2), dtype=np.int64)
  return spec, weights, x, y, num_examples, batch, noise, keys


@functools.lru_cache(maxsize=None)
def _update_fn(spec, settings, private):
  """`dp_sgd.client_update` of one client, traced once for any N_i."""
  return tf.function(
      lambda w, x, y, b, z, k: dp_sgd.client_update(
          spec, w, x, y, batch_size=b, noise_multiplier=z if private else
          None, key=k, settings=settings),
      input_signature=[[tf.TensorSpec(s) for s in spec.shapes],
                       tf.TensorSpec((None,) + spec.input_shape),
                       tf.TensorSpec([None], tf.int32),
                       tf.TensorSpec([], tf.int32), tf.TensorSpec([]),
                       tf.TensorSpec([2], tf.int64)],
      autograph=False)


def _one_by_one(spec, weights, x, y, num_examples, batch, noise, keys,
                settings, private):
  """`dp_sgd.client_update` of each client alone, on its N_i examples."""
  update = _update_fn(spec, settings, private)
  rows = [update(weights, x[i, :m], y[i, :m], batch[i], noise[i],
                 np.asarray(keys[i], np.int64))
          for i, m in enumerate(num_examples)]
  return [np.stack(v) for v in zip(*rows)]


def _cohort_updates(spec, weights, x, y, num_examples, batch, noise, keys,
                    settings, private, form, rows_per_group=None,
                    parallel_parts=None):
  """`cohort.cohort_updates` per weight tensor, [n, *shape]."""
  if rows_per_group is None:
    rows = cohort.cohort_function(spec, settings, private, form,
                                  parallel_parts)(
        weights, x, y, num_examples, batch, noise, keys)
    sizes = [int(np.prod(s)) for s in spec.shapes]
    return [np.reshape(r, (len(x),) + tuple(s)) for r, s in zip(
        np.split(rows.numpy(), np.cumsum(sizes)[:-1], axis=1), spec.shapes)]
  run = tf.function(
      lambda w, x, y, m, b, z, k: cohort.cohort_updates(
          spec, w, x, y,
          cohort.Clients(m, b, z if private else None, k),
          settings=settings,
          layout=cohort.Layout(form, rows_per_group or cohort.ROWS_PER_GROUP,
                               parallel_parts)),
      autograph=False)
  return [v.numpy() for v in run(weights, x, y, num_examples, batch, noise,
                                 keys)]


def _assert_close(got, want):
  """Equal up to float32 round-off in the order of sums."""
  assert len(got) == len(want)
  for g, w in zip(got, want):
    assert g.shape == w.shape
    np.testing.assert_allclose(g, w, rtol=0, atol=2e-6 * max(
        1.0, np.abs(w).max()))


# The model enters a STACKED step only through its grouped forward pass
# (`cohort.grouped_forward`): the sampling and the noise are the same code
# for every model, so each of them is varied on fc (whose traces are
# cheap), and cnn5's forward pass is checked once, with one part. The parts
# are the same loop for any count (`_Step.__call__`): fc runs the default
# (2 on a CPU of 2 or more cores, 1 on a GPU), and
# test_rows_per_group_and_parts_do_not_change_the_updates runs 3.
@pytest.mark.parametrize('name,n,poisson,private,parts', [
    ('fc', 20, True, True, None),
    ('fc', 40, False, True, None),
    ('fc', 20, True, False, None),
    ('cnn5', 20, True, True, 1),
])
def test_stacked_equals_each_clients_own_update(name, n, poisson, private,
                                                parts):
  # Different N_i, b_i (E_i from 2 to 48 steps), z_i and keys.
  spec, weights, x, y, num_examples, batch, noise, keys = _cohort(
      name, n, seed=n)
  problem = (spec, weights, x, y, num_examples, batch, noise, keys)
  settings = POISSON if poisson else SHUFFLED
  want = _one_by_one(*problem, settings, private)
  got = _cohort_updates(*problem, settings, private, cohort.STACKED,
                        parallel_parts=parts)
  _assert_close(got, want)
  # Not all noise: the clients of little noise moved well beyond what their
  # noise alone would move them, eta c z_i sqrt(p E_i) / b_i.
  moved = np.sqrt(sum(np.sum(g.reshape(n, -1)**2, 1) for g in got))
  steps = settings.local_epochs * -(-num_examples // batch)
  by_noise = (settings.learning_rate * settings.clip * noise * np.sqrt(
      spec.num_parameters * steps) / batch)
  quiet = noise < 1e-3
  assert quiet.any() and np.all(moved[quiet] > 3 * by_noise[quiet])


@pytest.mark.parametrize('name,n,poisson,private,parts', [
    ('fc', 7, True, True, 2),
    ('cnn5', 7, True, True, 2),
    ('fc', 5, False, True, 3),
    ('cnn5', 4, True, False, 2),
    ('cnn', 2, True, True, 3),  # More lanes than clients; any model.
])
def test_in_lanes_equals_each_clients_own_update_bit_for_bit(
    name, n, poisson, private, parts):
  problem = _cohort(name, n, seed=20 + n)
  settings = POISSON if poisson else SHUFFLED
  want = _one_by_one(*problem, settings, private)
  got = _cohort_updates(*problem, settings, private, cohort.IN_LANES,
                        parallel_parts=parts)
  for g, w in zip(got, want):
    np.testing.assert_array_equal(g, w)


def test_lanes_split_the_work_longest_first():
  steps = tf.constant([150, 75, 38, 19, 150, 75, 150])
  batch_sizes = tf.constant([16, 32, 64, 128, 16, 32, 16])
  members = [m.numpy() for m in cohort.lanes(steps, batch_sizes, 2)]
  assert sorted(np.concatenate(members)) == list(range(7))
  cost = steps.numpy() * (batch_sizes.numpy() + cohort.STEP_COST_EXAMPLES)
  for m in members:  # Each lane's clients, longest first.
    assert list(cost[m]) == sorted(cost[m], reverse=True)
  loads = [cost[m].sum() for m in members]
  # Longest processing time first: within 4/3 of the best split.
  assert max(loads) <= 4 / 3 * max(cost.sum() / 2, cost.max())
  # More lanes than clients: the rest are empty.
  members = cohort.lanes(steps[:2], batch_sizes[:2], 4)
  assert [len(m) for m in members] == [1, 1, 0, 0]


def test_in_turn_equals_each_clients_own_update():
  # IN_TURN runs any model ('cnn' has no grouped form, and dropout).
  problem = _cohort('cnn', 4, seed=3)
  want = _one_by_one(*problem, POISSON, True)
  _assert_close(_cohort_updates(*problem, POISSON, True, cohort.IN_TURN),
                want)
  with pytest.raises(ValueError, match='no grouped form'):
    _cohort_updates(*problem, POISSON, True, cohort.STACKED, 8)
  with pytest.raises(ValueError, match='form must be one of'):
    _cohort_updates(*problem, POISSON, True, 'batched', 8)


def test_rows_per_group_and_parts_do_not_change_the_updates():
  # One row a group (the one layout that never pads a client's last group;
  # the default 8 pads the other STACKED tests' batches) and more parts than
  # the default.
  problem = _cohort('fc', 6, seed=5, batch_sizes=(3, 5, 9))
  want = _one_by_one(*problem, POISSON, True)
  _assert_close(_cohort_updates(*problem, POISSON, True, cohort.STACKED, 1,
                                3), want)


def test_empty_poisson_batches_release_the_noise_alone():
  # q_i = 1/N_i: about a third of the steps have an empty batch, some steps
  # for every client at once (the step then runs one padded group).
  problem = _cohort('cnn5', 3, seed=7, batch_sizes=(1,), sizes=(20, 30))
  want = _one_by_one(*problem, POISSON, True)
  _assert_close(_cohort_updates(*problem, POISSON, True, cohort.STACKED,
                                parallel_parts=1), want)


def test_cohort_function_is_traced_once():
  spec = models.build_model('fc', SHAPES['fc'], CLASSES)
  fn = cohort.cohort_function(spec, POISSON, True, cohort.STACKED, None)
  for n in (3, 7):
    problem = _cohort('fc', n, seed=n)
    _assert_close(_cohort_updates(*problem, POISSON, True, cohort.STACKED),
                  _one_by_one(*problem, POISSON, True))
  assert fn.experimental_get_tracing_count() == 1


def test_pack_clients_pads_to_the_largest():
  data = [(np.ones((2, 3)), np.array([1, 2])), (np.ones((4, 3)) * 2,
                                                np.arange(4))]
  x, y, sizes = cohort.pack_clients(data)
  assert x.shape == (2, 4, 3) and y.shape == (2, 4)
  np.testing.assert_array_equal(sizes, [2, 4])
  np.testing.assert_array_equal(y[0], [1, 2, 0, 0])
  assert x.dtype == np.float32 and y.dtype == np.int32 and x[1, 3, 0] == 2


@pytest.mark.parametrize('cores,threads,lanes', [
    (1, None, 1), (2, None, 2), (4, None, 4), (2, '1', 1), (4, '2', 2),
    (2, '8', 2), (2, 'x', 2)])
def test_default_form(cores, threads, lanes, monkeypatch):
  # On a CPU: in lanes where TensorFlow runs two at once (its cores, or
  # the inter-op threads a sweep's --parallel sets), else in turn.
  monkeypatch.setattr(cohort, '_cpu_cores', lambda: cores)
  if threads is None:
    monkeypatch.delenv('TF_NUM_INTEROP_THREADS', raising=False)
  else:
    monkeypatch.setenv('TF_NUM_INTEROP_THREADS', threads)
  assert cohort.parallel_lanes() == lanes
  gpu = bool(tf.config.list_logical_devices('GPU'))
  cpu_form = cohort.IN_LANES if lanes >= 2 else cohort.IN_TURN
  assert cohort.default_form(models.build_model('cnn5', (8, 8), 3)) == (
      cohort.STACKED if gpu else cpu_form)
  assert cohort.default_form(models.build_model('cnn', (8, 8), 3)) == (
      cohort.IN_TURN if gpu else cpu_form)


_ONE_THREAD_PER_LANE = """
import atexit, gc, os, sys
atexit.register(gc.freeze)  # Its exit skips collecting TensorFlow's objects.
import tensorflow as tf
from tff_hdp.robust_hdp import cohort
from tff_hdp.robust_hdp import direct_backend as robust_direct_backend
report = lambda: print(cohort.one_thread_per_lane(),
                       tf.config.threading.get_intra_op_parallelism_threads())
if sys.argv[1] == 'started':
  tf.constant(1.0) + 1.0  # TensorFlow has started: its threads are fixed.
else:  # Read at the call: first as the user who set them, then unset.
  os.environ['TF_NUM_INTRAOP_THREADS'] = '2'
  report()
  del os.environ['TF_NUM_INTRAOP_THREADS']
report()
"""


@pytest.mark.parametrize('case', ['fresh', 'started'])
def test_one_thread_per_lane_only_before_tensorflow_starts_and_unless_set(
    case):
  # A fresh process (TensorFlow's threads are fixed once it starts) on this
  # CPU: one intra-op thread where the clients run in lanes, and none set
  # where the user chose (TF_NUM_INTRAOP_THREADS, the fresh process's first
  # call) or TensorFlow has started.
  env = {k: v for k, v in os.environ.items()
         if k not in ('TF_NUM_INTRAOP_THREADS', 'TF_NUM_INTEROP_THREADS')}
  # A process of its own, forked before TensorFlow starts (run_python).
  result = binaries.run_python(['-c', _ONE_THREAD_PER_LANE, case], 300, env)
  assert result.returncode == 0, result.stderr
  lanes = (not tf.config.list_physical_devices('GPU') and
           len(os.sched_getaffinity(0)) >= 2)
  none_set = [str(False), '0']
  want = ([str(True), '1'] if lanes and case == 'fresh' else none_set)
  if case == 'fresh':
    want = none_set + want
  assert result.stdout.split() == want, result.stdout


def test_empty_cohort():
  spec = models.build_model('fc', SHAPES['fc'], CLASSES)
  weights = [tf.constant(w) for w in spec.init(0)]
  for form in cohort.FORMS:
    rows = cohort.cohort_function(spec, POISSON, True, form)(
        weights, np.zeros((0, 0) + SHAPES['fc'], np.float32),
        np.zeros((0, 0), np.int32), np.zeros(0, np.int32),
        np.zeros(0, np.int32), np.zeros(0, np.float32),
        np.zeros((0, 2), np.int64))
    assert rows.shape == (0, spec.num_parameters)


def test_the_direct_round_uses_the_cohort_where_it_is_faster(monkeypatch):
  # Where `default_form` is STACKED (a GPU) or IN_LANES (a CPU that runs
  # two lanes at once), `direct_backend.DirectRound` trains the cohort in one
  # computation; its updates are the loop's, to float32 rounding.
  spec, weights, x, y, num_examples, batch, noise, _ = _cohort('fc', 5,
                                                               seed=11)
  data = [(x[i, :m], y[i, :m]) for i, m in enumerate(num_examples)]
  info = [dict(index=np.int32(i), batch_size=batch[i],
               noise_multiplier=noise[i]) for i in range(5)]
  server = types.SimpleNamespace(initial_state=lambda: np.float32(0),
                                 server_step=None)
  # `cohort_function` resolves the default form inside its cache: uncached
  # here, each runner traces the form its leg sets.
  monkeypatch.setattr(cohort, 'cohort_function',
                      cohort.cohort_function.__wrapped__)

  def updates(form):
    monkeypatch.setattr(cohort, 'default_form', lambda spec: form)
    runner = robust_direct_backend.DirectRound(spec, weights, server,
                                               settings=POISSON)
    state = runner.initialize(np.array([3, -5], np.int64))
    rows = [runner.client_updates(state, data, info) for _ in range(2)]
    np.testing.assert_array_equal(rows[0], rows[1])  # Packed once, reused.
    return runner, rows[0].numpy()

  stacked, got = updates(cohort.STACKED)
  lanes, in_lanes = updates(cohort.IN_LANES)
  loop, want = updates(cohort.IN_TURN)
  assert stacked._cohort is not None and loop._cohort is None  # pylint: disable=protected-access
  assert lanes._cohort is not None  # pylint: disable=protected-access
  # Each leg traced its own form: only IN_LANES stitches its lanes' rows.
  for runner, in_lanes_form in ((stacked, False), (lanes, True)):
    graph = runner._cohort.get_concrete_function().graph  # pylint: disable=protected-access
    ops = {op.type for op in graph.get_operations()} | {
        node.op for f in graph.as_graph_def().library.function
        for node in f.node_def}
    assert ('DynamicStitch' in ops) is in_lanes_form
  for rows in (got, in_lanes):
    np.testing.assert_allclose(rows, want, rtol=0,
                               atol=2e-6 * max(1.0, np.abs(want).max()))
