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
"""UDP-Alg (paper 004) as a `tff.learning.templates.LearningProcess`.

    process = build_udp_process(model, Preferences(num_examples=...), ...)
    source = build_data_source(process, data)  # Poisson cohorts, for programs
    state = process.initialize()
    output = process.next(state, clients)      # clients: `client_elements`
    process.epsilon(output.state)              # {'users': user-level epsilon}

The server is trusted (paper 004): its state holds the round number, phi and
every user's embedding v_u, and a noise key only when a `mechanism_seed`
makes the run reproducible (else every round's noise is fresh and secret).
`process.get_model_weights` gives phi; user u's personal model is
`process.hypernetwork.generate(phi, v_u)`.

A round, from the clients alone: each client is a one-element dataset
(`client_type`, made by `client_elements`) carrying its user index u, its
weight w_u, its row in the cohort, its examples and its K batches. The
server assembles the cohort from one-hot rows, generates the cohort's
theta_u = h(phi, v_u) as one [max_cohort, ...] stack and broadcasts it;
each client trains its own row and returns its Delta_u in its row of a zero
stack, and the server runs the VJPs, clipping, weighting and noise
(`hypernetfl`) and the embeddings' step. Each user receiving its own model,
the process is built directly as a `tff_hdp.templates.PrivateLearningProcess`
(not with `compose_learning_process`); `build_udp_process` returns a
`UdpProcess`, which declares its hypernetwork and users. Privacy is
user-level (`udp_privacy`), a bound for Poisson cohorts of rate q
(`build_data_source`); the metrics hold only the released noise stddev.
In depth: docs/udp.md (On TFF).
"""

import collections
import dataclasses
import math
import types
from typing import NamedTuple, Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import models
from tff_hdp import templates
from tff_hdp.data import client_data
from tff_hdp.data import federated_data
from tff_hdp.privacy import mechanism_key
from tff_hdp.privacy import preferences as preferences_lib
from tff_hdp.udp import algorithm as algorithm_lib
from tff_hdp.udp import algorithm_registry
from tff_hdp.udp import config as config_lib
from tff_hdp.udp import hypernetfl
from tff_hdp.udp import hypernetwork
from tff_hdp.privacy import round_privacy

PRIVACY_UNIT = 'users'  # The accounted unit of `process.epsilon`.


# The users' weights, the estimator's constants, the cohort's rows and the
# users' batches: what the driver (`training`, which re-exports them) and the
# process share, defined once here so that the process does not depend on
# the driver that runs it.


def weights_from_sizes(num_examples: Sequence[int],
                       sample_cap: float) -> np.ndarray:
  """w_u = min(|D_u| / w_hat, 1) for every user."""
  sizes = np.asarray(num_examples, np.float64)
  return np.minimum(sizes / sample_cap, 1.0)


def estimator_constants(weights: np.ndarray,
                        sampling_rate: float) -> tuple[float, float]:
  """(max_u w_u, q W): the estimator's sensitivity weight and denominator,
  W = sum over all users of w_u (public constants of the run)."""
  return float(np.max(weights)), sampling_rate * float(np.sum(weights))


def default_max_cohort(num_users: int, rate: float) -> int:
  """Rows of the TFF process's cohort stack: qN + 6 standard deviations of
  the Poisson cohort size (exceeded with probability below 1e-8), at most
  N."""
  mean = rate * num_users
  return min(num_users,
             int(math.ceil(mean + 6 * math.sqrt(mean * (1 - rate)))) + 1)


def local_batches(data: federated_data.FederatedData, users: np.ndarray,
                  steps: int, batch_size: int, rng: np.random.Generator
                  ) -> hypernetfl.UserBatches:
  """The sampled users' data and the K batches each takes.

  A user with n >= b examples takes b distinct ones at random each step
  (pFedHN draws a fresh shuffled batch each inner step); one with n < b
  takes all of them every step (the rest is masked padding).

  Returns:
    x [B, n_max, ...], y [B, n_max], indices [K, B, b], mask [K, B, b].
  """
  sizes = np.array([len(data.train[u][1]) for u in users], np.int64)
  n_max = int(sizes.max())
  x = np.zeros((len(users), n_max) + tuple(data.input_shape), np.float32)
  y = np.zeros((len(users), n_max), np.int32)
  indices = np.zeros((steps, len(users), batch_size), np.int32)
  mask = np.zeros((steps, len(users), batch_size), np.float32)
  for i, u in enumerate(users):
    n = int(sizes[i])
    x[i, :n], y[i, :n] = data.train[u]
    if n >= batch_size:
      order = np.argsort(rng.random((steps, n)), axis=1)
      indices[:, i] = order[:, :batch_size]
      mask[:, i] = 1.0
    else:
      indices[:, i, :n] = np.arange(n)
      mask[:, i, :n] = 1.0
  return hypernetfl.UserBatches(x, y, indices, mask)


