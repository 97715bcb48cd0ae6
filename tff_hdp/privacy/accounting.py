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
"""Privacy accounting for the private groups of FedHDP (paper 001, Sec. 5).

This module is TensorFlow-free: it imports only `dp_accounting`, scipy and
the standard library, so that reports and resumed runs do not pay for
TensorFlow.

The mechanism
-------------
In every round each private group i releases its noised update average,

  Delta_i = (1/N_i) (sum_j Clip(Delta_j, S) + N(0, z_i^2 S^2 I)),

together with the noised clipped count used by adaptive clipping (Andrew,
Thakkar, McMahan, Ramaswamy 2019, "Differentially Private Learning with
Adaptive Clipping", arXiv:1905.03871):

  b = sum_j (1[||Delta_j|| <= S] - 1/2) + N(0, z_b^2).

One client changes the update sum by at most S and the count sum by at most
1/2, so the round is the composition of two Gaussian mechanisms with noise
multipliers z (value) and 2 z_b (count). Their Renyi DP adds up, and since the
RDP of a Gaussian mechanism with noise multiplier s is alpha / (2 s^2), the
pair is exactly as private as one Gaussian mechanism with the *effective* noise
multiplier

  z_eff = (z^-2 + (2 z_b)^-2)^(-1/2).                                     (1)

This is how `tff.aggregators.DifferentiallyPrivateFactory.gaussian_adaptive`
splits a requested z_eff into (z, z_b) (`split_noise_multiplier`), with
z_b = 0.05 * clients_per_round by default; paper 001's Table 7 lists z_eff.

Accounting
----------
A group is queried in a round with Poisson sampling probability q, so one round
is the Poisson-subsampled Gaussian mechanism. Its RDP at order alpha is bounded
by (Mironov, Talwar, Zhang 2019, "Renyi Differential Privacy of the Sampled
Gaussian Mechanism", arXiv:1908.10530, Sec. 3)

  eps_RDP(alpha) = log(A_alpha) / (alpha - 1),
  A_alpha = E_{x ~ N(0, z^2)}[((1 - q) + q exp((2x - 1) / (2 z^2)))^alpha],

and T rounds compose additively: T * eps_RDP(alpha) (Mironov 2017, "Renyi
Differential Privacy", arXiv:1702.07476, Prop. 1). `dp_accounting`'s
`RdpAccountant` evaluates this on its default grid of orders and converts to
(eps, delta)-DP with the improved conversion of Balle, Barthe, Gaboardi, Hsu,
Sato 2020 ("Hypothesis Testing Interpretations and Renyi DP",
arXiv:1905.09982, Prop. 12; also Canonne, Kamath, Steinke 2020, eq. 20):

  eps = min_alpha  T eps_RDP(alpha) + log(1 - 1/alpha)
                   - (log(delta) + log(alpha)) / (alpha - 1).

`accountant='pld'` composes the same events with `dp_accounting`'s
privacy-loss-distribution accountant instead (`PLDAccountant`, pessimistic
discretisation of the privacy loss, refined with the composition's length in
`tff_hdp.privacy.pld`; Koskela, Jalko, Honkela 2020; Doroshenko, Ghazi,
Kamath, Kumar, Manurangsi 2022, "Connect the Dots"). It gives the tightest
(epsilon, delta) of the composed mechanism, up to its discretisation (which
errs on the side of a larger epsilon), and so at most the RDP bound; the
papers use RDP, which stays the default.

`conversion='classic'` converts with the original bound of Mironov 2017
(Prop. 3), eps = min_alpha T eps_RDP(alpha) - log(delta) / (alpha - 1), which
is looser (larger eps for the same noise, so more noise for the same eps).
Older Opacus releases used it, and paper 003's Table 2 follows from it (see
`tff_hdp.robust_hdp.noise_power`); we offer it to reproduce such numbers,
never as the default.

How the participants are drawn fixes the event and the neighbouring relation:

- *Poisson sampling* (each client, or example, independently with probability
  q): `PoissonSampledDpEvent(q, GaussianDpEvent(z))` under add-or-remove-one
  neighbours. FedHDP's and UDP-Alg's runs (one client), Robust-HDP's DP-SGD
  (one example).
- *A fixed cohort* of n out of N drawn without replacement (`population=N`,
  n = q N): under add-or-remove neighbours such a cohort is not a subsampling
  of the neighbouring dataset, so it is accounted under replace-one
  neighbours (N public), with `SampledWithoutReplacementDpEvent(N, n, .)` and
  dp_accounting's RDP of it (Wang, Balle, Kasiviswanathan 2019, "Subsampled
  Renyi Differential Privacy and Analytical Moments Accountant", Thm. 27 of
  arXiv:1808.00087). Replacing one client moves a clipped sum by up to 2S,
  not S, and the centred clip count by 1, not 1/2: every sensitivity doubles,
  so the Gaussian's multiplier under replace-one is z / 2 for the same noise
  (z_eff / 2 for the pair of eq. (1)). PLD has no such event in
  dp_accounting 0.4.3: a fixed cohort is accounted by RDP only.

An epsilon under replace-one is not comparable to one under add/remove (for
the same noise it is roughly twice as large, more at small q): every report
names the relation (`PrivacyLedger.relation`).

Pitfall: DP events read from TFF aggregator state carry np.float32 noise
multipliers, and `dp_accounting` 0.4.3's RDP accountant silently keeps only the
first Gaussian of a `ComposedDpEvent` whose values are not Python floats
(underestimating epsilon). This module takes plain numbers and converts them
with `float()`; give it z_eff rather than TFF's events.
"""

