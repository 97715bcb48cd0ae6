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
"""The direct backend against the TFF backend, and its batched models.

The arbiter is equivalence: from the same initial weights, inputs and noise
key, both backends must give the same global model, clip norm, noise key,
personal models and measurements to 1e-5 after several rounds: for every
algorithm with Ditto (and FedHDP without) on the FC NN, and for FedHDP with
Ditto on the CNN (with dropout) in each of its batched convolutions. The
model enters a round only through its batched forward pass
(`batched_models`), the same for every algorithm and with or without
Ditto's personal step. The schedule is built to exercise what batching
could get wrong: unequal client sizes (3..17 examples, so different step
counts and partial last batches), cohorts of different sizes, a round where
one privacy group has no client, personal models carried between rounds,
learning-rate decay and noise on. The driver's run on each backend (Poisson
cohorts, the personal-model store) is tests/test_round_conformance.py's, to
1e-5 too.
"""

import collections
import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from tff_hdp.fedhdp import algorithm_registry
from tff_hdp.fedhdp import algorithms
from tff_hdp.fedhdp import batched_models
from tff_hdp.fedhdp import executors
from tff_hdp.fedhdp import hdp_factory
from tff_hdp import models
from tff_hdp import templates
from tff_hdp.fedhdp import privacy_groups as pg
from tff_hdp.fedhdp import tff_backend
from tff_hdp.fedhdp import direct_backend
from tff_hdp.privacy import mechanism_key

TOLERANCE = 1e-5
NUM_CLIENTS = 8
# Cohorts of rounds 0, 1, 2: sizes 6, 3 (private clients only), 5.
COHORTS = ([0, 1, 2, 3, 5, 6], [1, 2, 4], [0, 3, 4, 6, 7])
NON_PRIVATE_CLIENTS = (0, 3, 6)
KEY = mechanism_key.new_key(5)  # Both backends' runs share one key.


def _spec(model):
  if model == 'fc':
    return models.fc_model((8, 8), num_classes=10, hidden=12)
  return models.cnn_model((8, 8), num_classes=5)


def _client_data(spec, seed=0):
  rng = np.random.default_rng(seed)
  sizes = [3, 17, 9, 5, 12, 7, 16, 4]
  return [(rng.normal(size=(n,) + spec.input_shape).astype(np.float32),
           rng.integers(0, spec.num_classes, n).astype(np.int32))
          for n in sizes]


def _setup(algorithm, ditto):
  algorithm = (algorithms.FedHdp(ratio=0.3) if algorithm == 'fedhdp' else
               algorithm_registry.get(algorithm))
  groups = pg.build_groups(algorithm, noise_multipliers=[0.8], lambda_p=0.2,
                           lambda_np=0.1)
  noised = algorithm.noised
  factory = hdp_factory.HeterogeneousDPFactory(
      groups, initial_clip=0.3, clipped_count_stddev=0.5 if noised else 0.0,
      mechanism_seed=5)
  settings = tff_backend.ClientSettings(
      ditto_lambdas=tuple(g.ditto_lambda for g in groups), local_epochs=2,
      batch_size=4, learning_rate=0.2, personal_learning_rate=0.15,
      lr_decay_factor=0.9, lr_decay_rounds=2, ditto=ditto, seed=3)
  group_of = [len(groups) - 1 if c in NON_PRIVATE_CLIENTS else 0
              for c in range(NUM_CLIENTS)]
  return factory, settings, group_of


def _run(backend, data, group_of, rounds=3, seed=1):
  """Rounds of `backend`; personal models kept by client id between rounds."""
  rng = np.random.default_rng(seed)
  state = backend.initialize(KEY)
  store = {}
  trace = []
  for r in range(rounds):
    cohort = COHORTS[r % len(COHORTS)]
    client_data = []
    for c in cohort:
      order = rng.permutation(len(data[c][1]))
      client_data.append((data[c][0][order], data[c][1][order]))
    theta = templates.global_weights(state)
    personal = [store.get(c, theta) for c in cohort]
    info = [collections.OrderedDict(group=np.int32(group_of[c]),
                                    client_id=np.int32(c)) for c in cohort]
    output = backend.next(state,
                          executors.Cohort(client_data, info, personal))
    state = output.state
    store.update(zip(cohort, output.clients))
    trace.append((state, dict(store), output.measurements))
  return trace