def client_element_type(target: models.ModelSpec, local_steps: int,
                        batch_size: int) -> tff.Type:
  """What one client holds: its examples (x, y, zero-padded to the cohort's
  largest user), its K batches (indices into them and a mask of the real
  examples), its user index, its weight w_u and its row in the cohort."""
  return tff.types.to_type(collections.OrderedDict(
      x=(np.float32, (None,) + tuple(target.input_shape)),
      y=(np.int32, (None,)),
      indices=(np.int32, (local_steps, batch_size)),
      mask=(np.float32, (local_steps, batch_size)),
      user=np.int32, weight=np.float32, row=np.int32))


def client_type(target: models.ModelSpec, local_steps: int,
                batch_size: int) -> tff.SequenceType:
  """What the process takes per client: a one-element dataset of its
  `client_element_type`. TFF's program platform (`train_model` on a
  `tff.program.NativeFederatedContext`) passes a round's clients through
  only when each is a sequence."""
  return tff.SequenceType(client_element_type(target, local_steps,
                                              batch_size))


def client_elements(users, weights, x, y, indices, mask,
                    max_cohort: int) -> list[tf.data.Dataset]:
  """`local_batches`' arrays of a cohort as its clients (`client_type`),
  row i being user `users[i]` of weight `weights[i]`."""
  count = len(users)
  if count > max_cohort:
    raise ValueError(f'{count} users sampled, more than max_cohort '
                     f'{max_cohort}')
  # Each client's examples stay zero-padded to n_max rows: its batch
  # indices only point at its real ones.
  return [
      tf.data.Dataset.from_tensors(collections.OrderedDict(
          x=x[row], y=y[row], indices=indices[:, row], mask=mask[:, row],
          user=np.int32(users[row]), weight=np.float32(weights[row]),
          row=np.int32(row)))
      for row in range(count)
  ]


def udp_privacy(sampling_rate: float, noise_multiplier: float, *,
                clip_and_noise: bool = True, delta: float,
                accountant: str = 'rdp',
                mechanism_seed: Optional[int] = None
                ) -> round_privacy.RoundPrivacy:
  """User-level accounting: each round one Poisson-subsampled Gaussian of
  rate q and multiplier z (its stddev z max_w S over the sensitivity
  max_w S of the weighted clipped sum). Without clipping and noise (the
  Noiseless baseline), z = 0: epsilon is infinite. Not a bound when the
  noise and users are reproducible from a published `mechanism_seed`."""
  return round_privacy.RoundPrivacy(
      level='user-level',
      mechanisms={PRIVACY_UNIT: (float(sampling_rate),
                                 float(noise_multiplier) if clip_and_noise
                                 else 0.0, 1)},
      delta=delta, accountant=accountant,
      **mechanism_key.ledger_terms(mechanism_seed))


def state_round_num(state) -> int:
  """Rounds a process state has run."""
  return int(state['round_num'])


def round_constants(config: config_lib.UdpConfig, max_weight: float,
                    denominator: float,
                    noise_multiplier: Optional[float] = None
                    ) -> hypernetfl.RoundConstants:
  """The rounds' constants of a run of `config`, with its estimator's
  max_u w_u and q W; z is `noise_multiplier` if given, else the config's
  mechanism's."""
  return hypernetfl.RoundConstants(
      clip=config.clip,
      noise_multiplier=(config.mechanism_noise_multiplier
                        if noise_multiplier is None else noise_multiplier),
      max_weight=max_weight, denominator=denominator,
      local_learning_rate=config.local_learning_rate,
      hyper_learning_rate=config.hyper_learning_rate,
      embedding_learning_rate=config.embedding_learning_rate,
      clip_and_noise=config.clips)