import json
import math
import os
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import dp_accounting
from dp_accounting import rdp
from scipy import optimize

from tff_hdp.privacy import arguments
from tff_hdp.privacy import pld

# Relative share of the expected cohort used as the clipped-count noise stddev
# z_b when none is given (TFF's `adaptive_clip_noise_params`).
DEFAULT_CLIPPED_COUNT_STDDEV_FRACTION = 0.05

# Default absolute tolerance on z of `noise_multiplier_for_epsilon`.
DEFAULT_NOISE_TOLERANCE = 1e-6

CONVERSIONS = ('improved', 'classic')
ACCOUNTANTS = ('rdp', 'pld')
# Opacus's default RDP orders (opacus.accountants.rdp.RDPAccountant), the
# grid of the classic conversion when paper 003's numbers are reproduced.
OPACUS_ORDERS = (tuple(1 + x / 10.0 for x in range(1, 100)) +
                 tuple(range(12, 64)))

_LEDGER_FORMAT = 'tff_hdp.PrivacyLedger'
_LEDGER_VERSION = 2


# ----------------------------------------------------------------------------
# Argument checks: one-line ValueErrors naming the argument and allowed range.
# ----------------------------------------------------------------------------


def _check_orders(orders: Optional[Sequence[float]]) -> Optional[Tuple[float,
                                                                        ...]]:
  if orders is None:
    return None
  orders = tuple(arguments.as_real(a, 'orders') for a in orders)
  if not orders or any(not 1.0 < a < math.inf for a in orders):
    raise ValueError(
        f'orders must be a non-empty list of finite numbers > 1, got {orders}')
  return orders


# ----------------------------------------------------------------------------
# Effective noise multiplier (adaptive clipping).
# ----------------------------------------------------------------------------


def default_clipped_count_stddev(clients_per_round: float) -> float:
  """TFF's default clipped-count noise stddev z_b = 0.05 * clients_per_round.

  This is the default of
  `tff.aggregators.DifferentiallyPrivateFactory.gaussian_adaptive` (Andrew et
  al. 2019 recommend z_b ~ n / 20 for an expected cohort of n clients).

  Args:
    clients_per_round: Expected number of clients per round (> 0).

  Returns:
    The stddev of the Gaussian noise added to the clipped count.
  """
  n = arguments.as_real(clients_per_round, 'clients_per_round')
  if not 0.0 < n < math.inf:
    raise ValueError(
        f'clients_per_round must be > 0 and finite, got {clients_per_round!r}')
  return DEFAULT_CLIPPED_COUNT_STDDEV_FRACTION * n


