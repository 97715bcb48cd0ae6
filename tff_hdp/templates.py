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
"""What the three systems' learning processes share (TFF templates).

- `PrivateLearningProcess`: a `tff.learning.templates.LearningProcess` that
  also knows the privacy of the run it drives: `process.epsilon(state)` is
  each group's (FedHDP), client's (Robust-HDP) or the users' (UDP-Alg)
  epsilon after the rounds `state` has run, and `process.ledger(state)` the
  `tff_hdp.privacy.privacy_ledger.PrivacyLedger` behind it. The accounting needs
  the run's sampling: it holds when each round's clients are the ones the
  process was built for (`tff_hdp.data.client_data.PoissonClientSource`
  draws them).
- `build_round_client_work`: TFF client work whose state is the round
  number (FedHDP's and Robust-HDP's, each with its own message and work),
  and, for Robust-HDP's clients, the mechanism key of their DP-SGD.
- `compose_private_process`: FedHDP's and Robust-HDP's process, composed by
  TFF: a broadcast, their client work, their aggregator and the finalizer
  below.
- `build_apply_delta_finalizer`: theta <- theta + Delta, the server update of
  all three papers (TFF's `build_apply_optimizer_finalizer` takes the
  negated update as a gradient; our aggregates are Delta itself, so the
  noise draws stay those of the drivers').
- `model_weights_type`, `initial_model_weights`: TFF's `ModelWeights` of a
  `tff_hdp.models.ModelSpec` (trainable weights only); `weights_type` and
  `dataset_type`, its weights and a client's batched data.
- `global_weights`: theta^t of a process's state or of a driver's state
  dict (public as `tff_hdp.fedhdp.global_weights` and
  `tff_hdp.robust_hdp.global_weights`).
"""

import collections.abc
import collections
import dataclasses
from typing import Callable, Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import models
from tff_hdp.privacy import mechanism_key
from tff_hdp.privacy import privacy_ledger


def weights_type(shapes: Sequence[Sequence[int]]) -> tff.Type:
  """A list of float32 tensors of these shapes."""
  return tff.types.to_type([(np.float32, tuple(s)) for s in shapes])


def dataset_type(spec: models.ModelSpec) -> tff.SequenceType:
  """A client's batched dataset (FedHDP's and Robust-HDP's): elements
  (x [B, ...] float32, y [B] int32)."""
  return tff.SequenceType((tff.TensorType(np.float32,
                                          (None,) + spec.input_shape),
                           tff.TensorType(np.int32, (None,))))


def model_weights_type(spec: models.ModelSpec) -> tff.Type:
  """`tff.learning.models.ModelWeights` of the model's trainable weights."""
  return tff.types.to_type(tff.learning.models.ModelWeights(
      trainable=[(np.float32, tuple(s)) for s in spec.shapes],
      non_trainable=[]))


def initial_model_weights(weights: Sequence[np.ndarray]) -> tff.Computation:
  """A computation returning theta^0 as `ModelWeights` (unplaced, as
  `compose_learning_process` takes it)."""
  weights = [np.asarray(w, np.float32) for w in weights]

  @tff.tensorflow.computation
  def initial():
    return tff.learning.models.ModelWeights(
        trainable=[tf.constant(w) for w in weights], non_trainable=[])

  return initial


def build_apply_delta_finalizer(
    model_type: tff.Type) -> tff.learning.templates.FinalizerProcess:
  """theta^{t+1} = theta^t + Delta^t (no optimizer state)."""
  trainable_type = model_type.trainable

  @tff.federated_computation
  def init_fn():
    return tff.federated_value((), tff.SERVER)

  @tff.tensorflow.computation(model_type, trainable_type)
  def apply(weights, delta):
    return tff.learning.models.ModelWeights(
        trainable=[w + d for w, d in zip(weights.trainable, delta)],
        non_trainable=weights.non_trainable)

  @tff.federated_computation(init_fn.type_signature.result,
                             tff.FederatedType(model_type, tff.SERVER),
                             tff.FederatedType(trainable_type, tff.SERVER))
  def next_fn(state, weights, delta):
    return tff.templates.MeasuredProcessOutput(
        state=state,
        result=tff.federated_map(apply, (weights, delta)),
        measurements=tff.federated_value((), tff.SERVER))

  return tff.learning.templates.FinalizerProcess(init_fn, next_fn)


