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
"""epsilon of a subsampled Gaussian mechanism composed T times, and its inverse.

`compute_epsilon` gives the (epsilon, delta) of T rounds of one subsampled
Gaussian mechanism (rate q, noise multiplier z relative to one unit's
sensitivity: a FedHDP client, a Robust-HDP example, a UDP-Alg user);
`noise_multiplier_for_epsilon` the smallest z that meets a target epsilon;
`round_event` and `relation_of` the round's `dp_accounting` event and
neighbouring relation, which `privacy_ledger.PrivacyLedger` composes.
TensorFlow-free: `dp_accounting`, scipy and the standard library only.

RDP, the default (the papers use it): one Poisson-subsampled round has, at
order alpha (Mironov, Talwar, Zhang 2019, arXiv:1908.10530, Sec. 3),

  eps_RDP(alpha) = log(A_alpha) / (alpha - 1),
  A_alpha = E_{x ~ N(0, z^2)}[((1 - q) + q exp((2x - 1) / (2 z^2)))^alpha];

T rounds add up (Mironov 2017, arXiv:1702.07476, Prop. 1), and the
conversion of Balle et al. 2020 (arXiv:1905.09982, Prop. 12) gives

  eps = min_alpha  T eps_RDP(alpha) + log(1 - 1/alpha)
                   - (log(delta) + log(alpha)) / (alpha - 1).

`conversion='classic'` is Mironov 2017's looser Prop. 3 (paper 003's Table
2 follows from it); `accountant='pld'` composes the same events by
privacy-loss distributions (`tff_hdp.privacy.pld`), never above RDP. Poisson
sampling is accounted under add-or-remove-one neighbours; a fixed cohort of
n = q N (`population=N`; RDP only) under replace-one, where every
sensitivity doubles, so the multiplier is z / 2 (Wang, Balle and
Kasiviswanathan 2019, Thm. 27). Take plain numbers (FedHDP: z_eff), not
TFF's float32 DP events. The details: docs/accounting.md.
"""

import dataclasses
import functools
import math
from typing import Callable, Optional, Sequence, Tuple, Union

import dp_accounting
from dp_accounting import rdp
from scipy import optimize

from tff_hdp.privacy import arguments
from tff_hdp.privacy import pld
from tff_hdp.privacy import rdp_search

# Default absolute tolerance on z of `noise_multiplier_for_epsilon`.
DEFAULT_NOISE_TOLERANCE = 1e-6

CONVERSIONS = ('improved', 'classic')
ACCOUNTANTS = ('rdp', 'pld')


# ----------------------------------------------------------------------------
# One Poisson-subsampled Gaussian mechanism, composed T times.
# ----------------------------------------------------------------------------


ADD_OR_REMOVE_ONE = 'add_or_remove_one'
REPLACE_ONE = 'replace_one'
_RELATIONS = {
    ADD_OR_REMOVE_ONE: dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
    REPLACE_ONE: dp_accounting.NeighboringRelation.REPLACE_ONE,
}


def relation_of(population: Optional[int]) -> str:
  """The neighbouring relation a round's sampling is accounted under."""
  return ADD_OR_REMOVE_ONE if population is None else REPLACE_ONE


def round_event(sampling_rate: float, noise_multiplier: float,
                population: Optional[int] = None) -> dp_accounting.DpEvent:
  """One round: Poisson at q, or (population N) a fixed cohort of q N.

  `noise_multiplier` is relative to one client's add/remove sensitivity;
  under replace-one the sensitivity doubles (module docstring).
  """
  if population is None:
    return dp_accounting.PoissonSampledDpEvent(
        sampling_rate, dp_accounting.GaussianDpEvent(noise_multiplier))
  return dp_accounting.SampledWithoutReplacementDpEvent(
      population, int(round(sampling_rate * population)),
      dp_accounting.GaussianDpEvent(noise_multiplier / 2.0))


