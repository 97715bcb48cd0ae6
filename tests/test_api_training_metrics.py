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
"""The clients' training metrics, `client_work/train` (issue 39, item 5).

The loss and accuracy of the round's global model on the training examples
of the cohort's non-private clients, summed over them then divided (as TFF
does), equal an independent numpy computation; a private client's examples
are in no metric; a cohort without a non-private client reports none; a
process of private clients only has an empty `train`.
"""

import numpy as np
import pytest
import tensorflow as tf

import tff_hdp.fedhdp
import tff_hdp.robust_hdp
from tff_hdp.privacy.preferences import Preferences
from tests import user_code

MODEL = user_code.PACKAGE
SIZES = (8, 9, 10, 11, 12)


def _examples(data, i):
  """Client i's (x, y) of `data` (a `ClientData`)."""
  element = data.create_tf_dataset_for_client(f'c_{i}').batch(
      1000).get_single_element()
  return np.asarray(element['x']), np.asarray(element['y'])


def _expected(weights, data, clients):
  """(mean loss, accuracy, examples) of `weights` on `clients`' data, in
  numpy from the model's logits."""
  losses, hits = [], []
  for i in clients:
    x, y = _examples(data, i)
    logits = np.asarray(MODEL.apply([tf.constant(w) for w in weights],
                                    tf.constant(x)), np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    losses += list(-log_p[np.arange(len(y)), y])
    hits += list(logits.argmax(axis=1) == y)
  return np.mean(losses), np.mean(hits), len(losses)


def _check(train, weights, data, clients):
  loss, accuracy, n = _expected(weights, data, clients)
  assert int(train['num_examples']) == n
  assert float(train['loss']) == pytest.approx(loss, rel=1e-5)
  assert float(train['accuracy']) == pytest.approx(accuracy, abs=1e-6)


def test_robust_hdp_reports_its_non_private_clients_only(tff_runtime):
  del tff_runtime
  process = tff_hdp.robust_hdp.build_robust_hdp_process(
      MODEL,
      Preferences(epsilons=(None, 3.0, 8.0, None, 8.0),
                  batch_sizes=(4,) * 5,
                  num_examples=SIZES),
      config=tff_hdp.robust_hdp.RobustHdpConfig(algorithm='dpfedavg',
                                                rounds=3,
                                                seed=1,
                                                mechanism_seed=1))
  data = user_code.client_data(SIZES, 'c')
  clients = tff_hdp.robust_hdp.build_data_source(
      process, data).iterator().select()
  state = process.initialize()
  weights = process.get_model_weights(state).trainable
  output = process.next(state, clients)
  _check(output.metrics['client_work']['train'], weights, data, [0, 3])
  # A cohort of private clients only: no example is reported.
  train = process.next(state, clients[1:3]).metrics['client_work']['train']
  assert int(train['num_examples']) == 0
  assert float(train['loss']) == float(train['accuracy']) == 0.0
  # Every client private: nothing to report.
  private = tff_hdp.robust_hdp.build_robust_hdp_process(
      MODEL,
      Preferences(epsilons=(3.0,) * 5, batch_sizes=(4,) * 5,
                  num_examples=SIZES),
      config=tff_hdp.robust_hdp.RobustHdpConfig(algorithm='dpfedavg',
                                                rounds=3,
                                                seed=1,
                                                mechanism_seed=1))
  output = private.next(private.initialize(), clients)
  assert not output.metrics['client_work']['train']


def test_fedhdp_reports_its_opt_outs_only(tff_runtime):
  del tff_runtime
  levels = (0, None, 0, None, 0)
  process = tff_hdp.fedhdp.build_fedhdp_process(
      MODEL,
      Preferences(levels=levels),
      config=tff_hdp.fedhdp.FedHdpConfig(noise_multiplier=0.25,
                                         clipped_count_stddev=0.5,
                                         sampling_rate=0.5,
                                         local_epochs=1,
                                         batch_size=4,
                                         seed=1,
                                         mechanism_seed=1))
  data = user_code.client_data(SIZES, 'c')
  clients = [tff_hdp.fedhdp.client_element(
      *_examples(data, i), group=process.client_groups[i], client_id=i,
      batch_size=4) for i in range(5)]
  state = process.initialize()
  weights = process.get_model_weights(state).trainable
  output = process.next(state, clients)
  _check(output.metrics['client_work']['train'], weights, data, [1, 3])
  train = process.next(state, [clients[0], clients[2]]).metrics[
      'client_work']['train']
  assert int(train['num_examples']) == 0