def build_round_client_work(
    model_type: tff.Type, data_type: tff.Type, message: tff.Computation,
    work: tff.Computation, *, keyed: bool = False,
    mechanism_seed: Optional[int] = None
) -> tff.learning.templates.ClientWorkProcess:
  """TFF client work whose state is the round number (and a key).

  Each round the server broadcasts `message(state)` (learning rates, the
  round's key), every client computes `work(weights, client, message)`, a
  `tff.learning.templates.ClientResult`, and the round number advances.
  The state is the round number; with `keyed`, OrderedDict(round_num, key),
  `key` the clients' mechanism key (`mechanism_key.key_tensor` of
  `mechanism_seed`: fresh at `initialize` unless a seed is given), which
  `message` derives the round's keys from.
  Measurements: an empty 'train' (no client reports an unnoised training
  metric; `tff.learning.programs.train_model` looks for the key).
  """

  @tff.tensorflow.computation
  def initial_state():
    if not keyed:
      return tf.constant(0, tf.int32)
    return collections.OrderedDict(
        round_num=tf.constant(0, tf.int32),
        key=mechanism_key.key_tensor(mechanism_seed))

  state_type = initial_state.type_signature.result

  @tff.tensorflow.computation(state_type)
  def advance(state):
    if not keyed:
      return state + 1
    return collections.OrderedDict(round_num=state['round_num'] + 1,
                                   key=state['key'])

  @tff.federated_computation
  def init_fn():
    return tff.federated_eval(initial_state, tff.SERVER)

  @tff.federated_computation(init_fn.type_signature.result,
                             tff.FederatedType(model_type, tff.CLIENTS),
                             tff.FederatedType(data_type, tff.CLIENTS))
  def next_fn(state, weights, clients):
    broadcast = tff.federated_broadcast(tff.federated_map(message, state))
    return tff.templates.MeasuredProcessOutput(
        state=tff.federated_map(advance, state),
        result=tff.federated_map(work, (weights, clients, broadcast)),
        measurements=tff.federated_value(
            collections.OrderedDict(train=collections.OrderedDict()),
            tff.SERVER))

  return tff.learning.templates.ClientWorkProcess(init_fn, next_fn)


@dataclasses.dataclass(frozen=True)
class RoundPrivacy:
  """What one round spends, per accounted unit, and at which level.

  Attributes:
    level: What a neighbouring dataset changes, e.g. 'client-level' (one
      client's data, FedHDP), 'example-level' (one example of client i's
      data, Robust-HDP), 'user-level' (UDP-Alg).
    mechanisms: Per unit (group or client name), (sampling_rate,
      noise_multiplier, steps per round): each round composes `steps`
      Poisson-subsampled Gaussian mechanisms.
    delta: The delta of the reported epsilons.
    is_bound: Whether epsilon bounds what the process releases: its
      accounting is a bound for the run's sampling and its mechanism key is
      secret (`tff_hdp.privacy.mechanism_key.ledger_terms`).
    accountant: 'rdp' or 'pld' (`tff_hdp.privacy.accounting`).
    orders: The RDP orders of the accounting (None: dp_accounting's).
    not_bound_because: Why epsilon is not a bound, if it is not.
  """
  level: str
  mechanisms: Mapping[str, tuple[float, float, int]]
  delta: float
  is_bound: bool = True
  accountant: str = 'rdp'
  orders: Optional[tuple[float, ...]] = None
  not_bound_because: Optional[str] = None

  def ledger(self, rounds: int) -> privacy_ledger.PrivacyLedger:
    """The ledger after `rounds` rounds."""
    ledger = privacy_ledger.PrivacyLedger(
        self.orders, is_bound=self.is_bound,
        not_bound_because=self.not_bound_because)
    if rounds:
      for name, (rate, z, steps) in self.mechanisms.items():
        ledger.step(name, rate, z, count=rounds * steps)
    return ledger