class Sizes(NamedTuple):
  """What a process's types are sized for (`compose_udp_process`).

  Attributes:
    num_users: N, the users (the embeddings' rows).
    max_cohort: Rows of the cohort stack (the most users a round may take).
    local_steps: K, each user's batches in a round.
    batch_size: The examples of a batch.
  """
  num_users: int
  max_cohort: int
  local_steps: int
  batch_size: int


class _Types(NamedTuple):
  """The TFF types of a process's values."""
  state: tff.Type       # The server state.
  weights: tff.Type     # `tff.learning.models.ModelWeights` of phi.
  cohort: tff.Type      # The cohort's users, weights and count.
  data: tff.Type        # A client's dataset (`client_type`).
  stack: tff.Type       # [max_cohort, ...] per target tensor.


def _process_types(net: hypernetwork.HyperNetwork, sizes: Sizes,
                   key_in_state: bool) -> _Types:
  """The types of a process of `sizes.num_users` users and a cohort stack of
  `sizes.max_cohort` rows (its state with `noise_key` if `key_in_state`)."""
  num_users, rows, local_steps, batch_size = sizes
  phi_type = [(np.float32, s) for s in net.shapes]
  state = collections.OrderedDict(
      round_num=np.int32, phi=phi_type,
      embeddings=(np.float32, (num_users, net.embedding_dim)))
  if key_in_state:
    state['noise_key'] = (np.int64, mechanism_key.KEY_SHAPE)
  return _Types(
      state=tff.types.to_type(state),
      weights=tff.types.to_type(tff.learning.models.ModelWeights(
          trainable=phi_type, non_trainable=[])),
      cohort=tff.types.to_type(collections.OrderedDict(
          users=(np.int32, (rows,)), weights=(np.float32, (rows,)),
          count=np.int32)),
      data=client_type(net.target, local_steps, batch_size),
      stack=tff.types.to_type(
          [(np.float32, (rows,) + tuple(s)) for s in net.target.shapes]))


def _initialize_fn(net: hypernetwork.HyperNetwork, num_users: int,
                   seed: int, mechanism_seed: Optional[int],
                   key_in_state: bool):
  """phi^0 and the embeddings (public `seed`) and, if `key_in_state`, the
  noise key (`mechanism_key.key_tensor`), at the server."""
  phi0 = net.init(seed)
  embeddings0 = net.init_embeddings(num_users, seed)

  @tff.tensorflow.computation
  def initial_state():
    state = collections.OrderedDict(
        round_num=tf.constant(0, tf.int32),
        phi=[tf.constant(p) for p in phi0],
        embeddings=tf.constant(embeddings0))
    if key_in_state:
      state['noise_key'] = mechanism_key.key_tensor(mechanism_seed)
    return state

  @tff.federated_computation
  def initialize_fn():
    return tff.federated_eval(initial_state, tff.SERVER)

  return initialize_fn


def _client_computations(target: models.ModelSpec, types: _Types,
                         rows: int, local_learning_rate: float):
  """(a client's one-hot row of the cohort, a client's local work)."""

  @tff.tensorflow.computation(types.data)
  def cohort_row(dataset):
    # The cohort's users and weights as one-hot rows, summed at the server
    # (adding zeros is exact), and a count of one per client.
    data = dataset.get_single_element()
    one_hot = tf.one_hot(data['row'], rows, dtype=tf.int32)
    return collections.OrderedDict(
        users=one_hot * data['user'],
        weights=tf.cast(one_hot, tf.float32) * data['weight'],
        count=tf.constant(1, tf.int32))

  @tff.tensorflow.computation(types.data, types.stack)
  def client_work(dataset, thetas):
    data = dataset.get_single_element()
    row = data['row']
    mine = [t[row][tf.newaxis] for t in thetas]
    delta = hypernetfl.local_deltas(
        target, mine, data['x'][tf.newaxis], data['y'][tf.newaxis],
        data['indices'][:, tf.newaxis], data['mask'][:, tf.newaxis],
        local_learning_rate)
    one_hot = tf.one_hot(row, rows)
    return [tf.reshape(one_hot, [-1] + [1] * (d.shape.rank - 1)) * d
            for d in delta]

  return cohort_row, client_work


def round_metrics(noise_stddev):
  """A round's metrics: the released `noise_stddev` and, as every
  `tff.learning` process reports and `tff.learning.programs.train_model`
  requires, `client_work/train`, empty (no client reports an unnoised
  training metric)."""
  return collections.OrderedDict(
      noise_stddev=noise_stddev,
      client_work=collections.OrderedDict(train=collections.OrderedDict()))