def _assert_same(trace_a, trace_b):
  assert len(trace_a) == len(trace_b)
  for (sa, pa, ma), (sb, pb, mb) in zip(trace_a, trace_b):
    assert int(sa['round_num']) == int(sb['round_num'])
    for wa, wb in zip(sa['global_weights'], sb['global_weights']):
      np.testing.assert_allclose(wa, wb, rtol=0, atol=TOLERANCE)
    np.testing.assert_allclose(sa['aggregator']['clip_norm'],
                               sb['aggregator']['clip_norm'], rtol=0,
                               atol=TOLERANCE)
    np.testing.assert_array_equal(sa['aggregator']['noise_key'],
                                  sb['aggregator']['noise_key'])
    assert sorted(pa) == sorted(pb)
    for c in pa:
      for wa, wb in zip(pa[c], pb[c]):
        np.testing.assert_allclose(wa, wb, rtol=0, atol=TOLERANCE)
    assert list(ma) == list(mb)
    for key in ma:
      assert ma[key] == pytest.approx(mb[key], abs=TOLERANCE), key


# The TFF backend's rounds by (model, algorithm, ditto): what each direct
# backend (the CNN's two convolutions) is compared with, computed once.
_REFERENCES = {}


def _tff_reference(spec, initial, factory, settings, data, group_of, key):
  if key not in _REFERENCES:
    _REFERENCES[key] = _run(
        tff_backend.TffRound(spec, initial, factory, settings), data,
        group_of)
  return _REFERENCES[key]


def _assert_same_as_tff_backend(model, algorithm, ditto, cnn_conv=None):
  spec = _spec(model)
  data = _client_data(spec)
  factory, settings, group_of = _setup(algorithm, ditto)
  initial = spec.init(1)
  reference = _tff_reference(spec, initial, factory, settings, data,
                             group_of, (model, algorithm, ditto))
  # The FC NN's cohort trains at once, in 3 concurrent parts; the CNN's in
  # calls of 4 clients (6 = 4 + 2, 3 = 3, 5 = 4 + 1), in 2 parts of up to 2
  # clients each (fewer, or none, as clients with fewer steps drop out).
  per_call, parts = (6, 3) if model == 'fc' else (4, 2)
  backend = direct_backend.DirectRound(
      spec, initial, factory, settings,
      memory_budget_bytes=per_call * direct_backend.step_bytes_per_client(
          spec, settings), parallel_parts=parts, cnn_conv=cnn_conv)
  assert backend.clients_per_call == per_call
  direct = _run(backend, data, group_of)
  _assert_same(reference, direct)
  # The comparison is not vacuous: the model moved, and so did Ditto's.
  final = reference[-1][0]['global_weights']
  assert max(np.abs(a - b).max() for a, b in zip(final, initial)) > 1e-3
  if ditto:
    personal = reference[-1][1][1]
    assert max(np.abs(a - b).max() for a, b in zip(personal, final)) > 1e-3


# Every algorithm with Ditto (its lambda per privacy group), and without it
# once: a round without Ditto's personal step is the same client work for
# every algorithm (their aggregations, checked with Ditto, do not see it).
# Not HDP-FedAvg: its groups and lambdas are FedHDP's, its r = 1 (FedHDP's
# 0.3 here) only a constant of `group_aggregation.combination_weights`.
@pytest.mark.parametrize('algorithm,ditto', [
    *((a, True) for a in algorithms.PAPER_001 if a != 'hdp_fedavg'),
    ('fedhdp', False)],
                         ids=lambda v: v if isinstance(v, str) else (
                             'ditto' if v else 'no_ditto'))
def test_same_rounds_as_tff_backend(tff_runtime, algorithm, ditto):
  del tff_runtime
  _assert_same_as_tff_backend('fc', algorithm, ditto)


@pytest.mark.parametrize('cnn_conv', ['grouped', 'im2col'])
def test_both_cnn_convolutions_same_rounds_as_tff_backend(tff_runtime,
                                                          cnn_conv):
  # The CNN's dropout and each of its batched convolutions (the default
  # one, `batched_models.default_cnn_conv`, is one of them).
  del tff_runtime
  if (cnn_conv == 'grouped' and
      not batched_models.grouped_conv_has_gradient()):
    pytest.skip('grouped convolutions have no gradient on this device')
  _assert_same_as_tff_backend('cnn', 'fedhdp', True, cnn_conv)


