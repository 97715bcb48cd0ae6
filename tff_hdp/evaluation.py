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
"""Evaluating the personal models of the API's processes (docs/api_systems.md).

FedHDP's and Robust-HDP's global model theta is TFF's `ModelWeights`:
`tff.learning.algorithms.build_fed_eval(model)`, with the user's
`FunctionalModel` (given metrics), evaluates `process.get_model_weights(state)`
as it is, and nothing here is needed for it. Personal models have no TFF
evaluation, hence:

- `evaluate_udp_personal_models`: UDP-Alg (paper 004). User u's model is
  theta_u = h(phi, v_u), generated from the state's hypernetwork phi and
  the user's embedding v_u; evaluated on u's test data as the driver does
  (`tff_hdp.udp.training.user_evaluation`).
- `evaluate_ditto_personal_models`: FedHDP's Ditto models theta_j (paper
  001, Acc_l): each client's personal model, or the global model theta for a
  client that has none yet (Algorithm 2 starts theta_j from theta), on its
  test data (`tff_hdp.fedhdp.evaluation`, `personal_store`).

Both run plain TensorFlow on numpy arrays (no TFF context) and return a
`PersonalEvaluation`: per client, the mean loss and the accuracy on its own
test data, and their means over the clients, each client counting once as
in the papers' tables (TFF's `build_fed_eval` instead weighs clients by
their examples: sum, then divide).

These are the simulation's measurements on the clients' own data, not
quantities a mechanism released: epsilon does not cover them. Ditto's
per-client results also show which clients hold a personal model, i.e. took
part; in a deployment they stay with the clients.
"""

import dataclasses
from typing import Mapping, NamedTuple, Sequence, Union

import numpy as np
import tensorflow_federated as tff

from tff_hdp import models
from tff_hdp.data import client_data
from tff_hdp.data import federated_data
from tff_hdp.fedhdp import evaluation as fedhdp_evaluation
from tff_hdp.fedhdp import personal_store as personal_store_lib
from tff_hdp.udp import process as udp_process
from tff_hdp.udp import training as udp_training

__all__ = ['PersonalEvaluation', 'evaluate_ditto_personal_models',
           'evaluate_udp_personal_models']

TestData = Union[tff.simulation.datasets.ClientData,
                 federated_data.FederatedData]


class PersonalEvaluation(NamedTuple):
  """Each client's personal model on its own test data.

  Attributes:
    loss: [N] per client, the mean sparse softmax cross-entropy of its model
      on its test data (nan for a client without test data).
    accuracy: [N] per client, the fraction of its test data its model
      classifies right (nan without test data).
    mean_loss: The mean of `loss` over the clients with test data.
    mean_accuracy: The mean of `accuracy` over them (paper 004's accuracy;
      paper 001's Acc_l,p and Acc_l,np are the means over a group's
      clients, e.g. `np.nanmean(accuracy[process.client_groups == g])`).
  """
  loss: np.ndarray
  accuracy: np.ndarray
  mean_loss: float
  mean_accuracy: float


def _as_test_data(test_data: TestData) -> federated_data.FederatedData:
  """`test_data` as a `FederatedData` whose `.test[i]` is client i's."""
  if isinstance(test_data, tff.simulation.datasets.ClientData):
    arrays = client_data.to_federated_data(test_data)
    return dataclasses.replace(arrays, test=arrays.train)
  if not isinstance(test_data, federated_data.FederatedData):
    raise TypeError('test_data must be a tff.simulation.datasets.ClientData '
                    'or a tff_hdp FederatedData, got '
                    f'{type(test_data).__name__}')
  return test_data


def _summary(losses: np.ndarray, accuracies: np.ndarray) -> PersonalEvaluation:
  if np.all(np.isnan(accuracies)):
    raise ValueError('test_data holds no test example for any client')
  return PersonalEvaluation(
      loss=losses, accuracy=accuracies,
      mean_loss=float(np.nanmean(losses)),
      mean_accuracy=float(np.nanmean(accuracies)))