def fresh_accountant(orders: Optional[Sequence[float]] = None,
                     relation: str = ADD_OR_REMOVE_ONE) -> rdp.RdpAccountant:
  """An empty RDP accountant on `orders` (None: dp_accounting's grid)."""
  return rdp.RdpAccountant(orders=None if orders is None else list(orders),
                           neighboring_relation=_RELATIONS[relation])


def check_pld_relation(population: Optional[int]) -> None:
  """Refuses a fixed cohort for PLD, which has no event for it."""
  if population is not None:
    raise ValueError("accountant 'pld' has no event for a fixed cohort "
                     "(sampling without replacement); use accountant 'rdp' "
                     'or Poisson sampling')


def check_accountant(accountant: str) -> str:
  """`accountant`, if it is one of `ACCOUNTANTS`."""
  if accountant not in ACCOUNTANTS:
    raise ValueError(f'unknown accountant {accountant!r}; allowed: '
                     f'{", ".join(ACCOUNTANTS)}')
  return accountant


def _check_conversion(conversion: str) -> str:
  if conversion not in CONVERSIONS:
    raise ValueError(f'unknown conversion {conversion!r}; allowed: '
                     f'{", ".join(CONVERSIONS)}')
  return conversion


@dataclasses.dataclass(frozen=True)
class Accountant:
  """How epsilon is accounted: the accountant, and RDP's orders and
  conversion (module docstring), checked when made.

  Attributes:
    name: 'rdp' (the papers') or 'pld' (`orders` and `conversion` do not
      apply; Poisson sampling only).
    orders: RDP orders (> 1) to minimise over, as a tuple; `dp_accounting`'s
      default grid when None.
    conversion: 'improved' (Balle et al. 2020) or 'classic' (Mironov 2017).
  """
  name: str = 'rdp'
  orders: Optional[Sequence[float]] = None
  conversion: str = 'improved'

  def __post_init__(self):
    check_accountant(self.name)
    object.__setattr__(self, 'orders', arguments.check_orders(self.orders))
    _check_conversion(self.conversion)


def as_accountant(accountant: Union[str, Accountant]) -> Accountant:
  """`accountant`, or the `Accountant` of that name on its defaults (a
  binary's flag gives the name)."""
  if isinstance(accountant, Accountant):
    return accountant
  return Accountant(accountant)


def _classic_epsilon(q: float, z: float, t: int, d: float,
                     orders: Optional[Tuple[float, ...]],
                     population: Optional[int] = None) -> float:
  """min_alpha T eps_RDP(alpha) - log(delta) / (alpha - 1) (Mironov 2017).

  `dp_accounting` converts only with the improved bound and keeps the RDP
  curve private. At a single order alpha the improved bound at
  delta_alpha = (delta / alpha) (1 - 1/alpha)^(alpha - 1) equals the classic
  bound at delta, so one single-order accountant per order gives the classic
  epsilon through the public API (at the cost of one accountant per order,
  the same work as one accountant over all of them).
  """
  best = math.inf
  for a in (orders if orders is not None else rdp.rdp_privacy_accountant
            .DEFAULT_RDP_ORDERS):
    a = float(a)
    delta_a = d / a * (1.0 - 1.0 / a)**(a - 1.0)
    accountant = fresh_accountant([a], relation_of(population))
    accountant.compose(
        dp_accounting.SelfComposedDpEvent(round_event(q, z, population), t))
    eps = float(accountant.get_epsilon(delta_a))
    if eps == 0.0:
      # dp_accounting's KL shortcut: T eps_RDP(alpha) <= -log(1 - delta_a^2).
      eps = -math.log1p(-delta_a**2) - math.log(d) / (a - 1.0)
    best = min(best, eps)
  return best


