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
"""ClientUpdate of paper 001, Algorithm 2, with Ditto personalisation.

Given the global model theta^t, client j runs E epochs over its batches B:

    theta   <- theta   - eta   * grad f_j(theta; B)
    theta_j <- theta_j - eta_p * (grad f_j(theta_j; B) + lambda_j (theta_j - theta^t))

(the second line is Ditto, Li et al. 2021, with lambda_j = lambda_p or lambda_np
by the client's privacy group) and returns Delta = theta - theta^t.

Clipping and the clip indicator b = 1[||Delta|| <= S^t] are NOT done here:
they belong to the privacy mechanism (`hdp_factory`), which the training code
never mentions. Pure TensorFlow, no TFF: the TFF process wraps it.
"""

import collections
from typing import NamedTuple, Sequence

import tensorflow as tf

from tff_hdp import models

ClientOutput = collections.namedtuple(
    'ClientOutput', ['delta', 'personal_weights', 'num_examples', 'loss_sum'])
ClientOutput.__doc__ = """What a client computes in one round.

Attributes:
  delta: theta - theta^t, unclipped, one tensor per weight.
  personal_weights: The updated Ditto model theta_j (unchanged when Ditto is
    off).
  num_examples: Examples processed by the global-model steps (E x |D_j|).
  loss_sum: Sum over those examples of the global model's training loss.
"""


class Rates(NamedTuple):
  """A client's step sizes in a round (scalars, Python or tensors)."""
  learning_rate: tf.Tensor  # eta.
  personal_learning_rate: tf.Tensor  # eta_p.
  ditto_lambda: tf.Tensor  # lambda_j.


class Steps(NamedTuple):
  """Which of a round's steps a client runs, and over how many epochs.

  Python values: the update is traced once per combination.

  Attributes:
    local_epochs: E, how many times the client's dataset is iterated.
    train_personal: Whether to run Ditto's personal step.
    train_global: Whether to run the global model's steps (False: Delta is
      zero; Ditto's personal step alone, as TFF's learning process keeps the
      personal models apart, `process.build_ditto_step`). Either step draws
      the same batches and dropout masks as when both run.
  """
  local_epochs: int  # E.
  train_personal: bool  # Ditto's personal step.
  train_global: bool = True  # The global model's step.


def client_update(spec: models.ModelSpec,
                  global_weights: Sequence[tf.Tensor],
                  personal_weights: Sequence[tf.Tensor],
                  dataset: tf.data.Dataset,
                  *,
                  steps: Steps,
                  rates: Rates,
                  seed: tf.Tensor) -> ClientOutput:
  """Runs Algorithm 2's ClientUpdate (without clipping) on one client.

  Args:
    spec: The model.
    global_weights: theta^t.
    personal_weights: theta_j (theta^t for a client with no personal model).
    dataset: The client's batches, (x, y) or mappings with keys 'x' and 'y'
      (the learning process's client elements, `process.client_element`);
      it is iterated `steps.local_epochs` times.
    steps: E and which of the two steps run (`Steps`).
    rates: eta, eta_p and lambda_j (`Rates`).
    seed: int32 [2] seed for dropout (models without dropout ignore it).

  Returns:
    A `ClientOutput`.
  """
  global_weights = [tf.convert_to_tensor(w) for w in global_weights]
  return _client_update(spec, global_weights,
                        [tf.convert_to_tensor(w) for w in personal_weights],
                        dataset, tuple(rates), seed, Steps(*steps))


@tf.function(autograph=False)
def _client_update(spec, global_weights, personal_weights, dataset, rates,
                   seed, steps: Steps):
  """`client_update`, with rates = (eta, eta_p, lambda_j).

  The loop is one `dataset.reduce` whose state holds only what the round
  trains (theta, theta_j), not autograph's form of a `for` over a dataset
  (a scan, then a reduce): TFF's runtime instantiates a dataset's functions
  for every client, and that form's cost more (docs/performance.md).
  """
  learning_rate, personal_learning_rate, ditto_lambda = [
      tf.cast(rate, tf.float32) for rate in rates]
  local_epochs, train_personal, train_global = steps
  global_weights = tuple(global_weights)

  def step(state, batch):
    x, y = (batch['x'], batch['y']) if isinstance(batch, dict) else batch
    batch_seed = tf.random.experimental.stateless_fold_in(seed, state['step'])
    loss = tf.constant(0.0, tf.float32)
    state = dict(state)
    if train_global:
      weights = state['weights']
      with tf.GradientTape() as tape:
        tape.watch(weights)
        loss = models.loss_fn(spec.apply(weights, x, True, batch_seed), y)
      grads = tape.gradient(loss, weights)
      state['weights'] = tuple(
          w - learning_rate * g for w, g in zip(weights, grads))
    if train_personal:
      personal = state['personal']
      personal_seed = tf.random.experimental.stateless_fold_in(batch_seed, 7)
      with tf.GradientTape() as tape:
        tape.watch(personal)
        personal_loss = models.loss_fn(
            spec.apply(personal, x, True, personal_seed), y)
      personal_grads = tape.gradient(personal_loss, personal)
      state['personal'] = tuple(
          p - personal_learning_rate * (g + ditto_lambda * (p - w0))
          for p, g, w0 in zip(personal, personal_grads, global_weights))
    batch_size = tf.shape(y)[0]
    state['num_examples'] += batch_size
    state['loss_sum'] += loss * tf.cast(batch_size, tf.float32)
    state['step'] += 1
    return state

  initial = dict(num_examples=tf.constant(0, tf.int32),
                 loss_sum=tf.constant(0.0, tf.float32),
                 step=tf.constant(0, tf.int32))
  if train_global:
    initial['weights'] = global_weights
  if train_personal:
    initial['personal'] = tuple(personal_weights)
  final = dataset.repeat(local_epochs).reduce(initial, step)
  weights = final.get('weights', global_weights)
  delta = [w - w0 for w, w0 in zip(weights, global_weights)]
  personal = final.get('personal', tuple(personal_weights))
  return ClientOutput(delta, list(personal), final['num_examples'],
                      final['loss_sum'])
