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
"""Privacy-loss-distribution (PLD) accounting with a refined discretisation.

`dp_accounting.pld.PLDAccountant` discretises every event's privacy loss on
a grid of spacing Delta (`value_discretization_interval`) by the pessimistic
"connect the dots" construction (Doroshenko, Ghazi, Kamath, Kumar and
Manurangsi 2022, "Connect the Dots: Tighter Discrete Approximations of
Privacy Loss Distributions"), so the epsilon it reports is an upper bound.
Composing T steps on that grid carries the discretisation error of each:
epsilon(Delta) - epsilon grows like c T Delta^2 (relative error about
Delta^2 / (12 sigma_1^2) for large T, sigma_1^2 the variance of one step's
privacy loss), so a fixed Delta is fine for short compositions and too
coarse for long ones at small epsilon. `epsilon` therefore starts from

  Delta_0 = min(1e-3, 0.05 / sqrt(T_total))                              (1)

(T_total: the number of compositions, counting `SelfComposedDpEvent`s), and
halves Delta until epsilon moves by less than `relative_tolerance` (0.1%),
returning the value at the finest Delta. The error being quadratic in
Delta, each halving cuts it by about 4, so the value returned is within
about 0.03% of the limit. `noise_multiplier_for_epsilon` solves for z at the
interval this refinement settles on near the root, so a calibrated z and
the epsilon reported for it agree.

TensorFlow-free: `dp_accounting`, scipy and the standard library only. Why
(1), and what was measured: docs/accounting.md, "PLD's refined
discretisation"; tests/privacy/test_pld.py checks the result against an
independent privacy-loss distribution composed by FFT.
"""

import math
from typing import Callable, List, Sequence, Tuple

import dp_accounting
from scipy import optimize

from tff_hdp.privacy import arguments

# Start-interval rule (1) of the module docstring.
START_INTERVAL_CAP = 1e-3
START_INTERVAL_SCALE = 0.05
# At most this many halvings of the start interval (a factor 2^12 = 4096).
MAX_REFINEMENTS = 12
DEFAULT_RELATIVE_TOLERANCE = 1e-3

_ADD_OR_REMOVE_ONE = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE

Composition = Tuple[dp_accounting.DpEvent, int]


# ----------------------------------------------------------------------------
# Argument checks: one-line ValueErrors naming the argument and allowed range.
# ----------------------------------------------------------------------------


def _check_event(event, name: str = 'event') -> dp_accounting.DpEvent:
  if not isinstance(event, dp_accounting.DpEvent):
    raise ValueError(f'{name} must be a dp_accounting.DpEvent, got {event!r}')
  if not make_accountant(START_INTERVAL_CAP).supports(event):
    raise ValueError(f'{name} {event!r} is not supported by dp_accounting\'s '
                     'PLDAccountant under add-or-remove-one neighbours')
  return event


def _check_compositions(compositions) -> List[Composition]:
  """Validated (event, count) pairs, equal events merged, count-0 dropped.

  Composition commutes, so equal events are merged into one (event, total
  count) at the position of their first occurrence: a ledger of many runs at
  the same (q, z) composes one self-composition instead of many.
  """
  if isinstance(compositions, (str, bytes)) or not isinstance(
      compositions, Sequence):
    raise ValueError('compositions must be a sequence of (event, count) '
                     f'pairs, got {compositions!r}')
  merged = []
  for i, pair in enumerate(compositions):
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
      raise ValueError(f'compositions[{i}] must be an (event, count) pair, '
                       f'got {pair!r}')
    event = _check_event(pair[0], f'compositions[{i}] event')
    count = arguments.check_count(pair[1], f'compositions[{i}] count')
    if count == 0 or isinstance(event, dp_accounting.NoOpDpEvent):
      continue
    for j, (other, other_count) in enumerate(merged):
      if other == event:
        merged[j] = (other, other_count + count)
        break
    else:
      merged.append((event, count))
  return merged


# ----------------------------------------------------------------------------
# The refinement.
# ----------------------------------------------------------------------------


def make_accountant(
    value_discretization_interval: float) -> dp_accounting.pld.PLDAccountant:
  """An empty add-or-remove-one `PLDAccountant` at the given interval (> 0)."""
  interval = arguments.check_positive(value_discretization_interval,
                             'value_discretization_interval')
  return dp_accounting.pld.PLDAccountant(
      neighboring_relation=_ADD_OR_REMOVE_ONE,
      value_discretization_interval=interval)


def _event_count(event: dp_accounting.DpEvent) -> int:
  """Number of elementary mechanisms in `event` (self-compositions expanded)."""
  if isinstance(event, dp_accounting.SelfComposedDpEvent):
    return event.count * _event_count(event.event)
  if isinstance(event, dp_accounting.ComposedDpEvent):
    return sum(_event_count(e) for e in event.events)
  if isinstance(event, dp_accounting.NoOpDpEvent):
    return 0
  return 1


def _start_interval(total_count: int) -> float:
  """Rule (1) of the module docstring."""
  return min(START_INTERVAL_CAP,
             START_INTERVAL_SCALE / math.sqrt(max(total_count, 1)))