def compute_epsilon(sampling_rate: float,
                    noise_multiplier: float,
                    rounds: int,
                    delta: float,
                    *,
                    orders: Optional[Sequence[float]] = None,
                    conversion: Optional[str] = None,
                    accountant: Union[str, Accountant] = 'rdp',
                    population: Optional[int] = None) -> float:
  """epsilon of T rounds of the subsampled Gaussian mechanism.

  eps = min_alpha T log(A_alpha) / (alpha - 1) + log(1 - 1/alpha)
        - (log delta + log alpha) / (alpha - 1),
  with A_alpha as in the module docstring (Mironov 2017; Mironov, Talwar,
  Zhang 2019; conversion of Balle et al. 2020), computed by `dp_accounting`'s
  `RdpAccountant` on the `PoissonSampledDpEvent(q, GaussianDpEvent(z))`
  self-composed `rounds` times. With `population`, a fixed cohort of q N
  under replace-one neighbours instead (module docstring).

  Args:
    sampling_rate: q in [0, 1], Poisson probability that a client is sampled
      (for a fixed cohort of n out of N clients, q = n / N).
    noise_multiplier: z >= 0, the effective noise multiplier z_eff.
    rounds: T >= 0, number of rounds.
    delta: delta in (0, 1).
    orders: RDP orders (> 1) to minimise over; `dp_accounting`'s default grid
      (1.1 ... 10.9, 11 ... 63, 128, 256, 512, 1024) when None.
    conversion: 'improved' (the formula above; the default) or 'classic'
      (module doc).
    accountant: 'rdp' (the above) or 'pld' (module doc; `orders` and
      `conversion` do not apply; Poisson sampling only), or an `Accountant`
      (its name, orders and conversion, as `noise_multiplier_for_epsilon`
      takes it; then `orders` and `conversion` are not given beside it).
    population: N of a fixed cohort of q N clients drawn without
      replacement; None for Poisson sampling.

  Returns:
    epsilon >= 0: 0 if rounds = 0 or q = 0; inf if z = 0 with q > 0.
  """
  q = arguments.check_sampling_rate(sampling_rate)
  population = arguments.check_population(population, q)
  z = arguments.check_noise(noise_multiplier)
  t = arguments.check_count(rounds, 'rounds')
  d = arguments.check_delta(delta)
  if isinstance(accountant, Accountant):
    if orders is not None or conversion is not None:
      raise ValueError('orders and conversion are given by the Accountant; '
                       'pass them in it, not beside it')
    orders, conversion = accountant.orders, accountant.conversion
    accountant = accountant.name
  orders = arguments.check_orders(orders)
  conversion = _check_conversion(
      'improved' if conversion is None else conversion)
  accountant = check_accountant(accountant)
  if t == 0 or q == 0.0:
    return 0.0
  if accountant == 'pld':
    check_pld_relation(population)
  if z == 0.0:
    return math.inf
  if accountant == 'pld':
    return pld.epsilon([(round_event(q, z), t)], d)
  if conversion == 'classic':
    return _classic_epsilon(q, z, t, d, orders, population)
  return _rdp_epsilon(q, z, t, d, orders, population)


# One RDP composition at q = 0.5 takes up to about a second (dp_accounting sums
# the fractional orders' series in Python), and the same (q, z, T) is asked
# again in one process: `noise_multipliers_for_epsilons` checks each z it
# returns, then HDP-Bench checks each client's (q, z, T) of that calibration.
@functools.lru_cache(maxsize=4096)
def _rdp_epsilon(q: float, z: float, t: int, d: float,
                 orders: Optional[Tuple[float, ...]],
                 population: Optional[int]) -> float:
  """`compute_epsilon` by RDP, improved conversion, checked arguments."""
  accountant = fresh_accountant(orders, relation_of(population))
  accountant.compose(
      dp_accounting.SelfComposedDpEvent(round_event(q, z, population), t))
  return float(accountant.get_epsilon(d))


def _check_tolerance(tol: float) -> float:
  tol = arguments.as_real(tol, 'tol')
  if not 0.0 < tol < math.inf:
    raise ValueError(f'tol must be > 0 and finite, got {tol!r}')
  return tol


