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
"""The privacy ledger of a run: what each privacy group has spent, saved.

One idea: the record of a run's releases, per privacy group, as runs of
identical rounds (q, z, count) or (q, z, count, N), from which epsilon is
recomputed on demand with `accounting`'s round events (a fresh
`dp_accounting` accountant's, remembered per history within a process, so a
restored ledger reports bit-identical epsilons), and its file format: JSON
with format 'tff_hdp.PrivacyLedger', version 2 (version 1, from before
fixed cohorts were accounted, still loads).

Every system keeps one: FedHDP one entry per private group, stepped in each
round the group is queried (`tff_hdp.fedhdp.training`); UDP-Alg one entry for
its users (`tff_hdp.udp.training`); `tff_hdp.privacy.round_privacy.RoundPrivacy.ledger`
builds the one behind each learning process's `epsilon(state)` (FedHDP's
groups, Robust-HDP's clients, UDP-Alg's users); and `tff_hdp.checkpoint`
saves it with every checkpoint, so that a resumed run keeps counting where it
stopped.

This module is TensorFlow-free: it imports only `dp_accounting` and the
package's accountants.
"""

import functools
import json
import math
import os
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import dp_accounting
from dp_accounting import rdp

from tff_hdp.privacy import accounting
from tff_hdp.privacy import arguments
from tff_hdp.privacy import pld

_LEDGER_FORMAT = 'tff_hdp.PrivacyLedger'
_LEDGER_VERSION = 2
_REALISED_DENOMINATORS = ('the Poisson approximation (realised denominators '
                          'reveal who took part)')


