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
"""Paper 003's aggregation rules as a `tff.aggregators` factory.

`NoiseAwareAggregationFactory(rule, n, told=...)` aggregates the n clients'
updates by any `rule.Rule` (`rule_registry` finds one by name). Every rule
needs the updates side by side at the server (Robust-HDP runs RPCA on M =
[Delta_1 | ... | Delta_n]; PFA projects onto the public updates' principal
directions), which TFF 0.87 has no intrinsic for (`federated_collect` is
gone). We express it as a sum: client i places its flattened update in row
i of an n x p matrix of zeros, and `tff.federated_sum` stacks them. What
that costs: each client contributes n x p numbers instead of p, an n-fold
traffic in a real deployment (fine in simulation; a deployment would use a
secure channel per client or an aggregation service that keeps the rows
apart). Like FedHDP's factory, it is a `WeightedAggregationFactory` whose
per-client "weight" carries the client's row index: `create` refuses any
weight type but a scalar integer (TFF's stock FedAvg builders pass a float,
1.0 or the example count), and a round fails if an index is outside [0, n)
or two clients send the same one.

What the server is told is the rule's `told` (fixed before training),
nothing else: the server computation receives the stacked updates and those
arrays alone, so a rule told nothing (Robust-HDP) weighs from M alone.

With `first_round_only` (the authors' code) a rule whose weights come from
the updates estimates them in the first round and reuses them; by default
(Algorithm 1) every round.
"""

import collections
from typing import Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp.robust_hdp import rule as rule_lib

# The start of the message of a round whose cohort the rule cannot take.
COHORT_ERROR = 'NoiseAwareAggregationFactory: too few clients'


