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
"""The budget check of `RoundPrivacy`: exact, and one accountant call."""

import pytest

from tff_hdp.privacy import accounting
from tff_hdp.privacy import round_privacy

MECHANISMS = {'private_1': (0.05, 1.1, 1), 'private_2': (0.05, 0.9, 2)}


def _privacy(**kwargs):
  return round_privacy.RoundPrivacy('client-level', MECHANISMS, 1e-5,
                                    **kwargs)


def test_refused_exactly_past_the_budget_as_the_accountant_says():
  # The budget between the accountant's epsilon of 7 and of 8 rounds
  # (dp_accounting's RDP accountant, through `compute_epsilon`): the
  # check passes 7 rounds and refuses the 8th.
  eps_7, eps_8 = (accounting.compute_epsilon(0.05, 0.9, 2 * n, 1e-5)
                  for n in (7, 8))
  assert eps_7 < eps_8
  privacy = _privacy(budgets={'private_2': (eps_7 + eps_8) / 2},
                     calibrated_rounds=5)
  for count in range(1, 8):
    privacy.check_budgets({'private_2': count}, count)
  with pytest.raises(ValueError, match=r'round 8 refused: private_2 would '
                     r'spend epsilon .* \(8 rounds at delta 1e-05\)'):
    privacy.check_budgets({'private_2': 8}, 8)


def test_a_run_within_its_horizon_calls_the_accountant_once_a_unit(
    monkeypatch):
  privacy = _privacy().budgeted_for(50)
  calls = []
  epsilons = round_privacy.RoundPrivacy.epsilons
  monkeypatch.setattr(round_privacy.RoundPrivacy, 'epsilons',
                      lambda self, rounds: calls.append(rounds) or
                      epsilons(self, rounds))
  for count in range(1, 51):
    privacy.check_budgets(count, count)
  assert not calls  # budgeted_for computed the horizon's epsilons.
  with pytest.raises(ValueError, match='round 51 refused'):
    privacy.check_budgets(51, 51)
  # A budget given as a target (Robust-HDP's epsilon_i): the horizon once.
  target = _privacy(budgets={'private_1': 3.0}, calibrated_rounds=40)
  for count in range(1, 41):
    target.check_budgets({'private_1': count}, count)
  assert calls[1:] == [{'private_1': 40}]
