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
"""Tests for tff_hdp.privacy.privacy_ledger: a run's per-group record.

Its epsilons equal `accounting.compute_epsilon` (and, for heterogeneous runs,
the independent RDP reference of test_accounting.py), steps accumulate
compactly, the JSON format round-trips (version 2; version 1 still loads),
and a group keeps one neighbouring relation.
"""

import json
import math
import os
import tempfile

from absl.testing import absltest
from absl.testing import parameterized

from tests.privacy import test_accounting as ref
from tff_hdp.privacy import accounting
from tff_hdp.privacy import privacy_ledger

# The independent RDP reference is test_accounting.py's.
# pylint: disable=protected-access



class PrivacyLedgerTest(parameterized.TestCase):

  def test_never_stepped_group_is_zero(self):
    ledger = privacy_ledger.PrivacyLedger()
    self.assertEqual(ledger.get_epsilon('private', 1e-4), 0.0)
    self.assertEqual(ledger.epsilons(1e-4), {})
    ledger.step('private_2', 0.05, 1.5, count=0)
    self.assertEqual(ledger.epsilons(1e-4), {'private_2': 0.0})

  def test_single_run_equals_compute_epsilon(self):
    ledger = privacy_ledger.PrivacyLedger()
    ledger.step('private', 0.05, 1.5, count=500)
    self.assertEqual(
        ledger.get_epsilon('private', 1e-4),
        accounting.compute_epsilon(0.05, 1.5, 500, 1e-4))

  def test_steps_accumulate(self):
    once = privacy_ledger.PrivacyLedger()
    once.step('private', 0.05, 1.5, count=500)
    twice = privacy_ledger.PrivacyLedger()
    twice.step('private', 0.05, 1.5, count=250)
    twice.step('private', 0.05, 1.5, count=250)
    one_by_one = privacy_ledger.PrivacyLedger()
    for _ in range(500):
      one_by_one.step('private', 0.05, 1.5)
    eps = once.get_epsilon('private', 1e-4)
    self.assertEqual(twice.get_epsilon('private', 1e-4), eps)
    self.assertEqual(one_by_one.get_epsilon('private', 1e-4), eps)
    # Stored compactly: one run, not 500 entries.
    self.assertEqual(one_by_one.history('private'), ((0.05, 1.5, 500),))
    self.assertEqual(one_by_one.rounds('private'), 500)
    self.assertGreater(eps, once.get_epsilon('private', 1e-3))

  def test_a_history_is_composed_once_and_a_step_recomposes(self):
    first = privacy_ledger.PrivacyLedger()
    first.step('private', 0.05, 1.5, count=300)
    eps = first.get_epsilon('private', 1e-4)
    # Another ledger (another run) of the same history: the same epsilon,
    # from the composition already made.
    hits = privacy_ledger._composed.cache_info().hits
    second = privacy_ledger.PrivacyLedger()
    second.step('private', 0.05, 1.5, count=300)
    self.assertEqual(second.get_epsilon('private', 1e-4), eps)
    self.assertEqual(privacy_ledger._composed.cache_info().hits, hits + 1)
    # A step after a read: the epsilon of the longer history.
    first.step('private', 0.05, 1.5, count=200)
    self.assertEqual(first.get_epsilon('private', 1e-4),
                     accounting.compute_epsilon(0.05, 1.5, 500, 1e-4))
    self.assertEqual(second.get_epsilon('private', 1e-4), eps)

  def test_heterogeneous_runs_compose(self):
    ledger = privacy_ledger.PrivacyLedger()
    runs = [(0.05, 1.5, 100), (0.03, 4.0, 200), (0.05, 1.5, 50)]
    for q, z, count in runs:
      ledger.step('private', q, z, count)
    self.assertEqual(ledger.history('private'), tuple(runs))
    rdp = sum(
        ref._reference_rdp(q, z, count, ref._INTEGER_ORDERS,
                           ref._log_a_binomial)
        for q, z, count in runs)
    ledger_int = privacy_ledger.PrivacyLedger(orders=ref._INTEGER_ORDERS)
    for q, z, count in runs:
      ledger_int.step('private', q, z, count)
    self.assertAlmostEqual(
        ledger_int.get_epsilon('private', 1e-5) /
        ref._reference_epsilon(ref._INTEGER_ORDERS, rdp, 1e-5),
        1.0,
        delta=1e-9)

  def test_groups_are_independent(self):
    ledger = privacy_ledger.PrivacyLedger()
    ledger.step('private_1', 0.05, 1.0, count=500)
    ledger.step('private_2', 0.05, 4.0, count=500)
    eps = ledger.epsilons(1e-4)
    self.assertEqual(list(eps), ['private_1', 'private_2'])
    self.assertEqual(eps['private_1'],
                     accounting.compute_epsilon(0.05, 1.0, 500, 1e-4))
    self.assertEqual(eps['private_2'],
                     accounting.compute_epsilon(0.05, 4.0, 500, 1e-4))
    self.assertEqual(ledger.get_epsilon('non_private', 1e-4), 0.0)

  def test_zero_noise_is_not_private(self):
    ledger = privacy_ledger.PrivacyLedger()
    ledger.step('private', 0.05, 0.0)
    self.assertEqual(ledger.get_epsilon('private', 1e-4), math.inf)

  def test_zero_noise_in_a_fixed_cohort_is_not_private(self):
    # A fixed cohort (replace-one) with z = 0 in one of its rounds: inf by
    # both accountants' rule, not dp_accounting's division by z.
    for accountant in ('rdp', 'pld'):
      ledger = privacy_ledger.PrivacyLedger()
      ledger.step('private', 0.05, 1.5, count=3, population=2000)
      ledger.step('private', 0.05, 0.0, population=2000)
      if accountant == 'pld':
        with self.assertRaisesRegex(ValueError, 'no event for a fixed cohort'):
          ledger.get_epsilon('private', 1e-4, accountant)
      else:
        self.assertEqual(ledger.get_epsilon('private', 1e-4), math.inf)

  def test_save_load_round_trip(self):
    ledger = privacy_ledger.PrivacyLedger()
    ledger.step('private_1', 0.05, 1.5, count=123)
    ledger.step('private_1', 0.05, 1.1, count=7)
    ledger.step('private_2', 0.0317, 2.718281828459045, count=77)
    with tempfile.TemporaryDirectory() as tmp:
      path = os.path.join(tmp, 'sub', 'ledger.json')
      ledger.save(path)
      restored = privacy_ledger.PrivacyLedger.load(path)
      with open(path) as f:
        json.load(f)  # Plain JSON on disk.
    self.assertEqual(restored, ledger)
    self.assertEqual(restored.epsilons(1e-4), ledger.epsilons(1e-4))
    self.assertEqual(
        privacy_ledger.PrivacyLedger.from_json(ledger.to_json()).epsilons(1e-5),
        ledger.epsilons(1e-5))

  def test_resumed_run_matches_uninterrupted(self):
    uninterrupted = privacy_ledger.PrivacyLedger()
    uninterrupted.step('private', 0.03, 1.0, count=500)
    first_half = privacy_ledger.PrivacyLedger()
    first_half.step('private', 0.03, 1.0, count=250)
    resumed = privacy_ledger.PrivacyLedger.from_json(first_half.to_json())
    resumed.step('private', 0.03, 1.0, count=250)
    self.assertEqual(resumed.history('private'), ((0.03, 1.0, 500),))
    self.assertEqual(
        resumed.get_epsilon('private', 1e-4),
        uninterrupted.get_epsilon('private', 1e-4))

  def test_custom_orders_survive_round_trip(self):
    ledger = privacy_ledger.PrivacyLedger(orders=[2, 4, 8, 16, 32])
    ledger.step('private', 0.05, 1.5, count=10)
    restored = privacy_ledger.PrivacyLedger.from_json(ledger.to_json())
    self.assertEqual(restored.orders, (2.0, 4.0, 8.0, 16.0, 32.0))
    self.assertEqual(restored.get_epsilon('private', 1e-4),
                     ledger.get_epsilon('private', 1e-4))

  @parameterized.named_parameters(
      ('not_json', '{'),
      ('wrong_format', '{"format": "other", "version": 1, "groups": {}}'),
      ('bad_run', '{"format": "tff_hdp.PrivacyLedger", "version": 1, '
       '"groups": {"private": [{"count": 1}]}}'),
      ('bad_value', '{"format": "tff_hdp.PrivacyLedger", "version": 1, '
       '"groups": {"private": [{"sampling_rate": 2, "noise_multiplier": 1, '
       '"count": 1}]}}'),
  )
  def test_malformed_json(self, text):
    with self.assertRaises(ValueError):
      privacy_ledger.PrivacyLedger.from_json(text)

  def test_bad_step(self):
    ledger = privacy_ledger.PrivacyLedger()
    with self.assertRaisesRegex(ValueError, 'sampling_rate must be in'):
      ledger.step('private', 1.5, 1.0)
    with self.assertRaisesRegex(ValueError, 'noise_multiplier must be >= 0'):
      ledger.step('private', 0.5, -1.0)
    with self.assertRaisesRegex(ValueError, 'count must be an integer >= 0'):
      ledger.step('private', 0.5, 1.0, count=-1)
    with self.assertRaisesRegex(ValueError, 'group must be a non-empty string'):
      ledger.step('', 0.5, 1.0)
    with self.assertRaisesRegex(ValueError, 'delta must be in'):
      ledger.get_epsilon('private', 0.0)
    self.assertEqual(ledger.groups, ())

  def test_ledger_records_the_relation(self):
    ledger = privacy_ledger.PrivacyLedger()
    ledger.step('private', 0.2, 2.0, 100, population=200)
    self.assertEqual(ledger.relation('private'), accounting.REPLACE_ONE)
    self.assertEqual(ledger.history('private'), ((0.2, 2.0, 100, 200),))
    self.assertAlmostEqual(
        ledger.get_epsilon('private', 1e-4),
        accounting.compute_epsilon(0.2, 2.0, 100, 1e-4, population=200),
        places=9)
    restored = privacy_ledger.PrivacyLedger.from_json(ledger.to_json())
    self.assertEqual(restored, ledger)
    self.assertIn('replace-one', restored.guarantee('private'))
    with self.assertRaisesRegex(ValueError, 'cannot compose'):
      ledger.step('private', 0.2, 2.0)  # A Poisson round in the same group.
    with self.assertRaisesRegex(ValueError, "accountant 'pld' has no event"):
      ledger.get_epsilon('private', 1e-4, accountant='pld')

  def test_approximation_is_labelled(self):
    ledger = privacy_ledger.PrivacyLedger(is_bound=False)
    ledger.step('private', 0.2, 2.0, 10)
    self.assertFalse(privacy_ledger.PrivacyLedger.from_json(
        ledger.to_json()).is_bound)
    self.assertIn('not a bound', ledger.guarantee('private'))

  def test_version_1_ledgers_still_load(self):
    record = {'format': 'tff_hdp.PrivacyLedger', 'version': 1,
              'orders': None, 'groups': {'private': [
                  {'sampling_rate': 0.2, 'noise_multiplier': 2.0,
                   'count': 3}]}}
    ledger = privacy_ledger.PrivacyLedger.from_dict(record)
    self.assertEqual(ledger.history('private'), ((0.2, 2.0, 3),))
    self.assertTrue(ledger.is_bound)

  def test_pld_over_the_history(self):
    ledger = privacy_ledger.PrivacyLedger()
    ledger.step('private', 0.2, 2.0, 60)
    ledger.step('private', 0.1, 1.0, 40)
    pld = ledger.get_epsilon('private', 1e-4, accountant='pld')
    self.assertLess(pld, ledger.get_epsilon('private', 1e-4))
    self.assertEqual(ledger.epsilons(1e-4, 'pld'), {'private': pld})
    single = privacy_ledger.PrivacyLedger()
    single.step('g', 0.2, 2.0, 100)
    self.assertAlmostEqual(
        single.get_epsilon('g', 1e-4, 'pld'),
        accounting.compute_epsilon(0.2, 2.0, 100, 1e-4, accountant='pld'),
        places=9)

  def test_unknown_accountant(self):
    with self.assertRaisesRegex(ValueError, 'unknown accountant'):
      privacy_ledger.PrivacyLedger().get_epsilon('g', 1e-5, accountant='x')


if __name__ == '__main__':
  absltest.main()
