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
"""What one round of a process spends, per accounted unit (shared).

`RoundPrivacy` is plain accounting, no TFF: per unit (a FedHDP group, a
Robust-HDP client, UDP-Alg's users) the Poisson-subsampled Gaussian
mechanisms a round composes, the ledger and epsilons after some rounds,
and the budgets a process's `next` must not pass
(`tff_hdp.templates.PrivateLearningProcess`). TensorFlow-free.
"""

import collections.abc
import dataclasses
from typing import Mapping, Optional, Union

from tff_hdp.privacy import privacy_ledger

Rounds = Union[int, Mapping[str, int]]


@dataclasses.dataclass(frozen=True)
class RoundPrivacy:
  """What one round spends, per accounted unit, and at which level.

  Attributes:
    level: What a neighbouring dataset changes, e.g. 'client-level' (one
      client's data, FedHDP), 'example-level' (one example of client i's
      data, Robust-HDP), 'user-level' (UDP-Alg).
    mechanisms: Per unit (group or client name), (sampling_rate,
      noise_multiplier, steps per round): each round a unit takes part in
      composes `steps` Poisson-subsampled Gaussian mechanisms.
    delta: The delta of the reported epsilons.
    is_bound: Whether epsilon bounds what the process releases: its
      accounting is a bound for the run's sampling and its mechanism key is
      secret (`tff_hdp.privacy.mechanism_key.ledger_terms`).
    accountant: 'rdp' or 'pld' (`tff_hdp.privacy.accounting`).
    orders: The RDP orders of the accounting (None: dp_accounting's).
    not_bound_because: Why epsilon is not a bound, if it is not.
    budgets: Per unit, the epsilon it must not exceed (a unit not named has
      no budget): `PrivateLearningProcess.next` refuses a round that would
      spend past one.
    calibrated_rounds: The horizon: the rounds the budgets hold for (the
      builders' `config.rounds`; said in the refusal). Robust-HDP's noise is
      calibrated so that they spend each epsilon_i; FedHDP's and UDP-Alg's
      budgets are the epsilon of that many rounds of their noise.
  """
  level: str
  mechanisms: Mapping[str, tuple[float, float, int]]
  delta: float
  is_bound: bool = True
  accountant: str = 'rdp'
  orders: Optional[tuple[float, ...]] = None
  not_bound_because: Optional[str] = None
  budgets: Optional[Mapping[str, float]] = None
  calibrated_rounds: Optional[int] = None
  # Per unit: the most rounds whose epsilon is known to be within its
  # budget (`check_budgets`); a cache of this object's own, not part of
  # what is accounted.
  _within: dict = dataclasses.field(default_factory=dict, init=False,
                                    compare=False, repr=False)

  def unit_rounds(self, rounds: Rounds) -> dict[str, int]:
    """Rounds per unit: `rounds` for every unit, or each unit's own count
    (a unit not named: 0)."""
    if isinstance(rounds, collections.abc.Mapping):
      return {name: int(rounds.get(name, 0)) for name in self.mechanisms}
    return {name: int(rounds) for name in self.mechanisms}

  def ledger(self, rounds: Rounds
             ) -> privacy_ledger.PrivacyLedger:
    """The ledger after `rounds` rounds (one count for every unit, or a
    count per unit: the rounds each took part in)."""
    ledger = privacy_ledger.PrivacyLedger(
        self.orders, is_bound=self.is_bound,
        not_bound_because=self.not_bound_because)
    for name, count in self.unit_rounds(rounds).items():
      rate, z, steps = self.mechanisms[name]
      if count:
        ledger.step(name, rate, z, count=count * steps)
    return ledger

  def epsilons(self, rounds: Rounds) -> dict[str, float]:
    """epsilon per unit at `delta` after `rounds` (0 for a unit's 0)."""
    counts = self.unit_rounds(rounds)
    ledger = self.ledger(counts)
    return {name: (ledger.get_epsilon(name, self.delta, self.accountant)
                   if count else 0.0) for name, count in counts.items()}

  def budgeted_for(self, rounds: int) -> 'RoundPrivacy':
    """This accounting with each unit's budget the epsilon of `rounds`
    rounds (for a process calibrated by its noise, not by a target)."""
    budgets = self.epsilons(rounds)
    budgeted = dataclasses.replace(self, budgets=budgets,
                                   calibrated_rounds=rounds)
    budgeted._within.update(dict.fromkeys(budgets, rounds))
    return budgeted

  def check_budgets(self, rounds: Rounds,
                    round_num: int) -> None:
    """Raises a one-line ValueError if `rounds` take a unit past its budget
    (relative tolerance `BUDGET_TOLERANCE`, the accountant's rounding).

    Args:
      rounds: The counts after round `round_num` (as `ledger` takes them).
      round_num: The round (1-based) that would spend them.
    """
    if not self.budgets:
      return
    counts = {name: count for name, count in self.unit_rounds(rounds).items()
              if name in self.budgets}
    for name, count in counts.items():
      budget = self.budgets[name]
      if count <= self._rounds_within(name, count):
        continue
      epsilon = self.epsilons({name: count})[name]
      if epsilon > budget * (1 + BUDGET_TOLERANCE):
        calibrated = ('' if self.calibrated_rounds is None else
                      f'; the process was calibrated for '
                      f'{self.calibrated_rounds} rounds (config.rounds)')
        raise ValueError(
            f'round {round_num} refused: {name} would spend epsilon '
            f'{epsilon:.4g} over its budget {budget:.4g} '
            f'({count} rounds at delta {self.delta:g}){calibrated}')
      self._within[name] = count

  def _rounds_within(self, name: str, count: int) -> int:
    """The most rounds of `name` known to stay within its budget, after
    checking, once, the horizon (`calibrated_rounds`) if `count` is within
    it. A unit's mechanism is the same every round, so its epsilon does not
    decrease with its rounds: every count up to a known one is within too,
    and a round's check is then no accountant call (the accountant takes
    about a second a unit on a run's orders)."""
    known = self._within.get(name, 0)
    horizon = self.calibrated_rounds
    if count > known and horizon is not None and known < horizon >= count:
      epsilon = self.epsilons({name: horizon})[name]
      if epsilon <= self.budgets[name] * (1 + BUDGET_TOLERANCE):
        known = self._within[name] = horizon
    return known


# The relative excess over a budget `RoundPrivacy.check_budgets` lets pass:
# the accountant's and the calibration's rounding.
BUDGET_TOLERANCE = 1e-6
