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
"""The API's sharp edges a TFF user finds in a week (issue 50), each
answered in one line.

The budgets' horizon is the config's `rounds`, shown in `process.privacy`
and in docs/api.md; a loss that sums or keeps one value per example, or
reads logits as probabilities, is named as such; `global_weights` of
UDP-Alg's state and TFF-style batched (x, y) client datasets handed to
`next` are refused naming what is allowed; a results record's
`privacy.guarantee` names every unit of the run, protected or not.
"""

import os
import re

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

import tff_hdp.fedhdp
import tff_hdp.robust_hdp
import tff_hdp.udp
from tests import user_code
from tff_hdp import models
from tff_hdp import templates
from tff_hdp.fedhdp import privacy_groups
from tff_hdp.fedhdp import training as fedhdp_training
from tff_hdp.privacy import privacy_ledger
from tff_hdp.privacy.preferences import Preferences

PACKAGE = user_code.PACKAGE
SIZES = [8] * 6
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _one_line(error) -> str:
  message = str(error.value)
  assert '\n' not in message, message
  return message


def _build(system, **fields):
  """A tiny process of `system` (`fields`: more of its config)."""
  if system == 'fedhdp':
    return tff_hdp.fedhdp.build_fedhdp_process(
        PACKAGE,
        Preferences(levels=(0, 0, None, 0, None, 0)),
        config=tff_hdp.fedhdp.FedHdpConfig(noise_multiplier=0.5,
                                           sampling_rate=0.5,
                                           clipped_count_stddev=1.0,
                                           local_epochs=1,
                                           batch_size=4,
                                           **fields))
  if system == 'udp':
    return tff_hdp.udp.build_udp_process(PACKAGE,
                                         Preferences(num_examples=SIZES),
                                         config=tff_hdp.udp.UdpConfig(
                                             sampling_rate=0.5,
                                             local_steps=2,
                                             batch_size=4,
                                             hidden=8,
                                             hidden_layers=1,
                                             **fields))
  return tff_hdp.robust_hdp.build_robust_hdp_process(
      PACKAGE,
      Preferences(epsilons=(2.0,) * 6, batch_sizes=(4,) * 6,
                  num_examples=SIZES),
      config=tff_hdp.robust_hdp.RobustHdpConfig(algorithm='dpfedavg',
                                                rounds=2,
                                                **fields))


@pytest.mark.parametrize('system', ['fedhdp', 'udp'])
def test_the_budgets_hold_for_the_configs_rounds(system):
  default = _build(system).privacy
  assert default.calibrated_rounds == 500  # The papers' T, documented.
  assert default.budgets == default.epsilons(500)
  chosen = _build(system, rounds=7).privacy
  assert chosen.calibrated_rounds == 7
  assert chosen.budgets == chosen.epsilons(7)
  assert all(chosen.budgets[u] < default.budgets[u] for u in chosen.budgets)


def test_the_docs_give_the_horizon_the_code_uses():
  with open(os.path.join(REPO, 'docs', 'api_systems.md')) as f:
    text = f.read()
  assert tff_hdp.fedhdp.FedHdpConfig().rounds == 500
  assert tff_hdp.udp.UdpConfig().rounds == 500
  for section in ('## FedHDP', '## UDP-Alg'):
    part = text.split(section)[1].split('\n## ')[0]
    assert re.search(r'\n\| `rounds` \| `500` \| the horizon', part), section
    assert not re.search(r'not used[^.]*`rounds`|`rounds`[^.|]*not used',
                         part), section


def _keras_model(loss):
  keras_model = tf.keras.Sequential([
      tf.keras.layers.InputLayer(user_code.SHAPE), tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(10)])
  return tff.learning.models.functional_model_from_keras(
      keras_model, loss, (tf.TensorSpec((None,) + user_code.SHAPE, tf.float32),
                          tf.TensorSpec((None,), tf.int32)))


_CROSS_ENTROPY = tf.keras.losses.SparseCategoricalCrossentropy


