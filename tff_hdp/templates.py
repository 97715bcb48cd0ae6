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
  draws them). Each unit is charged for the rounds it took part in, and
  `process.next` (`CheckedNext`) refuses a round that would spend past a
  unit's budget (`tff_hdp.privacy.round_privacy.RoundPrivacy.budgets`).
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
import inspect
import re
from typing import Callable, Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import models
# Imported for its effect: TFF's leaking default context is swapped for the
# managed one (`runtime.retire_tffs_default_context`) before any process of
# the three systems, all built here, can run.
from tff_hdp import runtime  # pylint: disable=unused-import
from tff_hdp.privacy import mechanism_key
from tff_hdp.privacy import privacy_ledger
from tff_hdp.privacy import round_privacy


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
    mechanism_seed: Optional[int] = None,
    report: Optional[tff.Computation] = None
) -> tff.learning.templates.ClientWorkProcess:
  """TFF client work whose state is the round number (and a key).

  Each round the server broadcasts `message(state)` (learning rates, the
  round's key), every client computes `work(weights, client, message)`, a
  `tff.learning.templates.ClientResult`, and the round number advances.
  The state is the round number; with `keyed`, OrderedDict(round_num, key),
  `key` the clients' mechanism key (`mechanism_key.key_tensor` of
  `mechanism_seed`: fresh at `initialize` unless a seed is given), which
  `message` derives the round's keys from.
  Measurements: 'train' (`tff.learning.programs.train_model` looks for the
  key). With `report`, a computation (weights, client) -> the client's
  `models.metric_sums` (`models.no_metric_sums` for a client whose metrics
  are not released), 'train' is OrderedDict(loss, accuracy, num_examples)
  of the sums over the cohort (`models.metrics_from_sums`, as TFF sums then
  divides); without, it is empty.
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

  if report is not None:
    @tff.tensorflow.computation(report.type_signature.result)
    def finalize_metrics(sums):
      return models.metrics_from_sums(sums)

  @tff.federated_computation(init_fn.type_signature.result,
                             tff.FederatedType(model_type, tff.CLIENTS),
                             tff.FederatedType(data_type, tff.CLIENTS))
  def next_fn(state, weights, clients):
    broadcast = tff.federated_broadcast(tff.federated_map(message, state))
    if report is None:
      measurements = tff.federated_value(
          collections.OrderedDict(train=collections.OrderedDict()),
          tff.SERVER)
    else:
      measurements = tff.federated_zip(collections.OrderedDict(
          train=tff.federated_map(finalize_metrics, tff.federated_sum(
              tff.federated_map(report, (weights, clients))))))
    return tff.templates.MeasuredProcessOutput(
        state=tff.federated_map(advance, state),
        result=tff.federated_map(work, (weights, clients, broadcast)),
        measurements=measurements)

  return tff.learning.templates.ClientWorkProcess(init_fn, next_fn)


@dataclasses.dataclass(frozen=True)
class Accounting:
  """What a process accounts, and how it reads a state's rounds.

  Attributes:
    privacy: What a round spends (`round_privacy.RoundPrivacy`).
    round_num: The rounds a state has run.
    participation: Per unit, the rounds a state's unit took part in (None:
      every unit every round, `round_num`).
    cohort_units: The units a round's client data charges (None from it, or
      no function: every unit).
  """
  privacy: round_privacy.RoundPrivacy
  round_num: Callable[[object], int]
  participation: Optional[Callable[[object], Mapping[str, int]]] = None
  cohort_units: Optional[Callable[[object], Optional[set[str]]]] = None


class PrivateLearningProcess(tff.learning.templates.LearningProcess):
  """A `LearningProcess` that reports the epsilon of the rounds it ran.

  Everything of `tff.learning.templates.LearningProcess`, plus
  `epsilon(state)`, `ledger(state)`, `round_num(state)` and
  `participation(state)`. `privacy` says what is accounted
  (`round_privacy.RoundPrivacy`); each unit is charged for the rounds it
  took part in. `next` refuses, with one line, a round that would spend
  past a unit's budget (`RoundPrivacy.budgets`), and turns the failure of
  an assertion of the round's own (its message starting with one of
  `assertion_markers`) into a one-line ValueError (`CheckedNext`). A system's builder returns a
  subclass that declares what else its process carries (FedHDP's groups,
  UDP-Alg's hypernetwork, Robust-HDP's clients).
  """

  def __init__(self, initialize_fn, next_fn, get_model_weights,
               set_model_weights, *, accounting: Accounting,
               assertion_markers: Sequence[str] = (),
               client_hint: str = 'its data source selects'):
    """Initializes the process.

    Args:
      initialize_fn, next_fn, get_model_weights, set_model_weights: As
        `tff.learning.templates.LearningProcess`'s.
      accounting: What a round spends and how a state counts its rounds
        (`Accounting`).
      assertion_markers: Starts of the messages of the round's assertions
        that `next` reports as a one-line ValueError.
      client_hint: How a client is made, for `next`'s one-line refusal of a
        client dataset of another element type.
    """
    super().__init__(initialize_fn, next_fn, get_model_weights,
                     set_model_weights)
    self._accounting = accounting
    self._checks = dict(assertion_markers=tuple(assertion_markers),
                        client_hint=client_hint)
    self._checked_next = CheckedNext(next_fn, self, assertion_markers,
                                     client_hint)

  @classmethod
  def wrapping(cls, process: tff.learning.templates.LearningProcess,
               **kwargs) -> 'PrivateLearningProcess':
    """`process` as this class; `kwargs` are the other arguments of
    `__init__` (a subclass's: its declared attributes too).

    `process` is a `LearningProcess` (e.g. from `compose_learning_process`;
    `kwargs` then give at least its `accounting`), or a
    `PrivateLearningProcess`, whose accounting and checks are kept unless
    `kwargs` give others (a builder's subclass of what it composed).
    """
    next_fn = process.next
    if isinstance(process, PrivateLearningProcess):
      kwargs = {'accounting': process._accounting, **process._checks,
                **kwargs}
      next_fn = process.next.computation
    return cls(process.initialize, next_fn, process.get_model_weights,
               process.set_model_weights, **kwargs)

  @property
  def next(self) -> 'CheckedNext':
    """The round, refused if it would overspend a budget (`CheckedNext`)."""
    return self._checked_next

  @property
  def privacy(self) -> round_privacy.RoundPrivacy:
    return self._accounting.privacy

  def round_num(self, state) -> int:
    """Rounds `state` has run."""
    return int(self._accounting.round_num(state))

  def participation(self, state) -> dict[str, int]:
    """Per accounted unit, the rounds `state`'s unit took part in."""
    if self._accounting.participation is None:
      return self.privacy.unit_rounds(self.round_num(state))
    return self.privacy.unit_rounds(self._accounting.participation(state))

  def round_participation(self, state, data) -> dict[str, int]:
    """`participation` after the round `next(state, data)` would run."""
    cohort_units = self._accounting.cohort_units
    units = None if cohort_units is None else cohort_units(data)
    return {name: count + (units is None or name in units)
            for name, count in self.participation(state).items()}

  def ledger(self, state) -> privacy_ledger.PrivacyLedger:
    """The privacy ledger of the rounds `state` has run (each unit charged
    for the rounds it took part in)."""
    return self.privacy.ledger(self.participation(state))

  def epsilon(self, state) -> dict[str, float]:
    """epsilon per accounted unit at the process's delta (0 rounds: 0)."""
    return self.privacy.epsilons(self.participation(state))

  def clients_from(self, datasets) -> list:
    """`next`'s clients from {client index: a tf.data dataset of (x, y)
    examples or batches}, as TFF's tutorials make them (`next` takes that
    mapping too); a system's process says how (its preferences give each
    index its privacy). The caller chose the cohort: the epsilon assumes
    it was drawn as the system's data source draws it."""
    raise TypeError(f'{type(self).__name__}.next takes a list of client '
                    f'datasets, each as {self._checks["client_hint"]}')


class PoissonProcess(PrivateLearningProcess):
  """A builder's process whose rounds draw Poisson cohorts of its config's
  clients in batches (FedHDP's and UDP-Alg's: their `build_data_source`).

  Attributes:
    config: The system's configuration the process runs.
    batch_size: The examples of a client's local step (`config.batch_size`).
    sampling_rate: q, each client's probability to take part in a round
      (`config.sampling_rate`).
  """

  def __init__(self, *args, config, **kwargs):
    """`args` and `kwargs` as `PrivateLearningProcess`'s."""
    super().__init__(*args, **kwargs)
    self._config = config

  @property
  def config(self):
    return self._config

  @property
  def batch_size(self) -> int:
    return self._config.batch_size

  @property
  def sampling_rate(self) -> float:
    return self._config.sampling_rate


class CheckedNext:
  """A process's `next` computation behind its budget check.

  Called as the computation (`type_signature` is its, so
  `tff.learning.programs.train_model` takes it), it first refuses a round
  that would take a unit past its budget, then runs the round; the failure
  of one of the round's own assertions (`assertion_markers`) becomes a
  one-line ValueError, in a synchronous or an asynchronous TFF context.
  The check reads the state's counters: states are values (TFF's contexts
  and `train_model` materialise them), so it needs no Python-side count.
  """

  def __init__(self, computation: tff.Computation,
               process: PrivateLearningProcess,
               assertion_markers: Sequence[str] = (),
               client_hint: str = 'its data source selects'):
    self._computation = computation
    self._process = process
    self._markers = tuple(assertion_markers)
    self._client_hint = client_hint

  @property
  def type_signature(self) -> tff.FunctionType:
    return self._computation.type_signature

  @property
  def computation(self) -> tff.Computation:
    """The unchecked round."""
    return self._computation

  def __call__(self, state, data):
    process = self._process
    if isinstance(data, collections.abc.Mapping):  # {index: a dataset}
      data = process.clients_from(data)
    self._check_clients(data)
    if process.privacy.budgets:
      process.privacy.check_budgets(process.round_participation(state, data),
                                    process.round_num(state) + 1)
    try:
      result = self._computation(state, data)
    except Exception as e:  # pylint: disable=broad-except
      if self._recognised(e):
        raise self._one_line(e) from None
      raise
    if inspect.isawaitable(result):
      return self._awaited(result)
    return result

  async def _awaited(self, result):
    try:
      return await result
    except Exception as e:  # pylint: disable=broad-except
      if self._recognised(e):
        raise self._one_line(e) from None
      raise

  def _check_clients(self, data) -> None:
    """Refuses in one line a client dataset of another element type than
    the round takes (TFF's serializer would, deep in its runtime)."""
    expected = self._computation.type_signature.parameter[1]
    if not (isinstance(expected, tff.FederatedType) and
            isinstance(expected.member, tff.SequenceType)):
      return
    if isinstance(data, tf.data.Dataset):
      raise TypeError(f'next takes a list of client datasets, each as '
                      f'{self._client_hint}, or {{client index: dataset}}; '
                      'got one dataset')
    for i, client in enumerate(data if isinstance(data, (list, tuple))
                               else ()):
      if not isinstance(client, tf.data.Dataset):
        continue
      actual = tff.types.tensorflow_to_type(client.element_spec)
      if not expected.member.is_assignable_from(tff.SequenceType(actual)):
        raise TypeError(
            f'next takes each client as {self._client_hint} (elements '
            f'{expected.member.element}), as build_data_source(process, '
            'data) selects them from a ClientData of (x, y) examples, or '
            '{client index: a dataset of (x, y) examples or batches}; '
            f'client {i} is a dataset of {actual}')

  def _recognised(self, error: Exception) -> bool:
    return any(m in str(error) for m in self._markers)

  def _one_line(self, error: Exception) -> ValueError:
    return ValueError(assertion_line(str(error), self._markers))


def assertion_line(text: str, markers: Sequence[str]) -> str:
  """The one line of a failed `tf.debugging.Assert` whose first datum
  starts with one of `markers`, in the text of TFF's runtime error: its
  data joined by spaces ("[a] [3] [b]" -> "a 3 b")."""
  for marker in markers:
    found = re.search(r'\[(' + re.escape(marker) + r'[^\]]*)\]((?: \[[^\]]*\])*)',
                      text)
    if found:
      rest = re.findall(r'\[([^\]]*)\]', found.group(2))
      return ' '.join([found.group(1)] + rest)
  return text.strip().splitlines()[0]


def compose_private_process(spec: models.ModelSpec,
                            initial_weights: Sequence[np.ndarray],
                            client_work, aggregator,
                            privacy: round_privacy.RoundPrivacy, *,
                            participation: Optional[
                                Callable[[object], Mapping[str, int]]] = None,
                            cohort_units: Optional[
                                Callable[[object], Optional[set[str]]]] = None,
                            **process_kwargs) -> PrivateLearningProcess:
  """FedHDP's and Robust-HDP's learning process, composed by TFF.

  TFF's broadcast of theta^t, `client_work` (its state the round number,
  `build_round_client_work`; its update weight an integer index: the
  client's group or row), `aggregator` (a factory of the package's, created
  for that int32 weight) and theta^{t+1} = theta^t + Delta^t. Its
  `Accounting` is `privacy`, the client work's round counter,
  `participation` and `cohort_units`; `process_kwargs` are the rest of
  `PrivateLearningProcess`'s arguments.
  """
  model_type = model_weights_type(spec)
  process = tff.learning.templates.compose_learning_process(
      initial_model_weights(initial_weights),
      tff.learning.templates.build_broadcast_process(model_type),
      client_work,
      aggregator.create(model_type.trainable, tff.TensorType(np.int32)),
      build_apply_delta_finalizer(model_type))
  return PrivateLearningProcess.wrapping(
      process, accounting=Accounting(privacy, client_work_round,
                                     participation, cohort_units),
      **process_kwargs)


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
  Robust-HDP's runners).

  Raises:
    TypeError: One line, for any other state (UDP-Alg's: its phi is
      `process.get_model_weights(state).trainable`).
  """
  if isinstance(state, collections.abc.Mapping) and 'global_weights' in state:
    return [np.asarray(w) for w in state['global_weights']]
  if hasattr(state, 'global_model_weights'):
    return [np.asarray(w) for w in state.global_model_weights.trainable]
  if isinstance(state, collections.abc.Mapping) and 'phi' in state:
    got = ('UDP-Alg\'s state (round_num, phi, embeddings): its model is the '
           'hypernetwork phi, process.get_model_weights(state).trainable')
  elif isinstance(state, collections.abc.Mapping):
    got = f'a mapping of {", ".join(map(str, state))}'
  else:
    got = f'a {type(state).__name__}'
  raise TypeError('global_weights takes the state of a FedHDP or Robust-HDP '
                  f'process (or of their drivers), got {got}')