def _server_computations(net: hypernetwork.HyperNetwork, types: _Types,
                         constants: hypernetfl.RoundConstants,
                         key_in_state: bool):
  """(the cohort's generated models, the server's step from its deltas)."""

  @tff.tensorflow.computation(types.state, types.cohort)
  def generate(state, cohort):
    return net.generate(state['phi'],
                        tf.gather(state['embeddings'], cohort['users']))

  @tff.tensorflow.computation(types.state, types.cohort, types.stack)
  def server_step(state, cohort, deltas):
    count = cohort['count']
    users = cohort['users'][:count]
    if key_in_state:
      key, next_key = tf.unstack(
          tf.random.experimental.stateless_split(state['noise_key'], 2))
    else:
      key = mechanism_key.key_tensor(None)  # Fresh every round.
    embeddings = tf.gather(state['embeddings'], users)
    deltas = [d[:count] for d in deltas]
    total, _ = hypernetfl.cohort_gradient(
        net, state['phi'], embeddings, deltas, cohort['weights'][:count],
        clip=constants.clip, clip_and_noise=constants.clip_and_noise)
    step = hypernetfl.phi_step(state['phi'], total, key, constants)
    embedding_grads = net.embedding_vjps(state['phi'], embeddings, deltas)
    new_rows = embeddings - constants.embedding_learning_rate * embedding_grads
    new_state = collections.OrderedDict(
        round_num=state['round_num'] + 1,
        phi=step.phi,
        embeddings=tf.tensor_scatter_nd_update(
            state['embeddings'], users[:, tf.newaxis], new_rows))
    if key_in_state:
      new_state['noise_key'] = next_key
    return new_state, round_metrics(step.noise_stddev)

  return generate, server_step


def _next_fn(net: hypernetwork.HyperNetwork, types: _Types,
             constants: hypernetfl.RoundConstants, rows: int,
             key_in_state: bool):
  """`next(state@SERVER, clients@CLIENTS)`: the round (module doc)."""
  cohort_row, client_work = _client_computations(
      net.target, types, rows, constants.local_learning_rate)
  generate, server_step = _server_computations(net, types, constants,
                                               key_in_state)

  @tff.federated_computation(tff.FederatedType(types.state, tff.SERVER),
                             tff.FederatedType(types.data, tff.CLIENTS))
  def next_fn(state, clients):
    cohort = tff.federated_sum(tff.federated_map(cohort_row, clients))
    thetas = tff.federated_broadcast(
        tff.federated_map(generate, (state, cohort)))
    deltas = tff.federated_sum(
        tff.federated_map(client_work, (clients, thetas)))
    result = tff.federated_map(server_step, (state, cohort, deltas))
    return tff.learning.templates.LearningProcessOutput(
        state=result[0], metrics=result[1])

  return next_fn


def _model_weights_fns(types: _Types):
  """(get_model_weights, set_model_weights): phi in and out of a state."""

  @tff.tensorflow.computation(types.state)
  def get_model_weights(state):
    return tff.learning.models.ModelWeights(trainable=state['phi'],
                                            non_trainable=[])

  @tff.tensorflow.computation(types.state, types.weights)
  def set_model_weights(state, weights):
    new_state = collections.OrderedDict(state)
    new_state['phi'] = weights.trainable
    return new_state

  return get_model_weights, set_model_weights


def compose_udp_process(net: hypernetwork.HyperNetwork,
                        constants: hypernetfl.RoundConstants, *,
                        sizes: Sizes,
                        privacy: round_privacy.RoundPrivacy, seed: int,
                        mechanism_seed: Optional[int] = None,
                        key_in_state: Optional[bool] = None
                        ) -> templates.PrivateLearningProcess:
  """The learning process of one run, its constants and sizes given (what
  the driver and `build_udp_process` both run; `build_udp_process` derives
  them).

  phi^0 and the embeddings are `net.init(seed)` and
  `net.init_embeddings(sizes.num_users, seed)`. With `key_in_state` (default:
  with a `mechanism_seed`) the state's `noise_key` starts at
  `mechanism_key.key_tensor(mechanism_seed)` and is split every round;
  without, every round's noise is fresh and the state holds no key.
  `privacy` must describe the noise and the run's sampling (`udp_privacy`).
  """
  if key_in_state is None:
    key_in_state = mechanism_seed is not None
  types = _process_types(net, sizes, key_in_state)
  return templates.PrivateLearningProcess(
      _initialize_fn(net, sizes.num_users, seed, mechanism_seed,
                     key_in_state),
      _next_fn(net, types, constants, sizes.max_cohort, key_in_state),
      *_model_weights_fns(types),
      accounting=templates.Accounting(privacy, state_round_num),
      client_hint='a user\'s K batches with its index and weight')