def _epsilon_at(compositions: Sequence[Composition], delta: float,
                interval: float) -> float:
  accountant = make_accountant(interval)
  for event, count in compositions:
    accountant.compose(event, count)
  return float(accountant.get_epsilon(delta))


def _total_count(compositions: Sequence[Composition]) -> int:
  return sum(_event_count(event) * count for event, count in compositions)


def _refine(epsilon_at: Callable[[float], float], total_count: int,
            relative_tolerance: float) -> Tuple[float, float]:
  """(epsilon, interval) at the finest interval of the halving ladder.

  Args:
    epsilon_at: interval -> PLD epsilon of the composition at that interval.
    total_count: Number of compositions, for the start interval.
    relative_tolerance: Stop when a halving moves epsilon by at most this.
  """
  interval = _start_interval(total_count)
  previous = epsilon_at(interval)
  # inf: a non-private event. 0: the pessimistic bound is already 0, and
  # finer grids only lower it.
  if previous == 0.0 or math.isinf(previous):
    return previous, interval
  current = previous
  for _ in range(MAX_REFINEMENTS):
    interval /= 2.0
    current = epsilon_at(interval)
    if abs(previous - current) <= relative_tolerance * current:
      break
    previous = current
  return current, interval


def epsilon(compositions: Sequence[Composition],
            delta: float,
            *,
            relative_tolerance: float = DEFAULT_RELATIVE_TOLERANCE) -> float:
  """epsilon of the composed events at `delta`, on a refined PLD grid.

  The events are composed by `dp_accounting`'s `PLDAccountant` under
  add-or-remove-one neighbours (e.g. `GaussianDpEvent(z)`,
  `PoissonSampledDpEvent(q, GaussianDpEvent(z))`, their self-compositions).
  The discretisation interval starts at rule (1) of the module docstring,
  min(1e-3, 0.05 / sqrt(T)) for T compositions in total, and is halved until
  epsilon changes by at most `relative_tolerance` (relative to the finer
  value), at most `MAX_REFINEMENTS` times. The value at the finest interval is
  returned: like every PLDAccountant value it is pessimistic (an upper bound
  on the tight epsilon, up to dp_accounting's own guarantees), and for the
  Poisson-subsampled Gaussian it is within ~relative_tolerance / 3 of the
  tight epsilon once the ladder stops (the error is quadratic in the
  interval). If `MAX_REFINEMENTS` halvings do not settle, the finest value is
  returned all the same: still an upper bound, only possibly looser than
  `relative_tolerance`.

  Args:
    compositions: (event, count) pairs, composed in order (equal events are
      merged; composition commutes).
    delta: delta in (0, 1).
    relative_tolerance: Stop when one halving moves epsilon by at most this
      fraction (> 0).

  Returns:
    epsilon >= 0: 0.0 when there is nothing to compose (no pairs, or all
    counts 0); math.inf when an event is not private (e.g. z = 0 with q > 0).

  Raises:
    ValueError: on a malformed pair, a count that is not an integer >= 0, an
      event the PLD accountant does not support, delta outside (0, 1) or a
      tolerance that is not > 0.
  """
  compositions = _check_compositions(compositions)
  delta = arguments.check_delta(delta)
  relative_tolerance = arguments.check_positive(relative_tolerance,
                                       'relative_tolerance')
  if not compositions:
    return 0.0
  return _refine(lambda interval: _epsilon_at(compositions, delta, interval),
                 _total_count(compositions), relative_tolerance)[0]


def _check_bracket(bracket) -> Tuple[float, float]:
  """(lo, hi) of `bracket`, a pair with 0 < lo < hi."""
  if (isinstance(bracket, (str, bytes)) or not isinstance(bracket, Sequence)
      or len(bracket) != 2):
    raise ValueError(f'bracket must be a pair (lo, hi), got {bracket!r}')
  lo = arguments.check_positive(bracket[0], 'bracket[0]')
  hi = arguments.check_positive(bracket[1], 'bracket[1]')
  if not lo < hi:
    raise ValueError(f'bracket must have lo < hi, got {bracket!r}')
  return lo, hi