def effective_noise_multiplier(value_noise_multiplier: float,
                               clipped_count_stddev: float) -> float:
  """z_eff = (z^-2 + (2 z_b)^-2)^(-1/2), eq. (1) of the module docstring.

  The value query (sensitivity S, noise z S) and the clipped-count query
  (sensitivity 1/2, noise z_b) compose to a Gaussian mechanism with this noise
  multiplier (Andrew et al. 2019, Sec. 3.1). Either noise being 0 makes the
  round non-private: z_eff = 0.

  Args:
    value_noise_multiplier: z, noise multiplier of the clipped-update sum.
    clipped_count_stddev: z_b, noise stddev of the clipped count.

  Returns:
    The effective noise multiplier z_eff the accountant uses.
  """
  z = arguments.check_noise(value_noise_multiplier, 'value_noise_multiplier')
  zb = arguments.check_noise(clipped_count_stddev, 'clipped_count_stddev')
  if z == 0.0 or zb == 0.0:
    return 0.0
  return (z**-2 + (2.0 * zb)**-2)**-0.5


def split_noise_multiplier(
    effective_noise_multiplier: float,  # pylint: disable=redefined-outer-name
    clipped_count_stddev: Optional[float] = None,
    *,
    clients_per_round: Optional[float] = None,
) -> Tuple[float, float]:
  """Splits z_eff into (value noise z, clipped-count stddev z_b), as TFF does.

  Inverts eq. (1): z = (z_eff^-2 - (2 z_b)^-2)^(-1/2), exactly as
  `tff.aggregators.DifferentiallyPrivateFactory.gaussian_adaptive` (through
  `adaptive_clip_noise_params`) derives the noise multiplier it hands to TF
  Privacy's `QuantileAdaptiveClipSumQuery`. z is always a little larger than
  z_eff; a solution exists only when z_eff < 2 z_b.

  Args:
    effective_noise_multiplier: z_eff >= 0, the value the accountant uses.
    clipped_count_stddev: z_b >= 0. If None, TFF's default
      `default_clipped_count_stddev(clients_per_round)` (or 0 when z_eff = 0).
    clients_per_round: Expected cohort size; needed only when
      `clipped_count_stddev` is None and z_eff > 0.

  Returns:
    `(value_noise_multiplier, clipped_count_stddev)`. With z_eff = 0 (no
    privacy) the value noise is 0.

  Raises:
    ValueError: If z_eff >= 2 z_b (the count alone would spend more than the
      whole budget), or an argument is out of range.
  """
  z_eff = arguments.check_noise(effective_noise_multiplier,
                       'effective_noise_multiplier')
  if clipped_count_stddev is not None:
    clipped_count_stddev = arguments.check_noise(clipped_count_stddev,
                                        'clipped_count_stddev')
  if z_eff == 0.0:
    return 0.0, (0.0 if clipped_count_stddev is None else clipped_count_stddev)
  if clipped_count_stddev is None:
    if clients_per_round is None:
      raise ValueError('clients_per_round is required when '
                       'clipped_count_stddev is None and the noise is > 0')
    clipped_count_stddev = default_clipped_count_stddev(clients_per_round)
  if z_eff >= 2.0 * clipped_count_stddev:
    raise ValueError(
        f'effective_noise_multiplier must be < 2 * clipped_count_stddev = '
        f'{2.0 * clipped_count_stddev!r}, got {z_eff!r}; raise '
        'clipped_count_stddev (or clients_per_round) or lower the noise')
  z = (z_eff**-2 - (2.0 * clipped_count_stddev)**-2)**-0.5
  return z, clipped_count_stddev


# ----------------------------------------------------------------------------
# One Poisson-subsampled Gaussian mechanism, composed T times.
# ----------------------------------------------------------------------------