class UdpProcess(templates.PoissonProcess):
  """What `build_udp_process` returns: a `PrivateLearningProcess` with its
  hypernetwork and its users.

  Attributes:
    config: The `UdpConfig` it runs (w_hat filled in,
      `UdpConfig.for_users`).
    hypernetwork: h (`hypernetwork.HyperNetwork`): user u's model is
      `hypernetwork.generate(phi, v_u)`.
    num_examples: |D_u| of every user, in user-index order.
    num_users: N.
    user_weights: w_u = min(|D_u| / w_hat, 1) of every user (float32 [N]).
    max_cohort: Rows of the cohort stack: the most users a round may take.
    local_steps: K, each sampled user's local steps (`config.local_steps`).
    batch_size: A local step's examples (`config.batch_size`).
    sampling_rate: q, each user's probability to take part in a round.
  """

  def __init__(self, *args, config: config_lib.UdpConfig,
               hypernetwork: 'hypernetwork.HyperNetwork',
               num_examples: Sequence[int], max_cohort: int, **kwargs):
    """`args` and `kwargs` as `PrivateLearningProcess`'s."""
    super().__init__(*args, config=config, **kwargs)
    self._hypernetwork = hypernetwork
    self._num_examples = tuple(int(n) for n in num_examples)
    self._max_cohort = max_cohort
    self._batch_draws = None  # `clients_from`'s generator, made on first use.

  @property
  def hypernetwork(self) -> 'hypernetwork.HyperNetwork':
    return self._hypernetwork

  @property
  def num_examples(self) -> tuple[int, ...]:
    return self._num_examples

  @property
  def num_users(self) -> int:
    return len(self._num_examples)

  @property
  def user_weights(self) -> np.ndarray:
    return weights_from_sizes(self._num_examples,
                              self._config.sample_cap).astype(np.float32)

  @property
  def max_cohort(self) -> int:
    return self._max_cohort

  @property
  def local_steps(self) -> int:
    return self._config.local_steps

  def clients_from(self, datasets) -> list[tf.data.Dataset]:
    """`next`'s cohort from {user index: a tf.data dataset of (x, y)
    examples or batches, as TFF's tutorials make them}, each user's K
    batches drawn as `build_data_source` draws them (`_batch_rng`). A user
    must bring the |D_u| it was built with."""
    arrays = client_data.cohort_arrays(datasets, self.num_users)
    for u, (_, y) in arrays.items():
      if len(y) != self.num_examples[u]:
        raise ValueError(f'user {u} has {len(y)} examples, the process was '
                         f'built for num_examples {self.num_examples[u]}')
    if not arrays:
      return []
    users = np.array(sorted(arrays), np.int64)
    cohort = types.SimpleNamespace(
        train=arrays, input_shape=arrays[int(users[0])][0].shape[1:])
    x, y, indices, mask = local_batches(cohort, users, self.local_steps,
                                        self.batch_size, self._batch_rng())
    return client_elements(users, self.user_weights[users], x, y, indices,
                           mask, self.max_cohort)

  def _batch_rng(self) -> np.random.Generator:
    """Where `clients_from` draws the users' batches, one generator for the
    process's calls: fresh secret randomness, or, with the config's
    published `mechanism_seed`, a stream of it (as the noise is), so that a
    reproduction's k-th call draws what the run's k-th call drew."""
    if self._batch_draws is None:
      seed = self.config.mechanism_seed
      self._batch_draws = (
          mechanism_key.fresh_rng() if seed is None else
          mechanism_key.round_rng(
              mechanism_key.cohort_key(mechanism_key.new_key(seed)), 0,
              stream=_CLIENTS_FROM_STREAM))
    return self._batch_draws


# `round_rng`'s stream of `clients_from`'s batches under a mechanism seed,
# apart from the driver's and the data source's rounds (stream 0).
_CLIENTS_FROM_STREAM = 1


