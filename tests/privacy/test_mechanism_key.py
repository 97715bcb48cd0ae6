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
"""The mechanism's key: secret by default, reproducible only when asked, and
128 bits at every derivation."""

import numpy as np
import pytest
import tensorflow as tf

from tff_hdp.privacy import mechanism_key
from tff_hdp.privacy import privacy_ledger


def test_a_new_key_is_secret_and_a_seeded_one_reproducible():
  keys = {tuple(mechanism_key.new_key()) for _ in range(50)}
  assert len(keys) == 50
  key = mechanism_key.new_key()
  assert key.dtype == np.int64 and key.shape == (2,)
  np.testing.assert_array_equal(mechanism_key.new_key(5),
                                mechanism_key.new_key(5))
  assert not np.array_equal(mechanism_key.new_key(5),
                            mechanism_key.new_key(6))
  # The reproducible key is not the public seed's own stream: a run with
  # seed=5 and mechanism_seed=5 does not reuse the seed's draws as its key.
  assert 5 not in mechanism_key.new_key(5)
  assert not np.array_equal(
      mechanism_key.new_key(5).view(np.uint64),
      np.random.SeedSequence(5).generate_state(2, np.uint64))


@pytest.mark.parametrize('bad', [-1, 1.5, '3', True, np.float32(2.0)])
def test_a_bad_mechanism_seed_is_refused_in_one_line(bad):
  with pytest.raises(ValueError) as e:
    mechanism_key.new_key(bad)
  message = str(e.value)
  assert '\n' not in message
  assert message.startswith('mechanism_seed must be None') and repr(
      bad) in message


def test_fold_in_keeps_all_128_bits():
  key = mechanism_key.new_key(11)
  derived = mechanism_key.fold_in(key, 3).numpy()
  assert derived.dtype == np.int64 and derived.shape == (2,)
  # Either word of the key changes both words of the result ...
  for word in (0, 1):
    other = key.copy()
    other[word] ^= 1
    changed = mechanism_key.fold_in(other, 3).numpy()
    assert (changed != derived).all()
  # ... and so does the data, which is not part of the result.
  assert (mechanism_key.fold_in(key, 4).numpy() != derived).all()
  assert 3 not in derived
  # TensorFlow's own fold_in keeps the data as its second word and, for a
  # Python int, 32 random bits only: what `fold_in` avoids.
  theirs = tf.random.experimental.stateless_fold_in(key, 3).numpy()
  assert theirs.dtype == np.int32 and theirs[1] == 3


def test_fold_in_is_philox_of_the_key_xor_the_data():
  # An independent computation of the same derivation: Philox's full-range
  # draw (TF's `stateless_split` form) of (k0, k1 xor data).
  key = np.array([123, -456], np.int64)
  expected = tf.random.experimental.stateless_split(
      tf.constant([123, -456 ^ 9], tf.int64), 1)[0].numpy()
  np.testing.assert_array_equal(mechanism_key.fold_in(key, 9).numpy(),
                                expected)


def test_key_tensor_is_fresh_at_every_execution_unless_seeded():
  fresh = tf.function(mechanism_key.key_tensor)
  draws = {tuple(fresh().numpy()) for _ in range(5)}
  assert len(draws) == 5
  # Two computations built apart hold two secret salts.
  other = tf.function(lambda: mechanism_key.key_tensor())
  assert tuple(other().numpy()) not in draws
  np.testing.assert_array_equal(mechanism_key.key_tensor(4).numpy(),
                                mechanism_key.new_key(4))
  rngs = [mechanism_key.fresh_rng().random(3) for _ in range(2)]
  assert not np.array_equal(*rngs)


def test_cohort_key_and_round_generators():
  key = mechanism_key.new_key(2)
  cohort = mechanism_key.cohort_key(key)
  assert cohort.dtype == np.int64 and not np.array_equal(cohort, key)
  draw = lambda k, r, s=0: mechanism_key.round_rng(k, r, s).random(4)
  np.testing.assert_array_equal(draw(cohort, 3), draw(cohort, 3))
  assert not np.array_equal(draw(cohort, 3), draw(cohort, 4))
  assert not np.array_equal(draw(cohort, 3), draw(cohort, 3, 1))
  assert not np.array_equal(draw(cohort, 3),
                            draw(mechanism_key.cohort_key(
                                mechanism_key.new_key(3)), 3))


def test_a_reproducible_run_is_labelled_not_a_guarantee():
  assert mechanism_key.ledger_terms(None) == dict(is_bound=True,
                                                  not_bound_because=None)
  terms = mechanism_key.ledger_terms(7)
  assert terms['is_bound'] is False
  assert 'published mechanism_seed=7' in terms['not_bound_because']
  both = mechanism_key.ledger_terms(7, 'an approximation')
  assert both['not_bound_because'].startswith('an approximation; ')
  ledger = privacy_ledger.PrivacyLedger(**terms)
  ledger.step('private', 0.1, 1.0)
  record = mechanism_key.privacy_record(ledger, 7, ['private'])
  assert record['is_bound'] is False
  assert record['mechanism_randomness'] == (
      'reproducible from the published mechanism_seed=7')
  assert 'not a guarantee' in record['guarantee']['private']
  secret = mechanism_key.privacy_record(
      privacy_ledger.PrivacyLedger(**mechanism_key.ledger_terms(None)), None,
      [])
  assert secret['is_bound'] and 'not_bound_because' not in secret
  assert secret['mechanism_randomness'].startswith('secret')
  # A restored ledger keeps the reason.
  restored = privacy_ledger.PrivacyLedger.from_json(ledger.to_json())
  assert restored.not_bound_because == ledger.not_bound_because