class NoiseAwareAggregationFactory(tff.aggregators.WeightedAggregationFactory):
  """sum_i w_i Delta_i over n clients by a `rule.Rule`."""

  def __init__(self,
               rule: rule_lib.Rule,
               num_clients: int,
               *,
               told: Optional[Mapping[str, Sequence]] = None,
               first_round_only: bool = False):
    """Initializes the factory.

    Args:
      rule: The rule (`rule_registry.get(name).configured(config)`).
      num_clients: n; a round aggregates any subset of them (its rows; at
        least `rule.min_cohort(n)`).
      told: What the server is told, `rule.told(side_information)`: arrays
        of one entry per client (default: nothing).
      first_round_only: A rule whose weights come from the updates
        estimates them once (the authors' code).
    """
    if not isinstance(rule, rule_lib.Rule):
      raise TypeError('rule must be a tff_hdp.robust_hdp.rule.Rule, got '
                      f'{type(rule).__name__}')
    if num_clients < 1:
      raise ValueError(f'num_clients must be >= 1, got {num_clients}')
    told = {k: np.asarray(v) for k, v in (told or {}).items()}
    for key, value in told.items():
      if value.shape[:1] != (num_clients,):
        raise ValueError(f'told[{key!r}] of rule {rule.name} needs one entry '
                         f'per client ({num_clients}), got shape '
                         f'{value.shape}')
    self._rule = rule
    self._n = int(num_clients)
    self._told = told
    self._first_round_only = bool(first_round_only)

  @property
  def rule(self) -> rule_lib.Rule:
    return self._rule

  @property
  def num_clients(self) -> int:
    return self._n

  def server_weights(self, updates: tf.Tensor, state, present: tf.Tensor):
    """(w, sigma^2 estimate, new state) from the [n, p] stacked updates.

    Plain TensorFlow; the rule sees the present rows ([n] bool, the round's
    clients) and what it is told, restricted to them. Absent rows weigh 0
    and an empty round weighs nothing. sigma^2 is the rule's estimate
    (zeros for a rule that makes none).
    """
    if not self._rule.estimates_from_updates:
      weights, variances = self._present_weights(updates, present)
      return weights, variances, state
    estimate = lambda: self._present_weights(updates, present)
    if self._first_round_only:
      # Reused while every client of the round has an estimated weight.
      kept = tf.where(present, state['weights'],
                      tf.zeros_like(state['weights']))
      known = tf.reduce_all(tf.logical_or(tf.logical_not(present),
                                          state['weights'] > 0))
      weights, variances = tf.cond(
          tf.logical_and(state['estimated'], known),
          lambda: (tf.math.divide_no_nan(kept, tf.reduce_sum(kept)),
                   tf.zeros([self._n], tf.float64)), estimate)
    else:
      weights, variances = estimate()
    new_state = collections.OrderedDict(
        weights=weights,
        estimated=tf.logical_or(state['estimated'], tf.reduce_any(present)))
    return weights, variances, new_state

  def _present_weights(self, updates: tf.Tensor, present: tf.Tensor):
    """The rule's (w, sigma^2) on the present rows only, scattered back to
    n rows (zeros for an empty round)."""
    rows = tf.cast(tf.where(present), tf.int32)
    zeros = tf.zeros([self._n], tf.float64)

    def estimate():
      told = {k: tf.gather_nd(tf.constant(v), rows)
              for k, v in self._told.items()}
      weights, variances = self._rule.weights(tf.gather_nd(updates, rows),
                                              told)
      return (tf.scatter_nd(rows, tf.cast(weights, tf.float64), [self._n]),
              tf.scatter_nd(rows, tf.cast(variances, tf.float64), [self._n]))

    return tf.cond(tf.reduce_any(present), estimate, lambda: (zeros, zeros))

  def aggregate(self, updates: tf.Tensor, weights: tf.Tensor) -> tf.Tensor:
    """The rule's [p] aggregate of the [n, p] updates."""
    return self._rule.aggregate(updates, weights, self._told)

  def initial_state(self):
    """The aggregator's state: the estimated weights kept (first_round_only)
    and each client's count of rounds taken part in (its own, and not
    secret in paper 003's threat model: sample-level DP against an untrusted
    server that sees who sends an update)."""
    return collections.OrderedDict(
        weights=tf.zeros([self._n], tf.float64),
        estimated=tf.constant(False),
        participation=tf.zeros([self._n], tf.int32))

  def server_step(self, state, updates: tf.Tensor,
                  clients: Optional[tf.Tensor] = None,
                  weighed: Optional[tf.Tensor] = None):
    """(new state, aggregate [p] float32, measurements) from [n, p] updates.

    Plain TensorFlow, shared by the TFF process and the direct runner.
    `clients` ([n] int32, 1 for a row that holds a client's update; None:
    every row) is the round's cohort: the rule sees only those rows, an
    empty round leaves the model unchanged, and each client's participation
    count advances. `weighed` ([n, p], default `updates`) are the rows the
    weights come from: a clip-only run's noised updates, which its clients
    would have sent (`RobustHdpConfig.clip_only`). The round fails
    (`check_cohort_size`) for a cohort the rule cannot aggregate.
    """
    if clients is None:
      clients = tf.ones([self._n], tf.int32)
    present = self.check_cohort_size(clients > 0)
    weights, variances, new_state = self.server_weights(
        updates if weighed is None else weighed, state, present)
    new_state = collections.OrderedDict(
        new_state, participation=state['participation'] + tf.cast(
            present, tf.int32))
    measurements = collections.OrderedDict(
        weights=tf.cast(weights, tf.float32),
        sigma_hat2=tf.cast(variances, tf.float32))
    return new_state, self.aggregate(updates, weights), measurements

  def check_cohort_size(self, present: tf.Tensor) -> tf.Tensor:
    """`present` once asserted that the rule can aggregate that many rows:
    none, or at least `rule.min_cohort(n)`."""
    minimum = self._rule.min_cohort(self._n)
    count = tf.reduce_sum(tf.cast(present, tf.int32))
    return _with_checks([tf.debugging.Assert(
        tf.logical_or(tf.equal(count, 0), count >= minimum),
        [f'{COHORT_ERROR}: rule {self._rule.name} needs at least {minimum} '
         f'clients in a round (or none), got', count])], present)

  def create(self, value_type, weight_type) -> tff.templates.AggregationProcess:
    """The aggregation process; a client's weight is its row index.

    Each client sends its row of the n x p matrix and a one-hot count of its
    row; a round fails if a row index is outside [0, n) or two clients send
    the same one.

    Raises:
      TypeError: if `weight_type` is not a scalar integer (the row index),
        e.g. the float weight of TFF's stock builders.
    """
    weight_type = check_row_weight_type(weight_type, self._n)
    value_type = tff.types.to_type(value_type)
    specs = tff.types.type_to_tf_tensor_specs(value_type)
    n = self._n

    @tff.tensorflow.computation
    def initial_state():
      return self.initial_state()

    state_type = initial_state.type_signature.result

    @tff.tensorflow.computation(value_type, weight_type)
    def client_row(value, index):
      index = checked_row_index(index, n)
      return collections.OrderedDict(
          rows=tf.one_hot(index, n, dtype=tf.float32)[:, tf.newaxis] *
          flatten(value),
          clients=tf.one_hot(index, n, dtype=tf.int32))

    @tff.tensorflow.computation(state_type, client_row.type_signature.result)
    def server_update(state, stacked):
      updates = checked_unique_rows(stacked['rows'], stacked['clients'])
      new_state, flat, measurements = self.server_step(state, updates,
                                                       stacked['clients'])
      return new_state, unflatten(flat, specs), measurements

    @tff.federated_computation
    def init_fn():
      return tff.federated_eval(initial_state, tff.SERVER)

    @tff.federated_computation(
        init_fn.type_signature.result,
        tff.FederatedType(value_type, tff.CLIENTS),
        tff.FederatedType(weight_type, tff.CLIENTS))
    def next_fn(state, value, index):
      rows = tff.federated_map(client_row, (value, index))
      stacked = tff.federated_sum(rows)
      output = tff.federated_map(server_update, (state, stacked))
      return tff.templates.MeasuredProcessOutput(
          state=output[0], result=output[1], measurements=output[2])

    return tff.templates.AggregationProcess(init_fn, next_fn)