ADD_OR_REMOVE_ONE = 'add_or_remove_one'
REPLACE_ONE = 'replace_one'
_RELATIONS = {
    ADD_OR_REMOVE_ONE: dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
    REPLACE_ONE: dp_accounting.NeighboringRelation.REPLACE_ONE,
}


def _check_population(population, sampling_rate: float) -> Optional[int]:
  """N of a fixed cohort, checked: q N must be a whole cohort size n >= 1."""
  if population is None:
    return None
  n = arguments.check_count(population, 'population')
  size = sampling_rate * n
  if n < 1 or abs(size - round(size)) > 1e-6 * max(1.0, size) or round(
      size) < 1:
    raise ValueError(f'a fixed cohort needs sampling_rate x population to be '
                     f'a cohort size >= 1, got {sampling_rate!r} x '
                     f'{population!r}')
  return n


def relation_of(population: Optional[int]) -> str:
  """The neighbouring relation a round's sampling is accounted under."""
  return ADD_OR_REMOVE_ONE if population is None else REPLACE_ONE


def _round_event(sampling_rate: float, noise_multiplier: float,
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


def _fresh_accountant(orders: Optional[Sequence[float]] = None,
                      relation: str = ADD_OR_REMOVE_ONE) -> rdp.RdpAccountant:
  return rdp.RdpAccountant(orders=None if orders is None else list(orders),
                           neighboring_relation=_RELATIONS[relation])


def _check_pld_relation(population: Optional[int]) -> None:
  if population is not None:
    raise ValueError("accountant 'pld' has no event for a fixed cohort "
                     "(sampling without replacement); use accountant 'rdp' "
                     'or Poisson sampling')


def _check_accountant(accountant: str) -> str:
  if accountant not in ACCOUNTANTS:
    raise ValueError(f'unknown accountant {accountant!r}; allowed: '
                     f'{", ".join(ACCOUNTANTS)}')
  return accountant


def _check_conversion(conversion: str) -> str:
  if conversion not in CONVERSIONS:
    raise ValueError(f'unknown conversion {conversion!r}; allowed: '
                     f'{", ".join(CONVERSIONS)}')
  return conversion


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
    accountant = _fresh_accountant([a], relation_of(population))
    accountant.compose(
        dp_accounting.SelfComposedDpEvent(_round_event(q, z, population), t))
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
                    conversion: str = 'improved',
                    accountant: str = 'rdp',
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
    conversion: 'improved' (the formula above) or 'classic' (module doc).
    accountant: 'rdp' (the above) or 'pld' (module doc; `orders` and
      `conversion` do not apply; Poisson sampling only).
    population: N of a fixed cohort of q N clients drawn without
      replacement; None for Poisson sampling.

  Returns:
    epsilon >= 0: 0 if rounds = 0 or q = 0; inf if z = 0 with q > 0.
  """
  q = arguments.check_sampling_rate(sampling_rate)
  population = _check_population(population, q)
  z = arguments.check_noise(noise_multiplier)
  t = arguments.check_count(rounds, 'rounds')
  d = arguments.check_delta(delta)
  orders = _check_orders(orders)
  conversion = _check_conversion(conversion)
  accountant = _check_accountant(accountant)
  if t == 0 or q == 0.0:
    return 0.0
  if accountant == 'pld':
    _check_pld_relation(population)
  if z == 0.0:
    return math.inf
  if accountant == 'pld':
    return pld.epsilon([(_round_event(q, z), t)], d)
  if conversion == 'classic':
    return _classic_epsilon(q, z, t, d, orders, population)
  accountant = _fresh_accountant(orders, relation_of(population))
  accountant.compose(
      dp_accounting.SelfComposedDpEvent(_round_event(q, z, population), t))
  return float(accountant.get_epsilon(d))


def noise_multiplier_for_epsilon(target_epsilon: float,
                                 sampling_rate: float,
                                 rounds: int,
                                 delta: float,
                                 *,
                                 tol: float = DEFAULT_NOISE_TOLERANCE,
                                 orders: Optional[Sequence[float]] = None,
                                 conversion: str = 'improved',
                                 accountant: str = 'rdp',
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
    orders: RDP orders, as in `compute_epsilon`.
    conversion: As in `compute_epsilon`.
    accountant: As in `compute_epsilon`.
    population: As in `compute_epsilon` (a fixed cohort of q N).

  Returns:
    z >= 0. 0 when rounds = 0 or q = 0 (no release: no noise is needed).
  """
  eps = arguments.check_positive(target_epsilon, 'target_epsilon')
  q = arguments.check_sampling_rate(sampling_rate)
  population = _check_population(population, q)
  t = arguments.check_count(rounds, 'rounds')
  d = arguments.check_delta(delta)
  tol = arguments.as_real(tol, 'tol')
  if not 0.0 < tol < math.inf:
    raise ValueError(f'tol must be > 0 and finite, got {tol!r}')
  orders = _check_orders(orders)
  conversion = _check_conversion(conversion)
  accountant = _check_accountant(accountant)
  if accountant == 'pld':
    _check_pld_relation(population)
  if t == 0 or q == 0.0:
    return 0.0

  def eps_at(z):
    return compute_epsilon(q, z, t, d, orders=orders, conversion=conversion,
                           accountant=accountant, population=population)

  if conversion == 'classic':
    # No noise brings the classic epsilon below -log(delta) / (alpha - 1).
    largest = max(orders if orders is not None else
                  rdp.rdp_privacy_accountant.DEFAULT_RDP_ORDERS)
    if eps <= -math.log(d) / (largest - 1.0):
      raise ValueError(f'target_epsilon {eps!r} is not reachable for q={q!r}, '
                       f'rounds={t}, delta={d!r} with the classic conversion '
                       f'(its floor is {-math.log(d) / (largest - 1.0):.4g})')

  # Bracket the root by doubling / halving from z = 1 (z = 0 gives eps = inf,
  # which Brent's method cannot evaluate).
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
    return 0.0  # Any noise meets the target (cannot happen for q, T > 0).

  if conversion == 'classic':
    # dp_accounting's calibrator reads its accountant's (improved) epsilon:
    # solve the classic one on the same bracket with Brent's method, then
    # step up to the side of the root whose epsilon is within the target.
    z = optimize.brentq(lambda z: eps_at(z) - eps, lo, hi, xtol=tol)
    while eps_at(z) > eps:
      z += tol
    return float(z)
  if accountant == 'pld':
    return pld.noise_multiplier_for_epsilon(
        lambda z: _round_event(q, z), t, eps, d, bracket=(lo, hi), tol=tol)
  return float(
      dp_accounting.calibrate_dp_mechanism(
          make_fresh_accountant=lambda: _fresh_accountant(
              orders, relation_of(population)),
          make_event_from_param=lambda z: dp_accounting.SelfComposedDpEvent(
              _round_event(q, z, population), t),
          target_epsilon=eps,
          target_delta=d,
          bracket_interval=dp_accounting.ExplicitBracketInterval(lo, hi),
          tol=tol))


# ----------------------------------------------------------------------------
# The ledger of a run: one accountant per privacy group.
# ----------------------------------------------------------------------------


class PrivacyLedger:
  """Per-group RDP ledger of a run, saved and restored with the run.

  Each private group has its own history of rounds in which it was queried,
  kept as runs `(q, z, count)` of identical consecutive steps (500 rounds at a
  fixed (q, z) are one entry), or `(q, z, count, N)` for rounds that drew a
  fixed cohort of q N out of N (accounted under replace-one neighbours, see
  the module docstring; one group's rounds must all share one relation).
  epsilon is always recomputed from the history with a fresh `dp_accounting`
  accountant, so a ledger restored by `from_json` / `load` reports
  bit-identical epsilons, and stepping 250 + 250 rounds equals stepping 500
  at once.

  `is_bound` says whether the epsilons are bounds for what ran. A run whose
  release the events do not describe (FedHDP's Poisson cohorts with realised
  denominators, where the counts reveal who took part) keeps its Poisson
  figure, but as an approximation: `is_bound=False`, and every report says so.

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
               is_bound: bool = True):
    """Creates an empty ledger.

    Args:
      orders: RDP orders of every accountant; `dp_accounting`'s default grid
        when None.
      is_bound: False when the run's release is not what the recorded events
        describe, so that its epsilons are approximations (see above).
    """
    self._orders = _check_orders(orders)
    self._is_bound = bool(is_bound)
    self._history: Dict[str, List[List]] = {}
    self._cache: Dict[str, rdp.RdpAccountant] = {}

  @property
  def orders(self) -> Optional[Tuple[float, ...]]:
    return self._orders

  @property
  def is_bound(self) -> bool:
    """Whether every epsilon of this ledger bounds the run that recorded it."""
    return self._is_bound

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
    """`ADD_OR_REMOVE_ONE` or `REPLACE_ONE`; None if never stepped."""
    runs = self._history.get(group)
    return relation_of(runs[0][3]) if runs else None

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
    population = _check_population(population, q)
    runs = self._history.setdefault(group, [])
    if count == 0:
      return
    if runs and relation_of(runs[0][3]) != relation_of(population):
      raise ValueError(
          f'group {group!r} is accounted under {self.relation(group)}; a '
          f'round under {relation_of(population)} cannot compose with it')
    if runs and runs[-1][0] == q and runs[-1][1] == z and (
        runs[-1][3] == population):
      runs[-1][2] += count
    else:
      runs.append([q, z, count, population])
    self._cache.pop(group, None)

  def _accountant(self, group: str) -> rdp.RdpAccountant:
    accountant = self._cache.get(group)
    if accountant is None:
      accountant = _fresh_accountant(self._orders, self.relation(group) or
                                     ADD_OR_REMOVE_ONE)
      for q, z, count, population in self._history.get(group, ()):
        accountant.compose(
            dp_accounting.SelfComposedDpEvent(_round_event(q, z, population),
                                              count))
      self._cache[group] = accountant
    return accountant

  def get_epsilon(self, group: str, delta: float,
                  accountant: str = 'rdp') -> float:
    """epsilon of `group` at `delta` in (0, 1); 0 if it was never stepped.

    `accountant`: 'rdp' (this ledger's orders) or 'pld' (`pld.epsilon` over
    the same history; Poisson rounds only, see `compute_epsilon`).
    """
    d = arguments.check_delta(delta)
    accountant = _check_accountant(accountant)
    if not self._history.get(group):
      return 0.0
    if accountant == 'pld':
      if self.relation(group) != ADD_OR_REMOVE_ONE:
        _check_pld_relation(self._history[group][0][3])
      if any(q > 0 and z == 0 for q, z, _, _ in self._history[group]):
        return math.inf
      return pld.epsilon([(_round_event(q, z), count)
                          for q, z, count, _ in self._history[group]], d)
    return float(self._accountant(group).get_epsilon(d))

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
      return ('Poisson approximation, not a bound (realised denominators '
              'reveal who took part)')
    if relation == REPLACE_ONE:
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
                 is_bound=record.get('is_bound', True))
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


def private_group_names(num_levels: int) -> List[str]:
  """'private' for one privacy level, else 'private_1', ..., 'private_l'."""
  n = arguments.check_count(num_levels, 'num_levels')
  if n == 1:
    return ['private']
  return [f'private_{i}' for i in range(1, n + 1)]


__all__ = [
    'ACCOUNTANTS',
    'ADD_OR_REMOVE_ONE',
    'REPLACE_ONE',
    'DEFAULT_CLIPPED_COUNT_STDDEV_FRACTION',
    'DEFAULT_NOISE_TOLERANCE',
    'PrivacyLedger',
    'compute_epsilon',
    'default_clipped_count_stddev',
    'effective_noise_multiplier',
    'noise_multiplier_for_epsilon',
    'private_group_names',
    'split_noise_multiplier',
]