def _check_classic_floor(eps: float, q: float, t: int, d: float,
                         orders: Optional[Tuple[float, ...]]) -> None:
  """Refuses an epsilon at or below the classic conversion's floor."""
  # No noise brings the classic epsilon below -log(delta) / (alpha - 1).
  largest = max(orders if orders is not None else
                rdp.rdp_privacy_accountant.DEFAULT_RDP_ORDERS)
  if eps <= -math.log(d) / (largest - 1.0):
    raise ValueError(f'target_epsilon {eps!r} is not reachable for q={q!r}, '
                     f'rounds={t}, delta={d!r} with the classic conversion '
                     f'(its floor is {-math.log(d) / (largest - 1.0):.4g})')


def _bracket_root(eps_at: Callable[[float], float], eps: float, q: float,
                  t: int, d: float) -> Optional[Tuple[float, float]]:
  """(lo, hi) with eps_at(lo) > eps >= eps_at(hi), hi = 2 lo, or None.

  Doubles or halves z from 1 (z = 0 gives eps = inf, which Brent's method
  cannot evaluate). None if every z tried meets eps (cannot happen for
  q, T > 0).
  """
  hi = 1.0
  for _ in range(200):
    if eps_at(hi) <= eps:
      break
    hi *= 2.0
  else:
    raise ValueError(f'target_epsilon {eps!r} is not reachable for q={q!r}, '
                     f'rounds={t}, delta={d!r}')
  lo = hi / 2.0
  for _ in range(200):
    if eps_at(lo) > eps:
      break
    hi, lo = lo, lo / 2.0
  else:
    return None
  return lo, hi


def _solve_classic(eps_at: Callable[[float], float], eps: float, lo: float,
                   hi: float, tol: float) -> float:
  """The classic-conversion root in [lo, hi], on its private side.

  dp_accounting's calibrator reads its accountant's (improved) epsilon:
  this solves the classic one with Brent's method, then steps up to the side
  of the root whose epsilon is within the target.
  """
  z = optimize.brentq(lambda z: eps_at(z) - eps, lo, hi, xtol=tol)
  while eps_at(z) > eps:
    z += tol
  return float(z)


class _RememberedRdp:
  """What `dp_accounting.calibrate_dp_mechanism` asks of a fresh accountant
  (an empty ledger; compose the event of z; epsilon), answered by
  `_rdp_epsilon`: the same composition of T rounds of `round_event(q, z)`
  on a fresh accountant, remembered. The calibrator's evaluations at the
  bracket's ends (`_bracket_root` composed them) and its repeats, and
  another target's at the same (q, T), are then not composed again; each
  epsilon, and so the root, is the one a fresh accountant gives."""

  ledger = dp_accounting.NoOpDpEvent()

  def __init__(self, q: float, t: int,
               orders: Optional[Tuple[float, ...]],
               population: Optional[int]):
    self._terms = (q, t, orders, population)
    self._z = None

  def compose(self, z: float) -> '_RememberedRdp':
    self._z = float(z)
    return self

  def get_epsilon(self, delta: float) -> float:
    q, t, orders, population = self._terms
    return _rdp_epsilon(q, self._z, t, delta, orders, population)


def _calibrate_rdp(eps: float, q: float, t: int, d: float, *,
                   orders: Optional[Tuple[float, ...]],
                   population: Optional[int], bracket: Tuple[float, float],
                   tol: float) -> float:
  """`dp_accounting.calibrate_dp_mechanism` on the RDP accountant, each
  epsilon by `_rdp_epsilon` (`_RememberedRdp`: the event of a parameter z
  is z itself)."""
  return float(
      dp_accounting.calibrate_dp_mechanism(
          make_fresh_accountant=lambda: _RememberedRdp(q, t, orders,
                                                       population),
          make_event_from_param=lambda z: z,
          target_epsilon=eps,
          target_delta=d,
          bracket_interval=dp_accounting.ExplicitBracketInterval(*bracket),
          tol=tol))