def _checked_sizes(num_examples: Sequence[int]) -> np.ndarray:
  """|D_u| of every user, or a one-line ValueError."""
  sizes = np.asarray(list(num_examples))
  if sizes.ndim != 1 or not len(sizes):
    raise ValueError('num_examples must give every user its number of '
                     'examples, got none')
  if np.any(sizes < 1) or np.any(sizes != np.round(sizes)):
    raise ValueError('num_examples must be integers >= 1, got '
                     f'{sizes[(sizes < 1) | (sizes != np.round(sizes))][0]!r}')
  return sizes


def build_udp_process(
    model, preferences: preferences_lib.Preferences, *,
    algorithm: Optional[algorithm_lib.Algorithm] = None,
    config: Optional[config_lib.UdpConfig] = None,
    max_cohort: Optional[int] = None) -> UdpProcess:
  """UDP-Alg (paper 004, Algorithm 1) as a `LearningProcess`.

  Every hyperparameter is `config`'s, a `tff_hdp.udp.UdpConfig` (its
  defaults: the paper's S, z, q, delta, lambda, eta; pFedHN's K, batch size,
  zeta and hypernetwork): `algorithm` 'udp' (clipped, weighted, noised),
  'clip_only' (z = 0) or 'noiseless' (no clipping, no noise, epsilon
  infinite), the public `seed` (phi^0, the embeddings) and `mechanism_seed`
  (None: fresh secret noise every round; an integer: reproducible, and
  epsilon then not a guarantee), and `rounds`, the horizon: the users' budget
  is their epsilon after that many rounds (`process.privacy.budgets`,
  `process.privacy.calibrated_rounds`), and `next` refuses a round past it.
  The fields of only a driver's run (the target's name, evaluation, the
  backend) are not used. Rounds must draw each
  user independently with probability q (Poisson; `build_data_source`
  does): the estimator divides by the expected weight q W, so
  `process.epsilon(state)['users']` is the user-level epsilon of phi, a
  bound.

  Args:
    model: The target network h generates, a
      `tff.learning.models.FunctionalModel` or a `tff_hdp.models.ModelSpec`
      (only its shapes and forward pass are used: theta_u comes from h).
    preferences: A `tff_hdp.privacy.Preferences` with `num_examples`:
      |D_u| of every user, in the order of the user indices the process
      will see (0, 1, ...); gives w_u = min(|D_u| / w_hat, 1), its maximum
      and W = sum_u w_u. Levels or epsilons per user are refused: every
      user has one user-level epsilon (`config.noise_multiplier`).
    algorithm: The variant as an object (`tff_hdp.udp.algorithms.Udp()`,
      `ClipOnly()`, `Noiseless()`, or an `tff_hdp.udp.algorithm.Algorithm`
      of yours, registered under its name if it is not); by default the
      one `config.algorithm` names. pFedHN's one user a step is the
      driver's, refused here.
    config: The hyperparameters (default `UdpConfig()`).
    max_cohort: Rows of the cohort stack (the most users a round may take);
      None for qN + 6 standard deviations (`default_max_cohort`).

  Returns:
    A `UdpProcess` (a `tff_hdp.templates.PrivateLearningProcess`) whose
    `next` takes per client a `client_type` dataset (`build_data_source`
    makes them); `process.hypernetwork` is h, `process.user_weights` the
    w_u.

  Raises:
    ValueError: One line naming the field that is out of range.
    TypeError: If `model` is neither kind of model, or `config` is not a
      `UdpConfig`.
  """
  spec = models.as_model_spec(model)
  preferences = preferences_lib.as_preferences(preferences).checked(
      'UDP-Alg', ['num_examples'])
  config = _checked_config(config, algorithm)
  sizes = _checked_sizes(preferences.num_examples)
  config = config.for_users(sizes)
  num_users = len(sizes)
  rows = _cohort_rows(max_cohort, num_users, config.sampling_rate)
  net = hypernetwork.HyperNetwork(
      spec, config.embedding_dim or
      hypernetwork.default_embedding_dim(num_users),
      hidden=config.hidden, hidden_layers=config.hidden_layers)
  weights = weights_from_sizes(sizes, config.sample_cap)
  process = compose_udp_process(
      net, round_constants(
          config, *estimator_constants(weights, config.sampling_rate)),
      sizes=Sizes(num_users, max_cohort=rows, local_steps=config.local_steps,
                  batch_size=config.batch_size),
      privacy=udp_privacy(config.sampling_rate, config.noise_multiplier,
                          clip_and_noise=config.private, delta=config.delta,
                          accountant=config.accountant,
                          mechanism_seed=config.mechanism_seed
                          ).budgeted_for(config.rounds),
      seed=config.seed, mechanism_seed=config.mechanism_seed)
  return UdpProcess.wrapping(process, config=config, hypernetwork=net,
                             num_examples=sizes, max_cohort=rows)