def test_grouped_conv_probe_agrees_with_the_cnn_gradient():
  """The probe's answer is what the batched CNN's gradient does."""
  spec = models.cnn_model((12, 12), num_classes=3)
  forward = batched_models.batched_model(spec, 'grouped').forward

  @tf.function(input_signature=[batched_models.weights_spec(spec, (None,)),
                                tf.TensorSpec([None, 4, 12, 12])])
  def gradients(weights, x):
    with tf.GradientTape() as tape:
      tape.watch(weights)
      loss = tf.reduce_sum(tf.square(forward(weights, x, None)))
    return tape.gradient(loss, weights)

  weights = [tf.ones((3,) + tuple(s)) * 0.1 for s in spec.shapes]
  try:
    result = gradients(weights, tf.ones([3, 4, 12, 12]))
    ran = all(g is not None for g in result)
  except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError):
    ran = False
  assert ran == batched_models.grouped_conv_has_gradient()
  assert batched_models.default_cnn_conv() == ('grouped' if ran else 'im2col')


def test_work_counts_padding_of_last_batches_only():
  spec = _spec('fc')
  data = _client_data(spec)
  factory, settings, _ = _setup('fedhdp', True)  # batch 4, E = 2.
  backend = direct_backend.DirectRound(spec, spec.init(0), factory,
                                       settings)
  cohort = COHORTS[0]  # Sizes 3, 17, 9, 5, 7, 16: 1, 5, 3, 2, 2, 4 batches.
  theta = spec.init(0)
  info = [collections.OrderedDict(group=np.int32(0), client_id=np.int32(c))
          for c in cohort]
  backend.next(backend.initialize(KEY), executors.Cohort(
      [data[c] for c in cohort], info, [theta] * len(cohort)))
  # Clients by steps (E = 2): 17 examples (10 steps), 16 (8), 9 (6), 5 and
  # 7 (4), 3 (2). Active clients per step: 6, 6, 5, 5, 3, 3, 2, 2, 1, 1;
  # every step has a full batch of 4 rows but the last (client 17's 1 row).
  assert backend.last_round_work == {
      'examples': 57 * 2,
      'computed': 4 * (6 + 6 + 5 + 5 + 3 + 3 + 2 + 2 + 1) + 1,
      'padded_to_largest': 4 * 6 * 5 * 2,  # 6 clients x 5 batches.
  }
  # Equal-sized clients (6 examples: batches of 4 and 2) run no padding.
  backend.next(backend.initialize(KEY), executors.Cohort(
      [(x[:6], y[:6]) for x, y in (data[c] for c in (1, 4, 6))], info[:3],
      [theta] * 3))
  assert backend.last_round_work == {
      'examples': 3 * 6 * 2, 'computed': 3 * 6 * 2,
      'padded_to_largest': 3 * 2 * 4 * 2}


def test_unknown_cnn_convolution_is_refused():
  with pytest.raises(ValueError, match="cnn_conv must be one of"):
    batched_models.batched_model(_spec('cnn'), 'winograd')


@pytest.mark.parametrize('model', ['fc', 'cnn', 'cnn_im2col'])
def test_batched_forward_is_per_client_forward(model):
  spec = _spec(model.split('_')[0])
  batched = batched_models.batched_model(
      spec, 'im2col' if model.endswith('im2col') else None)
  rng = np.random.default_rng(2)
  k, b = 3, 5
  weights = [tf.constant(np.stack([w * (1 + 0.1 * i) for i in range(k)]))
             for w in spec.init(0)]
  x = tf.constant(rng.normal(size=(k, b) + spec.input_shape), tf.float32)
  seeds = tf.constant([[1, 2], [3, 4], [5, 6]], tf.int32)
  for training_mode in (False, True):
    logits = batched.forward(weights, x, seeds if training_mode else None)
    for i in range(k):
      own = [w[i] for w in weights]
      # A client's smaller last batch (3 of 5 rows) draws the same dropout
      # rows as the first 3 rows of a full one.
      for rows in (b, 3):
        expected = spec.apply(own, x[i, :rows], training_mode,
                              seeds[i] if training_mode else None)
        np.testing.assert_allclose(logits[i, :rows], expected, rtol=0,
                                   atol=1e-5)
  if model.startswith('cnn'):  # Dropout is on while training and differs by client.
    eval_logits = batched.forward(weights, x, None)
    assert not np.allclose(logits, eval_logits)