class _Calibration:
  """The refined epsilon of `count` compositions of make_event(z), in z.

  Evaluations are memoised on (z, interval), so the refinement ladder and
  the root finder share them. `noise_multiplier_for_epsilon` describes the
  steps.
  """

  def __init__(self, make_event: Callable[[float], dp_accounting.DpEvent],
               count: int, target: float, delta: float,
               bracket: Tuple[float, float]):
    self._make_event = make_event
    self._count = count
    self._target = target
    self._delta = delta
    self._lo, self._hi = bracket
    self._total = _total_count(
        _check_compositions([(make_event(self._hi), count)]))
    self.start = _start_interval(self._total)
    self._memo = {}

  def gap(self, z: float, interval: float) -> float:
    """epsilon(z) - target at `interval`, memoised."""
    key = (z, interval)
    if key not in self._memo:
      self._memo[key] = _epsilon_at(
          _check_compositions([(self._make_event(z), self._count)]),
          self._delta, interval) - self._target
    return self._memo[key]

  def refined(self, z: float) -> Tuple[float, float]:
    """(epsilon, interval) where the ladder of `epsilon` settles at z."""
    return _refine(lambda iv: self.gap(z, iv) + self._target, self._total,
                   DEFAULT_RELATIVE_TOLERANCE)

  def check_reachable(self, bracket) -> None:
    """Raises ValueError if the refined epsilon at hi exceeds the target."""
    if self.gap(self._hi, self.start) > 0.0:
      eps_hi = self.refined(self._hi)[0]
      if eps_hi > self._target:
        raise ValueError(f'target_epsilon {self._target!r} is not reachable '
                         f'in bracket {bracket!r}: epsilon at '
                         f'z={self._hi!r} is {eps_hi!r}')

  def solve(self, interval: float, guess: float, xtol: float) -> float:
    """z in [root, root + 2 xtol] at `interval` (lo / hi if outside)."""
    lo, hi = self._lo, self._hi
    if self.gap(lo, interval) <= 0.0:
      return lo
    if self.gap(hi, interval) > 0.0:
      return hi
    a = max(lo, guess * 0.95)
    if self.gap(a, interval) <= 0.0:
      a = lo
    b = min(hi, guess * 1.05)
    if self.gap(b, interval) > 0.0:
      b = hi
    z = optimize.brentq(lambda s: self.gap(s, interval), a, b, xtol=xtol)
    for _ in range(100):  # Brent's |z - root| <= xtol: one step suffices.
      if self.gap(z, interval) <= 0.0:
        break
      z += xtol
    return z

  def settle(self, z: float, tol: float) -> float:
    """Steps 3 and 4 of `noise_multiplier_for_epsilon` from a rough root z."""
    interval = self.refined(z)[1]
    for _ in range(3):
      z = self.solve(interval, z, tol / 2.0)
      eps, settled = self.refined(z)
      if settled == interval:
        break
      interval = settled
    for _ in range(1000):
      if eps <= self._target:
        return z
      z += tol
      eps = self.refined(z)[0]
    raise ValueError(f'no z within 1000 tol of {z - 1000 * tol!r} meets '
                     f'target_epsilon {self._target!r}')


def noise_multiplier_for_epsilon(make_event: Callable[[float],
                                                      dp_accounting.DpEvent],
                                 count: int,
                                 target_epsilon: float,
                                 delta: float,
                                 *,
                                 bracket: Tuple[float, float],
                                 tol: float) -> float:
  """Smallest noise multiplier z (within tol) whose refined epsilon <= target.

  epsilon here is `epsilon([(make_event(z), count)], delta)`, decreasing in
  z. To keep the work near one calibration at one interval:
    1. a rough root (to 1e-3 lo) is found at the start interval of rule (1)
       (cheap, and an upper bound on the refined root: coarser grids are
       pessimistic);
    2. the refinement ladder of `epsilon` is run there, giving the interval
       it settles on near the root;
    3. z is solved at that interval with Brent's method (scipy brentq, to
       tol / 2, bracketed within 5% of the rough root when possible) and
       moved to the private side of the root, so z is in [root, root + tol];
    4. z is checked with the ladder of `epsilon` itself: if the ladder
       settles on another interval at z, step 3 is redone there (at most
       three times), and z is stepped up by tol until epsilon(z) <= target.
  Evaluations are memoised on (z, interval), so the ladder and the solver
  share them. The result satisfies epsilon(z) <= target_epsilon and, barring
  a change of the ladder's interval between z - tol and z,
  epsilon(z - tol) > target_epsilon.

  Args:
    make_event: z -> DpEvent (one composition; e.g.
      `lambda z: PoissonSampledDpEvent(q, GaussianDpEvent(z))`).
    count: Number of compositions of the event (integer >= 0).
    target_epsilon: epsilon > 0.
    delta: delta in (0, 1).
    bracket: (lo, hi), 0 < lo < hi, with the root inside: epsilon(hi) must be
      <= target_epsilon (else ValueError); if epsilon(lo) already is (at the
      interval the solver uses), lo is returned.
    tol: Absolute tolerance on z (> 0).

  Returns:
    z in [lo, hi + tol]; 0.0 when count = 0 (nothing is released).
  """
  if not callable(make_event):
    raise ValueError(f'make_event must be callable, got {make_event!r}')
  count = arguments.check_count(count, 'count')
  target = arguments.check_positive(target_epsilon, 'target_epsilon')
  delta = arguments.check_delta(delta)
  tol = arguments.check_positive(tol, 'tol')
  lo, hi = _check_bracket(bracket)
  if count == 0:
    return 0.0
  calibration = _Calibration(make_event, count, target, delta, (lo, hi))
  calibration.check_reachable(bracket)
  # A rough root, to find the interval the ladder settles on near the root.
  z = calibration.solve(calibration.start, hi, 1e-3 * lo)
  if z == lo:
    return lo
  return calibration.settle(z, tol)