@pytest.mark.parametrize('loss,start', [
    (_CROSS_ENTROPY(from_logits=True, reduction='sum'),
     "the model's loss sums over the batch (reduction=SUM): it gives "),
    (_CROSS_ENTROPY(from_logits=True, reduction='none'),
     "the model's loss returns one value per example (shape [4], e.g. "
     'reduction=NONE)'),
    (_CROSS_ENTROPY(),
     "the model's loss reads the output as probabilities "
     '(from_logits=False): it gives '),
    (_CROSS_ENTROPY(reduction='sum'),
     "the model's loss reads the output as probabilities and sums over the "
     'batch (from_logits=False, reduction=SUM)'),
])
def test_a_loss_of_another_reduction_or_reading_is_named(loss, start):
  with pytest.raises(ValueError) as error:
    models.as_model_spec(_keras_model(loss))
  message = _one_line(error)
  assert message.startswith(start), message
  assert message.endswith(
      'build it with tf.keras.losses.SparseCategoricalCrossentropy('
      'from_logits=True) and its default reduction (the batch mean), and a '
      'model that outputs logits'), message
  # The loss the message asks for is accepted.
  assert models.as_model_spec(_keras_model(_CROSS_ENTROPY(from_logits=True)))


def test_global_weights_of_udp_state_points_to_phi(tff_runtime):
  del tff_runtime
  process = _build('udp')
  state = process.initialize()
  with pytest.raises(TypeError) as error:
    templates.global_weights(state)
  assert _one_line(error) == (
      'global_weights takes the state of a FedHDP or Robust-HDP process (or '
      "of their drivers), got UDP-Alg's state (round_num, phi, embeddings): "
      'its model is the hypernetwork phi, '
      'process.get_model_weights(state).trainable')
  with pytest.raises(TypeError, match='got a list$'):
    templates.global_weights([])
  # FedHDP's state: theta^0.
  theta = templates.global_weights(_build('fedhdp').initialize())
  for w, w0 in zip(theta, PACKAGE.init(0)):
    np.testing.assert_array_equal(w, w0)


_HINTS = {
    'fedhdp': 'tff_hdp.fedhdp.client_element(x, y, group=..., client_id=..., '
              'batch_size=...)',
    'robust_hdp': 'tff_hdp.robust_hdp.client_element(x, y, index=..., '
                  'batch_size=..., noise_multiplier=...)',
    'udp': "a user's K batches with its index and weight",
}


@pytest.mark.parametrize('system', sorted(_HINTS))
def test_tff_style_client_datasets_are_refused_in_one_line(tff_runtime,
                                                           system):
  del tff_runtime
  process = _build(system)
  rng = np.random.default_rng(0)
  batched = [tf.data.Dataset.from_tensor_slices(
      (rng.random((n,) + user_code.SHAPE).astype(np.float32),
       rng.integers(0, 10, n).astype(np.int32))).batch(4) for n in SIZES]
  state = process.initialize()
  with pytest.raises(TypeError) as error:
    process.next(state, batched)
  message = _one_line(error)
  assert message.startswith(f'next takes each client as {_HINTS[system]} '
                            '(elements <x=float32[?,8,8],y=int32[?],'), message
  assert message.endswith(
      'as build_data_source(process, data) selects them from a ClientData of '
      '(x, y) examples, or {client index: a dataset of (x, y) examples or '
      'batches}; client 0 is a dataset of <float32[?,8,8],int32[?]>')
  with pytest.raises(TypeError, match='next takes a list of client datasets'):
    process.next(state, batched[0])
  assert process.round_num(state) == 0  # Nothing ran.


def _fedhdp_guarantee(algorithm, groups, epsilon):
  """FedHDP's record's guarantee of a reproducible run (as the demo's)."""
  config = tff_hdp.fedhdp.FedHdpConfig(algorithm=algorithm, mechanism_seed=0)
  ledger = privacy_ledger.PrivacyLedger(**config.ledger_terms())
  for name in epsilon:
    ledger.step(name, 0.5, 1.0)
  return fedhdp_training.privacy_record(ledger, epsilon, config,
                                        groups)['guarantee']


def test_the_guarantee_names_every_unit_of_the_run():
  private = privacy_groups.PrivacyGroup('private', 1.0)
  opted_out = privacy_groups.PrivacyGroup('non_private', None)
  # The demo's Non-Private baseline: one group, no noise, no epsilon.
  assert _fedhdp_guarantee(
      'non_private', [privacy_groups.PrivacyGroup('non_private', None,
                                                  clip=False)], {}) == {
          'non_private': 'none: the non-private baseline adds no noise'}
  guarantee = _fedhdp_guarantee('fedhdp', [private, opted_out],
                                {'private': 1.0})
  assert guarantee['non_private'] == (
      'none: these clients opted out of privacy (no noise)')
  assert guarantee['private'].startswith('not a bound: ')  # mechanism_seed.