def test_other_models_map_their_own_forward():
  spec = dataclasses.replace(models.fc_model((2, 3), 4, hidden=5),
                             name='custom')
  batched = batched_models.batched_model(spec)
  assert batched.forward is not batched_models.batched_model(
      models.fc_model((2, 3), 4, hidden=5)).forward
  weights = [tf.constant(np.stack([w, 2 * w])) for w in spec.init(0)]
  x = tf.constant(np.random.default_rng(1).normal(size=(2, 3, 2, 3)),
                  tf.float32)
  logits = batched.forward(weights, x, tf.constant([[1, 2], [3, 4]]))
  for i in range(2):
    np.testing.assert_allclose(
        logits[i], spec.apply([w[i] for w in weights], x[i]), rtol=0,
        atol=1e-6)


def test_masked_loss_is_mean_over_real_examples():
  logits = tf.constant(np.random.default_rng(0).normal(size=(2, 4, 3)),
                       tf.float32)
  labels = tf.constant([[0, 1, 2, 0], [2, 2, 1, 0]])
  mask = tf.constant([[1, 1, 1, 1], [1, 1, 0, 0]], tf.float32)
  losses = batched_models.masked_loss(logits, labels, mask)
  assert float(losses[0]) == pytest.approx(
      float(models.loss_fn(logits[0], labels[0])), rel=1e-6)
  assert float(losses[1]) == pytest.approx(
      float(models.loss_fn(logits[1, :2], labels[1, :2])), rel=1e-6)


def _direct(model='fc', algorithm='fedhdp', ditto=True):
  spec = _spec(model)
  factory, settings, group_of = _setup(algorithm, ditto)
  return (direct_backend.DirectRound(spec, spec.init(1), factory,
                                     settings),
          _client_data(spec), group_of)


def test_client_without_examples_is_unchanged_and_order_does_not_matter():
  backend, data, group_of = _direct()
  spec = _spec('fc')
  empty = (np.zeros((0,) + spec.input_shape, np.float32),
           np.zeros((0,), np.int32))
  state = backend.initialize(KEY)
  theta = templates.global_weights(state)
  own = [w + 0.5 for w in theta]
  cohorts = ([0, 1, 2], [2, 0, 1])
  results = []
  for cohort in cohorts:
    client_data = [empty if c == 2 else data[c] for c in cohort]
    personal = [own if c == 2 else theta for c in cohort]
    info = [collections.OrderedDict(group=np.int32(group_of[c]),
                                    client_id=np.int32(c)) for c in cohort]
    output = backend.next(state,
                          executors.Cohort(client_data, info, personal))
    by_client = dict(zip(cohort, output.clients))
    for w, w0 in zip(by_client[2], own):  # No step: personal untouched.
      np.testing.assert_array_equal(w, w0)
    results.append((output.state, by_client, output.measurements))
  (s0, p0, m0), (s1, p1, m1) = results
  for a, b in zip(s0['global_weights'], s1['global_weights']):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
  for c in (0, 1):
    for a, b in zip(p0[c], p1[c]):
      np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
  assert m0 == pytest.approx(m1, abs=1e-6)


def test_varying_cohorts_do_not_retrace():
  backend, data, group_of = _direct('fc', 'hdp_fedavg')
  # pylint: disable=protected-access
  client_work, aggregate = backend._client_work, backend._aggregate
  _run(backend, data, group_of, rounds=1)
  traces = (client_work.experimental_get_tracing_count(),
            aggregate.experimental_get_tracing_count())
  _run(backend, data, group_of, rounds=6, seed=4)  # Sizes 6, 3, 5, ...
  assert (client_work.experimental_get_tracing_count(),
          aggregate.experimental_get_tracing_count()) == traces
  assert traces == (1, 1)


def test_validation_messages():
  spec = _spec('fc')
  factory, settings, _ = _setup('fedhdp', True)
  with pytest.raises(ValueError, match='one lambda per privacy group'):
    direct_backend.DirectRound(
        spec, spec.init(0), factory,
        dataclasses.replace(settings, ditto_lambdas=(0.1,)))
  with pytest.raises(ValueError, match='initial_weights must have the shapes'):
    direct_backend.DirectRound(spec, spec.init(0)[:2], factory,
                               settings)
  with pytest.raises(ValueError, match='memory_budget_bytes must be > 0'):
    direct_backend.DirectRound(spec, spec.init(0), factory,
                               settings, memory_budget_bytes=0)
  with pytest.raises(ValueError, match='parallel_parts must be >= 1'):
    direct_backend.DirectRound(spec, spec.init(0), factory,
                               settings, parallel_parts=0)
  with pytest.raises(ValueError, match='local_epochs must be >= 1'):
    direct_backend.DirectRound(
        spec, spec.init(0), factory,
        dataclasses.replace(settings, local_epochs=0))