def _calibration_arguments(sampling_rate, rounds, delta, tol, accountant,
                           population):
  """A calibration's arguments in z, checked (one clear line each):
  (q, T, delta, tol, accountant (an `Accountant`), population)."""
  q = arguments.check_sampling_rate(sampling_rate)
  population = arguments.check_population(population, q)
  accountant = as_accountant(accountant)
  if accountant.name == 'pld':
    check_pld_relation(population)
  return (q, arguments.check_count(rounds, 'rounds'),
          arguments.check_delta(delta), _check_tolerance(tol), accountant,
          population)


def noise_multiplier_for_epsilon(target_epsilon: float,
                                 sampling_rate: float,
                                 rounds: int,
                                 delta: float,
                                 *,
                                 tol: float = DEFAULT_NOISE_TOLERANCE,
                                 accountant: Union[str, Accountant] = 'rdp',
                                 population: Optional[int] = None) -> float:
  """Smallest noise multiplier z whose T rounds stay within (eps, delta).

  Inverts `compute_epsilon` in z with `dp_accounting.calibrate_dp_mechanism`
  (Brent's method): epsilon decreases monotonically in z, from inf at z = 0 to
  0 as z -> inf, so every eps > 0 has a solution z*. The returned z satisfies
  |z - z*| <= tol and compute_epsilon(q, z, T, delta) <= target_epsilon (the
  calibrator nudges the root by tol if needed), so it never promises more
  privacy than it gives.

  Args:
    target_epsilon: eps > 0.
    sampling_rate: q in [0, 1].
    rounds: T >= 0.
    delta: delta in (0, 1).
    tol: Absolute tolerance on z (> 0).
    accountant: How epsilon is accounted: an `Accountant` (its name, RDP
      orders and conversion, as `compute_epsilon`'s `accountant`, `orders`
      and `conversion`), or the name alone ('rdp' or 'pld', on the default
      orders and the improved conversion).
    population: As in `compute_epsilon` (a fixed cohort of q N).

  Returns:
    z >= 0. 0 when rounds = 0 or q = 0 (no release: no noise is needed).
  """
  eps = arguments.check_positive(target_epsilon, 'target_epsilon')
  q, t, d, tol, accountant, population = _calibration_arguments(
      sampling_rate, rounds, delta, tol, accountant, population)
  orders, conversion = accountant.orders, accountant.conversion
  if t == 0 or q == 0.0:
    return 0.0
  if conversion == 'classic':
    _check_classic_floor(eps, q, t, d, orders)

  def eps_at(z):
    return compute_epsilon(q, z, t, d, accountant=accountant,
                           population=population)

  bracket = _bracket_root(eps_at, eps, q, t, d)
  if bracket is None:
    return 0.0  # Any noise meets the target.
  if conversion == 'classic':
    return _solve_classic(eps_at, eps, *bracket, tol)
  if accountant.name == 'pld':
    return pld.noise_multiplier_for_epsilon(
        lambda z: round_event(q, z), t, eps, d, bracket=bracket, tol=tol)
  return _calibrate_rdp(eps, q, t, d, orders=orders, population=population,
                        bracket=bracket, tol=tol)


# dp_accounting's epsilon is over the target after this many steps of tol up
# from the searched z: the search is off, the library's calibration decides.
_MAX_STEPS_UP = 3