class PrivateLearningProcess(tff.learning.templates.LearningProcess):
  """A `LearningProcess` that reports the epsilon of the rounds it ran.

  Everything of `tff.learning.templates.LearningProcess`, plus
  `epsilon(state)`, `ledger(state)` and `round_num(state)`. `privacy`
  says what is accounted (`RoundPrivacy`).
  """

  def __init__(self, initialize_fn, next_fn, get_model_weights,
               set_model_weights, *, privacy: RoundPrivacy,
               round_num: Callable[[object], int]):
    super().__init__(initialize_fn, next_fn, get_model_weights,
                     set_model_weights)
    self._privacy = privacy
    self._round_num = round_num

  @classmethod
  def wrapping(cls, process: tff.learning.templates.LearningProcess, *,
               privacy: RoundPrivacy,
               round_num: Callable[[object], int]
               ) -> 'PrivateLearningProcess':
    """`process` (e.g. from `compose_learning_process`) with its privacy."""
    return cls(process.initialize, process.next, process.get_model_weights,
               process.set_model_weights, privacy=privacy,
               round_num=round_num)

  @property
  def privacy(self) -> RoundPrivacy:
    return self._privacy

  def round_num(self, state) -> int:
    """Rounds `state` has run."""
    return int(self._round_num(state))

  def ledger(self, state) -> privacy_ledger.PrivacyLedger:
    """The privacy ledger of the rounds `state` has run."""
    return self._privacy.ledger(self.round_num(state))

  def epsilon(self, state) -> dict[str, float]:
    """epsilon per accounted unit at the process's delta (0 rounds: 0)."""
    ledger = self.ledger(state)
    return {name: (ledger.get_epsilon(name, self._privacy.delta,
                                      self._privacy.accountant)
                   if self.round_num(state) else 0.0)
            for name in self._privacy.mechanisms}


def compose_private_process(spec: models.ModelSpec,
                            initial_weights: Sequence[np.ndarray],
                            client_work, aggregator,
                            privacy: RoundPrivacy) -> PrivateLearningProcess:
  """FedHDP's and Robust-HDP's learning process, composed by TFF.

  TFF's broadcast of theta^t, `client_work` (its state the round number,
  `build_round_client_work`; its update weight an integer index: the
  client's group or row), `aggregator` (a factory of the package's, created
  for that int32 weight) and theta^{t+1} = theta^t + Delta^t.
  """
  model_type = model_weights_type(spec)
  process = tff.learning.templates.compose_learning_process(
      initial_model_weights(initial_weights),
      tff.learning.templates.build_broadcast_process(model_type),
      client_work,
      aggregator.create(model_type.trainable, tff.TensorType(np.int32)),
      build_apply_delta_finalizer(model_type))
  return PrivateLearningProcess.wrapping(process, privacy=privacy,
                                         round_num=client_work_round)


def client_work_round(state) -> int:
  """The round counter a composed process keeps as its client work's state
  (a `tff.learning.templates.LearningAlgorithmState`), alone or beside the
  clients' key."""
  work = state.client_work
  if isinstance(work, collections.abc.Mapping):
    return int(work['round_num'])
  return int(work)


def global_weights(state) -> list[np.ndarray]:
  """theta^t, as numpy arrays, of a learning process's state (a
  `tff.learning.templates.LearningAlgorithmState`) or of a driver's state
  dict (`{'global_weights': [...], ...}`: FedHDP's round backends,
  Robust-HDP's runners)."""
  if isinstance(state, collections.abc.Mapping):
    return [np.asarray(w) for w in state['global_weights']]
  return [np.asarray(w) for w in state.global_model_weights.trainable]