def _checked_config(config: Optional[config_lib.UdpConfig],
                    algorithm: Optional[algorithm_lib.Algorithm] = None
                    ) -> config_lib.UdpConfig:
  """`config` (default `UdpConfig()`) running `algorithm` (registered
  under its name if it is not yet), validated, or a one-line error."""
  config = config_lib.UdpConfig() if config is None else config
  if not isinstance(config, config_lib.UdpConfig):
    raise TypeError('config must be a tff_hdp.udp.UdpConfig, got '
                    f'{type(config).__name__}')
  if algorithm is not None:
    if not isinstance(algorithm, algorithm_lib.Algorithm):
      raise TypeError('algorithm must be a tff_hdp.udp.algorithm.Algorithm, '
                      f'got {type(algorithm).__name__}')
    if algorithm.name not in algorithm_registry.names():
      algorithm_registry.register(algorithm)
    elif algorithm_registry.get(algorithm.name) != algorithm:
      raise ValueError(f'algorithm {algorithm!r} is not the registered '
                       f'{algorithm.name!r}, '
                       f'{algorithm_registry.get(algorithm.name)!r}')
    config = dataclasses.replace(config, algorithm=algorithm.name)
  config.validate()
  if config.variant.one_user_per_step:
    cohorts = [n for n in algorithm_registry.names()
               if not algorithm_registry.get(n).one_user_per_step]
    raise ValueError(f'algorithm must be one of {", ".join(cohorts)} '
                     "(pFedHN's one user per step is the driver's), got "
                     f'{config.algorithm!r}')
  return config


def _cohort_rows(max_cohort: Optional[int], num_users: int,
                 sampling_rate: float) -> int:
  """The cohort stack's rows: `max_cohort`, checked, or by default
  `default_max_cohort`."""
  if max_cohort is None:
    return default_max_cohort(num_users, sampling_rate)
  if not 1 <= max_cohort <= num_users:
    raise ValueError(f'max_cohort must be in [1, {num_users}] (the users), '
                     f'got {max_cohort}')
  return max_cohort


def build_data_source(process: UdpProcess,
                      data, *, mechanism_seed: Optional[int] = None
                      ) -> client_data.PoissonClientSource:
  """The users of `build_udp_process`'s rounds, for TFF programs.

  `data` is a `FederatedData` or a `ClientData` (users in `client_ids`
  order, the order of `num_examples`). Round r draws a Poisson cohort at
  the process's rate and then the users' K batches (`local_batches`), as
  the driver does, from the round's generator under a secret key each
  iterator draws (`client_data.PoissonClientSource`); with the run's
  `mechanism_seed`, the process fed by this source runs the driver's rounds
  (reproduction only: anyone who knows the seed knows who took part).
  """
  if isinstance(data, tff.simulation.datasets.ClientData):
    data = client_data.to_federated_data(data)
  if not isinstance(process, UdpProcess):
    raise ValueError('process must come from build_udp_process')
  if data.num_clients != process.num_users:
    raise ValueError(f'the data has {data.num_clients} users, the process '
                     f'{process.num_users}')
  for u, ((_, y), n) in enumerate(zip(data.train, process.num_examples)):
    if len(y) != n:
      raise ValueError(f'user {u} has {len(y)} examples, the process was '
                       f'built for num_examples {n}')
  spec_type = process.next.type_signature.parameter[1]
  weights = process.user_weights

  def make_cohort(cohort, rng):
    if not len(cohort):
      return []
    x, y, indices, mask = local_batches(data, cohort, process.local_steps,
                                        process.batch_size, rng)
    return client_elements(cohort, weights[cohort], x, y, indices, mask,
                           process.max_cohort)

  return client_data.PoissonClientSource(data.num_clients,
                                         process.sampling_rate, make_cohort,
                                         spec_type,
                                         mechanism_seed=mechanism_seed)