class _EpsilonCurve:
  """epsilon(z) of T Poisson-subsampled rounds at (q, delta) by
  `rdp_search`, the search evaluator (not a guarantee), each point
  remembered: one curve serves every target epsilon, and the points one
  root search evaluated bracket the next one's root."""

  def __init__(self, q: float, t: int, d: float,
               orders: Optional[Tuple[float, ...]]):
    self._args = (q, t, d, orders if orders is not None else tuple(
        rdp.rdp_privacy_accountant.DEFAULT_RDP_ORDERS))
    self.points = {}

  def __call__(self, z: float) -> float:
    z = float(z)
    if z not in self.points:
      q, t, d, orders = self._args
      self.points[z] = rdp_search.epsilon(q, z, t, d, orders)
    return self.points[z]

  def bracket(self, eps: float) -> Optional[Tuple[float, float]]:
    """(lo, hi) with eps(lo) > eps >= eps(hi), from the nearest points
    known, doubling or halving from them (from 1 first); None if none was
    found in 200 steps."""
    above = [z for z, e in self.points.items() if e > eps]
    below = [z for z, e in self.points.items() if e <= eps]
    lo = max(above) if above else None
    hi = min(below) if below else None
    if lo is None and hi is None:
      if self(1.0) > eps:
        lo = 1.0
      else:
        hi = 1.0
    for _ in range(200):
      if lo is not None and hi is not None:
        return lo, hi
      z = 2.0 * lo if hi is None else hi / 2.0
      if self(z) > eps:
        lo = z
      else:
        hi = z
    return None


def _searched_noise_multiplier(curve: _EpsilonCurve, eps: float, q: float,
                               t: int, d: float, tol: float,
                               orders: Optional[Tuple[float, ...]]
                               ) -> Optional[float]:
  """z of `noise_multiplier_for_epsilon`'s promise by the search evaluator,
  checked by dp_accounting; None if the library's calibration must decide.

  The root of the search's epsilon(z) (Brent's method), moved up to the
  side whose search epsilon is within eps, is within tol / 4 above the
  search's root. dp_accounting then composes that z (once, `_rdp_epsilon`):
  if its epsilon is over eps, z steps up by tol until it is not, as
  `calibrate_dp_mechanism` and `_solve_classic` do. So dp_accounting's
  epsilon of the returned z is within eps, and z lies within tol of
  dp_accounting's root: the two epsilons at z must agree well enough to put
  the two roots within tol / 4 of each other.
  """
  step = tol / 4.0
  try:
    bracket = curve.bracket(eps)
    if bracket is None:
      return None
    z = optimize.brentq(lambda z: curve(z) - eps, *bracket, xtol=step)
    for _ in range(8):
      if curve(z) <= eps:
        break
      z += step
    else:
      return None
    slope = (curve(z) - curve(z + tol)) / tol
  except (ValueError, RuntimeError):  # E.g. a series the search cannot sum.
    return None
  library = _rdp_epsilon(q, z, t, d, orders, None)
  # The library's root is within tol / 4 of the search's if their epsilons
  # differ by less than the search's epsilon falls over tol / 4. They sum the
  # same series and differ by rounding (~1e-12 a round on the grid of
  # tests/privacy/test_rdp_search.py); else the library's calibration
  # decides.
  if not abs(library - curve(z)) <= slope * step:
    return None
  for _ in range(_MAX_STEPS_UP):
    if library <= eps:
      return float(z)
    z += tol
    library = _rdp_epsilon(q, z, t, d, orders, None)
  return float(z) if library <= eps else None


def noise_multipliers_for_epsilons(target_epsilons: Sequence[float],
                                   sampling_rate: float,
                                   rounds: int,
                                   delta: float,
                                   *,
                                   tol: float = DEFAULT_NOISE_TOLERANCE,
                                   accountant: Union[str, Accountant] = 'rdp',
                                   population: Optional[int] = None
                                   ) -> list[float]:
  """`noise_multiplier_for_epsilon` of each target epsilon, at one
  (q, T, delta): per target, a z with |z - z*| <= tol and
  compute_epsilon(q, z, T, delta) <= target, computed by dp_accounting.

  Poisson sampling by RDP with the improved conversion (the default) is
  searched with `rdp_search`, numpy's sum of the series dp_accounting sums
  in Python (up to about a second per z at q = 0.5), on one curve for all
  targets, largest first; dp_accounting then composes each returned z once,
  and decides it (`_searched_noise_multiplier`). Every other accountant,
  conversion or a fixed cohort calibrates each target by
  `noise_multiplier_for_epsilon`, as does a target the search cannot
  settle. Arguments as in `noise_multiplier_for_epsilon`; equal targets are
  calibrated once.

  Returns:
    z >= 0 per target, in their order.
  """
  epsilons = [arguments.check_positive(e, 'target_epsilon')
              for e in target_epsilons]
  q, t, d, tol, accountant, population = _calibration_arguments(
      sampling_rate, rounds, delta, tol, accountant, population)
  orders = accountant.orders

  def one(eps):
    return noise_multiplier_for_epsilon(eps, q, t, d, tol=tol,
                                        accountant=accountant,
                                        population=population)

  searched = (accountant.name == 'rdp' and
              accountant.conversion == 'improved' and
              population is None and 0.0 < q < 1.0 and t > 0)
  curve = _EpsilonCurve(q, t, d, orders) if searched else None
  solved = {}
  for eps in sorted(set(epsilons), reverse=True):
    z = (_searched_noise_multiplier(curve, eps, q, t, d, tol, orders)
         if searched else None)
    solved[eps] = one(eps) if z is None else z
  return [solved[e] for e in epsilons]