def flatten(value) -> tf.Tensor:
  """A structure of tensors as one float32 vector, in `tf.nest` order."""
  return tf.concat([tf.reshape(v, [-1]) for v in tf.nest.flatten(value)],
                   axis=0)


def unflatten(flat: tf.Tensor, specs):
  """The inverse of `flatten` for a structure of `tf.TensorSpec`s."""
  pieces, start = [], 0
  for spec in tf.nest.flatten(specs):
    size = int(np.prod(spec.shape))
    pieces.append(tf.reshape(flat[start:start + size], spec.shape))
    start += size
  return tf.nest.pack_sequence_as(specs, pieces)


def check_row_weight_type(weight_type, num_clients: int):
  """`weight_type` as a TFF type if it can carry a row index; else raises.

  TFF's stock builders (`tff.learning.algorithms.build_weighted_fed_avg`,
  `build_unweighted_fed_avg`) create the aggregator with a float32 weight,
  1.0 or the example count, which is no row index.
  """
  try:
    as_type = tff.types.to_type(weight_type)
  except (TypeError, ValueError):
    as_type = None
  if not (isinstance(as_type, tff.TensorType) and
          as_type.dtype in (np.int32, np.int64) and as_type.shape == ()):
    raise TypeError(
        'NoiseAwareAggregationFactory needs each client\'s weight to be its '
        f'row index, an integer in [0, {num_clients}) unique per client (a '
        f'scalar int32 or int64), got weight type {weight_type}; build the '
        'round with tff_hdp.robust_hdp.build_robust_hdp_process, which passes '
        'it: TFF\'s stock build_weighted_fed_avg / build_unweighted_fed_avg '
        'pass a float weight (1.0 or the example count) and cannot carry it')
  return as_type


def _with_checks(checks, value: tf.Tensor) -> tf.Tensor:
  """`value` with `checks` as control dependencies: inside a TFF tensorflow
  computation (a graph) an assertion nothing depends on would not run."""
  with tf.control_dependencies([c for c in checks if c is not None]):
    return tf.identity(value)


def checked_row_index(index: tf.Tensor, num_clients: int) -> tf.Tensor:
  """`index` once asserted to be in [0, n) (the round fails if not)."""
  message = ('NoiseAwareAggregationFactory: the weight of each client must '
             f'be its row index, an integer in [0, {num_clients})')
  return _with_checks([
      tf.debugging.assert_non_negative(index, message=message),
      tf.debugging.assert_less(index, tf.cast(num_clients, index.dtype),
                               message=message)
  ], index)


def checked_unique_rows(rows: tf.Tensor, clients: tf.Tensor) -> tf.Tensor:
  """`rows` once asserted that no row has more than one client.

  Args:
    rows: [n, p] the summed client rows.
    clients: [n] the summed one-hot row counts.
  """
  message = ('NoiseAwareAggregationFactory: two or more clients sent the '
             'same row index (the weight of each client must be its own row '
             'index, unique per client)')
  return _with_checks(
      [tf.debugging.assert_less_equal(clients, tf.ones_like(clients),
                                      message=message)], rows)