def evaluate_udp_personal_models(process, state,
                                 test_data: TestData) -> PersonalEvaluation:
  """UDP-Alg: every user's theta_u = h(phi, v_u) on its own test data.

  Args:
    process: A process of `tff_hdp.udp.build_udp_process`.
    state: Its state (`state['phi']`, `state['embeddings']`).
    test_data: Each user's test examples, users in the order of the training
      data: a `ClientData` with one client per user (elements `(x, y)` or
      `{'x': x, 'y': y}`) or a `FederatedData` (its `.test`).

  Returns:
    The users' `PersonalEvaluation`.

  Raises:
    ValueError: If `test_data` has another number of users than the process,
      or no test example at all.
    TypeError: If `process` is not UDP-Alg's, or `test_data` of another kind.
  """
  if not isinstance(process, udp_process.UdpProcess):
    raise TypeError('process must come from tff_hdp.udp.build_udp_process')
  data = _as_test_data(test_data)
  if len(data.test) != process.num_users:
    raise ValueError(f'test_data has {len(data.test)} users, the process '
                     f'{process.num_users} (one test set per user, in the '
                     'order of num_examples)')
  losses, accuracies = udp_training.user_evaluation(
      process.hypernetwork, state['phi'], np.asarray(state['embeddings']),
      data)
  return _summary(losses, accuracies / 100.0)


def _as_store(personal, num_clients: int,
              shapes) -> personal_store_lib.PersonalModelStore:
  """`personal` (a store, or client index -> weights) as a store."""
  if isinstance(personal, personal_store_lib.PersonalModelStore):
    if personal.num_clients != num_clients:
      raise ValueError(f'the personal store has {personal.num_clients} '
                       f'clients, test_data {num_clients}')
    return personal
  ids = sorted(personal)
  unknown = [i for i in ids if not 0 <= i < num_clients]
  if unknown:
    raise ValueError(f'personal has client {unknown[0]!r}; clients are the '
                     f'indices 0..{num_clients - 1} of the test data')
  store = personal_store_lib.PersonalModelStore(num_clients, shapes)
  store.scatter(ids, [list(personal[i]) for i in ids])
  return store


def evaluate_ditto_personal_models(
    model, global_weights,
    personal: Union[Mapping[int, Sequence[np.ndarray]],
                    personal_store_lib.PersonalModelStore],
    test_data: TestData) -> PersonalEvaluation:
  """FedHDP: every client's Ditto model theta_j on its own test data.

  A client without a personal model (it never took part) is evaluated with
  the global model, from which Algorithm 2 would start its theta_j.

  Args:
    model: The model the process was built with (a `FunctionalModel` or a
      `tff_hdp.models.ModelSpec`).
    global_weights: theta, `process.get_model_weights(state)` or
      `fedhdp.global_weights(state)`.
    personal: The personal models kept beside the process (what
      `process.ditto_step` returned), client index -> weights, or a
      `tff_hdp.fedhdp.personal_store.PersonalModelStore`.
    test_data: Each client's test examples, clients in the order of the
      training data: a `ClientData` with one client per client of the
      process or a `FederatedData` (its `.test`).

  Returns:
    The clients' `PersonalEvaluation`.

  Raises:
    ValueError: If `personal` names a client `test_data` does not have, or
      `test_data` has no test example at all.
  """
  spec = models.as_model_spec(model)
  fallback = getattr(global_weights, 'trainable', global_weights)
  data = _as_test_data(test_data)
  store = _as_store(personal, len(data.test), spec.shapes)
  weights = store.gather(range(len(data.test)), fallback)
  losses, accuracies = np.full((2, len(data.test)), np.nan)
  for i, (w, (x, y)) in enumerate(zip(weights, data.test)):
    if len(y):
      losses[i], accuracies[i] = fedhdp_evaluation.loss_and_accuracy(
          spec, w, x, y)
  return _summary(losses, accuracies)