def sampling_rate_for_epsilon(target_epsilon: float,
                              noise_multiplier: float,
                              rounds: int,
                              delta: float,
                              *,
                              tol: float = 1e-9,
                              orders: Optional[Sequence[float]] = None,
                              accountant: str = 'rdp') -> float:
  """Largest Poisson rate q whose T rounds at multiplier z stay within
  (eps, delta): 1 if even q = 1 does.

  The inverse of `compute_epsilon` in q, by
  `dp_accounting.calibrate_dp_mechanism` (Brent's method; epsilon increases
  with q), as Boenisch et al.'s individualized "Sample" method and its
  federated form (Lange et al., 2025; luckyos-code/flidp's
  `get_sample_rate`) calibrate each privacy group's rate. The returned q
  satisfies compute_epsilon(q, z, T, delta) <= target_epsilon.

  Args:
    target_epsilon: eps > 0.
    noise_multiplier: z > 0.
    rounds: T >= 1.
    delta: delta in (0, 1).
    tol: Absolute tolerance on q (> 0).
    orders: RDP orders, as in `compute_epsilon`.
    accountant: As in `compute_epsilon`.
  """
  eps = arguments.check_positive(target_epsilon, 'target_epsilon')
  z = arguments.check_positive(noise_multiplier, 'noise_multiplier')
  t = arguments.check_count(rounds, 'rounds')
  d = arguments.check_delta(delta)
  tol = _check_tolerance(tol)
  orders = arguments.check_orders(orders)
  accountant = check_accountant(accountant)
  epsilon = functools.partial(compute_epsilon, noise_multiplier=z, rounds=t,
                              delta=d, orders=orders, accountant=accountant)
  if t == 0 or epsilon(1.0) <= eps:
    return 1.0

  def make_accountant():
    if accountant == 'pld':
      return dp_accounting.pld.PLDAccountant()
    return fresh_accountant(orders)

  q = dp_accounting.calibrate_dp_mechanism(
      make_accountant,
      lambda rate: dp_accounting.SelfComposedDpEvent(round_event(rate, z), t),
      eps, d, bracket_interval=dp_accounting.ExplicitBracketInterval(0.0, 1.0),
      tol=tol)
  # The calibrator returns a rate within its target; its own accountant is
  # not ours for PLD (a coarser grid), so make sure with ours.
  while q > 0 and epsilon(q) > eps:
    q = max(0.0, q - tol)
  return float(q)


__all__ = [
    'ACCOUNTANTS',
    'Accountant',
    'ADD_OR_REMOVE_ONE',
    'CONVERSIONS',
    'REPLACE_ONE',
    'DEFAULT_NOISE_TOLERANCE',
    'as_accountant',
    'check_accountant',
    'check_pld_relation',
    'compute_epsilon',
    'fresh_accountant',
    'noise_multiplier_for_epsilon',
    'noise_multipliers_for_epsilons',
    'relation_of',
    'round_event',
    'sampling_rate_for_epsilon',
]