class PrivacyLedger:
  """Per-group RDP ledger of a run, saved and restored with the run.

  Each private group has its own history of rounds in which it was queried,
  kept as runs `(q, z, count)` of identical consecutive steps (500 rounds at a
  fixed (q, z) are one entry), or `(q, z, count, N)` for rounds that drew a
  fixed cohort of q N out of N (accounted under replace-one neighbours, see
  `accounting`; one group's rounds must all share one relation).
  epsilon is always that of a fresh `dp_accounting` accountant composing the
  history (remembered per history within the process), so a ledger restored
  by `from_json` / `load` reports bit-identical epsilons, and stepping
  250 + 250 rounds equals stepping 500 at once.

  `is_bound` says whether the epsilons are bounds for what ran. A run whose
  release the events do not describe (FedHDP's Poisson cohorts with realised
  denominators, where the counts reveal who took part) keeps its Poisson
  figure, but as an approximation: `is_bound=False`, and every report says so.
  So does a run whose noise and sampling can be regenerated from a published
  `mechanism_seed` (`tff_hdp.privacy.mechanism_key`): its epsilon is the
  mechanism's, not a guarantee for its outputs. `not_bound_because` says
  why, in the words every report uses.

  A group that was never stepped (or the non-private group, which is never
  stepped) has epsilon = 0; a group stepped with z = 0 and q > 0 has inf.

  Example:
    ledger = PrivacyLedger()
    for _ in range(rounds):
      ...  # train one round
      ledger.step('private', sampling_rate=0.05, noise_multiplier=1.5)
    ledger.save(os.path.join(root_dir, 'privacy_ledger.json'))
    ledger.get_epsilon('private', delta=1e-4)   # ~3.61
  """

  def __init__(self, orders: Optional[Sequence[float]] = None, *,
               is_bound: bool = True,
               not_bound_because: Optional[str] = None):
    """Creates an empty ledger.

    Args:
      orders: RDP orders of every accountant; `dp_accounting`'s default grid
        when None.
      is_bound: False when the run's release is not what the recorded events
        describe, so that its epsilons are approximations (see above).
      not_bound_because: Why not, when `is_bound` is False (default:
        realised denominators, FedHDP's case).
    """
    self._orders = arguments.check_orders(orders)
    self._is_bound = bool(is_bound)
    self._not_bound_because = None if is_bound else (
        not_bound_because or _REALISED_DENOMINATORS)
    self._history: Dict[str, List[List]] = {}

  @property
  def orders(self) -> Optional[Tuple[float, ...]]:
    return self._orders

  @property
  def is_bound(self) -> bool:
    """Whether every epsilon of this ledger bounds the run that recorded it."""
    return self._is_bound

  @property
  def not_bound_because(self) -> Optional[str]:
    """Why the epsilons are not bounds (None if they are)."""
    return self._not_bound_because

  @property
  def groups(self) -> Tuple[str, ...]:
    """Names of the groups the ledger knows, in order of first step."""
    return tuple(self._history)

  def history(self, group: str) -> Tuple[Tuple, ...]:
    """The runs `(q, z, count)` (or `(q, z, count, N)`) of `group`."""
    return tuple(
        tuple(run[:3]) if run[3] is None else tuple(run)
        for run in self._history.get(group, ()))

  def rounds(self, group: str) -> int:
    """Number of rounds recorded for `group`."""
    return sum(run[2] for run in self._history.get(group, ()))

  def relation(self, group: str) -> Optional[str]:
    """`accounting.ADD_OR_REMOVE_ONE` or `REPLACE_ONE`; None if unstepped."""
    runs = self._history.get(group)
    return accounting.relation_of(runs[0][3]) if runs else None

  def step(self,
           group: str,
           sampling_rate: float,
           noise_multiplier: float,
           count: int = 1,
           *,
           population: Optional[int] = None) -> None:
    """Records `count` rounds in which `group` was queried at (q, z).

    Args:
      group: Name of the privacy group (e.g. 'private', 'private_2').
      sampling_rate: q in [0, 1], the group's Poisson sampling rate, or the
        cohort's share n / N of a fixed cohort.
      noise_multiplier: z >= 0, the effective noise multiplier of the round
        (relative to one client's add/remove sensitivity).
      count: Number of identical rounds (>= 0).
      population: N, when each round drew a fixed cohort of q N clients
        without replacement (replace-one neighbours); None for Poisson.
    """
    if not isinstance(group, str) or not group:
      raise ValueError(f'group must be a non-empty string, got {group!r}')
    q = arguments.check_sampling_rate(sampling_rate)
    z = arguments.check_noise(noise_multiplier)
    count = arguments.check_count(count, 'count')
    population = arguments.check_population(population, q)
    runs = self._history.setdefault(group, [])
    if count == 0:
      return
    relation = accounting.relation_of(population)
    if runs and accounting.relation_of(runs[0][3]) != relation:
      raise ValueError(
          f'group {group!r} is accounted under {self.relation(group)}; a '
          f'round under {relation} cannot compose with it')
    if runs and runs[-1][0] == q and runs[-1][1] == z and (
        runs[-1][3] == population):
      runs[-1][2] += count
    else:
      runs.append([q, z, count, population])

  def _runs(self, group: str) -> Tuple[Tuple, ...]:
    """`group`'s runs (q, z, count, population), hashable."""
    return tuple(tuple(run) for run in self._history.get(group, ()))

  def get_epsilon(self, group: str, delta: float,
                  accountant: str = 'rdp') -> float:
    """epsilon of `group` at `delta` in (0, 1); 0 if it was never stepped.

    `accountant`: 'rdp' (this ledger's orders) or 'pld' (`pld.epsilon` over
    the same history; Poisson rounds only, see
    `accounting.compute_epsilon`).
    """
    d = arguments.check_delta(delta)
    accountant = accounting.check_accountant(accountant)
    if not self._history.get(group):
      return 0.0
    if accountant == 'pld' and self.relation(group) != (
        accounting.ADD_OR_REMOVE_ONE):
      accounting.check_pld_relation(self._history[group][0][3])
    # A sampled round without noise releases a client's update as it is (as
    # `accounting.compute_epsilon`; dp_accounting's fixed-cohort RDP divides
    # by z).
    if any(q > 0 and z == 0 and count > 0
           for q, z, count, _ in self._history[group]):
      return math.inf
    if accountant == 'pld':
      return _pld_epsilon(self._runs(group), d)
    return float(_composed(self._orders, self.relation(group),
                           self._runs(group)).get_epsilon(d))

  def epsilons(self, delta: float,
               accountant: str = 'rdp') -> Dict[str, float]:
    """`{group: epsilon}` at `delta` for every group the ledger knows."""
    return {group: self.get_epsilon(group, delta, accountant)
            for group in self._history}

  def guarantee(self, group: str) -> str:
    """What `group`'s epsilon is, in words for a report."""
    relation = self.relation(group)
    if relation is None:
      return 'no rounds recorded'
    if not self._is_bound:
      return f'not a bound: {self._not_bound_because}'

    if relation == accounting.REPLACE_ONE:
      return 'bound, replace-one neighbours, fixed cohort'
    return 'bound, add-or-remove-one neighbours, Poisson sampling'

  def to_dict(self) -> Dict:
    """A JSON-serialisable record of the ledger (floats round-trip exactly)."""
    def run_record(q, z, count, population):
      record = {'sampling_rate': q, 'noise_multiplier': z, 'count': count}
      if population is not None:
        record['population'] = population
      return record

    return {
        'format': _LEDGER_FORMAT,
        'version': _LEDGER_VERSION,
        'orders': None if self._orders is None else list(self._orders),
        'is_bound': self._is_bound,
        'not_bound_because': self._not_bound_because,
        'groups': {group: [run_record(*run) for run in runs]
                   for group, runs in self._history.items()},
    }

  @classmethod
  def from_dict(cls, record: Mapping) -> 'PrivacyLedger':
    """Inverse of `to_dict`; raises ValueError on a malformed record.

    Version 1 records (before fixed cohorts were accounted) hold Poisson
    rounds only and read as bounds.
    """
    if not isinstance(record, Mapping) or record.get(
        'format') != _LEDGER_FORMAT:
      raise ValueError(f'ledger record must have format {_LEDGER_FORMAT!r}')
    if record.get('version') not in (1, _LEDGER_VERSION):
      raise ValueError(f'ledger version must be 1 or {_LEDGER_VERSION}, got '
                       f'{record.get("version")!r}')
    ledger = cls(orders=record.get('orders'),
                 is_bound=record.get('is_bound', True),
                 not_bound_because=record.get('not_bound_because'))
    groups = record.get('groups', {})
    if not isinstance(groups, Mapping):
      raise ValueError('ledger groups must be a mapping of group to runs')
    for group, runs in groups.items():
      ledger._history.setdefault(group, [])  # pylint: disable=protected-access
      for run in runs:
        try:
          q, z, count = run['sampling_rate'], run['noise_multiplier'], run[
              'count']
        except (KeyError, TypeError):
          raise ValueError(
              f'ledger run of group {group!r} must have sampling_rate, '
              f'noise_multiplier and count, got {run!r}') from None
        ledger.step(group, q, z, count, population=run.get('population'))
    return ledger

  def to_json(self) -> str:
    return json.dumps(self.to_dict(), indent=1, sort_keys=True)

  @classmethod
  def from_json(cls, text: str) -> 'PrivacyLedger':
    try:
      record = json.loads(text)
    except json.JSONDecodeError as e:
      raise ValueError(f'ledger is not valid JSON: {e}') from None
    return cls.from_dict(record)

  def save(self, path: str) -> None:
    """Writes the ledger to `path` atomically (write, then rename)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = f'{path}.tmp{os.getpid()}'
    with open(tmp, 'w') as f:
      f.write(self.to_json())
      f.write('\n')
    os.replace(tmp, path)

  @classmethod
  def load(cls, path: str) -> 'PrivacyLedger':
    with open(path) as f:
      return cls.from_json(f.read())

  def __eq__(self, other) -> bool:
    if not isinstance(other, PrivacyLedger):
      return NotImplemented
    return self.to_dict() == other.to_dict()

  def __repr__(self) -> str:
    runs = {g: len(r) for g, r in self._history.items()}
    return f'PrivacyLedger(runs={runs})'


# epsilon is a function of a group's history alone, and composing
# dp_accounting's RDP of a subsampled Gaussian costs up to seconds (its
# fractional orders, in Python); runs of one process often share histories
# (HDP-Bench's rules train the same clients at the same z_i), so each
# composition is computed once per process. A remembered accountant is
# never composed further (a step makes a new history), so every epsilon
# stays the one a fresh accountant gives.
@functools.lru_cache(maxsize=4096)
def _composed(orders: Optional[Tuple[float, ...]], relation: str,
              runs: Tuple[Tuple, ...]) -> rdp.RdpAccountant:
  """A fresh RDP accountant on `orders` that composed `runs`."""
  accountant = accounting.fresh_accountant(orders, relation)
  for q, z, count, population in runs:
    accountant.compose(
        dp_accounting.SelfComposedDpEvent(
            accounting.round_event(q, z, population), count))
  return accountant


@functools.lru_cache(maxsize=1024)
def _pld_epsilon(runs: Tuple[Tuple, ...], delta: float) -> float:
  """`pld.epsilon` of Poisson `runs` at `delta`."""
  return pld.epsilon([(accounting.round_event(q, z), count)
                      for q, z, count, _ in runs], delta)


__all__ = ['PrivacyLedger']

