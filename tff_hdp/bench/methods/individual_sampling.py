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
"""Individualized DP by per-client sampling rates, as an HDP-Bench method.

Boenisch, Muehl, Dziedzic, Rinberg and Papernot ("Have it your way:
Individualized privacy assignment for DP-SGD", NeurIPS 2023), method
*Sample*; its federated form is Lange et al. (2025, "Federated learning with
individualized privacy through client sampling", code luckyos-code/flidp).
Threat model: a trusted server, which adds the noise. One noise multiplier z
for everyone; client i takes part in a round with its own probability q_i,
the largest rate at which T rounds of the Poisson-subsampled Gaussian
(q_i, z) spend exactly its epsilon_i
(`accounting.sampling_rate_for_epsilon`), and z is chosen so that the
clients' mean rate is the benchmark's q (flidp's `get_weights`: the expected
cohort keeps its size). A client who asks for little privacy is sampled
more often; nobody's noise changes. Accounted per client: the guarantee is
client-level, every global model (epsilon_i, delta)-DP with respect to
client i's whole data.

The round is DP-FedAvg's (paper 001's maths, `tff_hdp.fedhdp`: one group,
clipped sum, Gaussian noise of multiplier z, divided by the expected count
sum_i q_i), with this file's cohort: client i sampled with probability q_i
from the run's secret key. The clip norm is fixed; the clip count is noised
with z_b = 2 z (`fedhdp_levels` does the same).

A client who opts out (epsilon_i infinite) is sampled at the mean rate and
has no guarantee.
"""

import math
from typing import Optional, Sequence

import numpy as np
from scipy import optimize

from tff_hdp.bench import method
from tff_hdp.bench import registry
from tff_hdp.bench.methods import global_model_runs
from tff_hdp.privacy import accounting
from tff_hdp.robust_hdp import privacy_preferences

# The calibration's RDP orders: fewer fractional orders than dp_accounting's
# grid, so each epsilon is never smaller (the rates never too large) and it
# runs faster (`privacy_preferences.ORDERS`; docs/performance.md).
ORDERS = privacy_preferences.ORDERS
_GRID = np.geomspace(1e-4, 1.0, 13)  # Rates at which epsilon(q) is sampled.


def _rates_at(z: float, epsilons: Sequence[float], rounds: int,
              delta: float, accountant: str, exact: bool) -> np.ndarray:
  """q_i(z) for every epsilon: exact (Brent, per epsilon) or from a log-log
  interpolation of epsilon(q) on `_GRID` (cheap, for the search of z)."""
  if exact:
    return np.array([accounting.sampling_rate_for_epsilon(
        e, z, rounds, delta, tol=1e-7, orders=ORDERS, accountant=accountant)
                     for e in epsilons])
  grid_eps = np.array([accounting.compute_epsilon(
      q, z, rounds, delta, orders=ORDERS, accountant=accountant)
                       for q in _GRID])
  with np.errstate(divide='ignore'):  # epsilon(q) may be 0 at the smallest q.
    return np.exp(np.interp(np.log(epsilons), np.log(grid_eps),
                            np.log(_GRID), right=0.0))


def individual_rates(epsilons: Sequence[float], mean_rate: float, rounds: int,
                     delta: float, accountant: str = 'rdp'
                     ) -> tuple[float, np.ndarray]:
  """(z, q_i per client): q_i spends epsilon_i exactly over `rounds` rounds
  at z (or is 1 when even q = 1 does not reach it), z such that the mean of
  the q_i is `mean_rate`; an opt-out (inf) is sampled at `mean_rate`.

  Raises:
    ValueError: No client asks for privacy.
  """
  epsilons = np.asarray(epsilons, np.float64)
  private = np.isfinite(epsilons)
  if not private.any():
    raise ValueError('individual sampling needs a client with a finite '
                     'epsilon')
  distinct, index = np.unique(epsilons[private], return_inverse=True)

  def mean_rate_at(z, exact=False):
    q = np.full(len(epsilons), mean_rate)
    q[private] = np.minimum(
        _rates_at(z, distinct, rounds, delta, accountant, exact)[index], 1.0)
    return q

  # The mean rate grows with z: bracket mean_rate in log z, then Brent's
  # method (a handful of epsilon(q) grids where a bisection takes a dozen).
  def excess(log_z):
    return mean_rate_at(math.exp(log_z)).mean() - mean_rate

  lo, hi = 0.5, 2.0
  while excess(math.log(lo)) > 0:
    lo /= 4
  while excess(math.log(hi)) < 0 and hi < 1e4:
    hi *= 4
  z = math.exp(optimize.brentq(excess, math.log(lo), math.log(hi),
                               xtol=1e-3))
  return z, mean_rate_at(z, exact=True)


class IndividualSampling(method.Method):
  """Individualized client sampling rates (module doc)."""

  name = 'idp_sample'
  threat_model = 'trusted server'
  guarantee = method.CLIENT_LEVEL
  server_knows = "each client's sampling rate q_i (from epsilon_i)"

  def __init__(self, *, mean_rate: Optional[float] = None,
               clip: float = 1.0):
    """`mean_rate`: q, the clients' mean rate (None: the setting's
    `sampling_rate`); `clip`: S."""
    self.mean_rate = mean_rate
    self.clip = clip

  def calibrate(self, setting, preferences):
    from tff_hdp.fedhdp import config as config_lib  # pylint: disable=g-import-not-at-top
    z, rates = individual_rates(preferences.epsilons,
                                self.mean_rate or setting.sampling_rate,
                                setting.rounds, setting.delta,
                                setting.accountant)
    config = config_lib.FedHdpConfig(
        algorithm='dp_fedavg', ditto=False, model=setting.model,
        rounds=setting.rounds,
        clients_per_round=max(1, round(rates.sum())),
        # DP-FedAvg's one group holds everyone: its expected count, q N, is
        # sum_i q_i, the round's fixed denominator.
        sampling_rate=float(rates.mean()), poisson_sampling=True,
        denominators='expected', local_epochs=setting.local_epochs,
        batch_size=setting.batch_size, learning_rate=setting.learning_rate,
        initial_clip=self.clip, clip_learning_rate=0.0, noise_multiplier=z,
        privacy_levels=(0,) * setting.num_clients,
        clipped_count_stddev=2 * z, delta=setting.delta,
        accountant=setting.accountant, eval_every=setting.rounds,
        backend='direct')
    config.validate(setting.num_clients)
    return method.Calibration(
        clients=tuple(
            method.ClientMechanism(float(q), z, setting.rounds)
            if math.isfinite(e) else None
            for q, e in zip(rates, preferences.epsilons)),
        config=(config, tuple(float(q) for q in rates)))

  def run(self, setting, calibration, *, seed,
          mechanism_seed: Optional[int] = None):
    return global_model_runs.run_accounted_per_client(
        calibration, setting, individual_rounds, seed=seed,
        mechanism_seed=mechanism_seed)


def individual_rounds(experiment, rates: Sequence[float],
                      accounted: Sequence[int]):
  """DP-FedAvg's rounds of `experiment` (`tff_hdp.fedhdp.training`) with
  client i sampled at its own rate q_i, and one ledger entry per client in
  `accounted` (its (q_i, z) every round).

  The class is made when a run needs it: importing this file (the
  benchmark's flag checks import every method) stays TensorFlow-free.
  """
  from tff_hdp.fedhdp import training  # pylint: disable=g-import-not-at-top

  class IndividualRounds(training.FedHdpRounds):
    """`individual_rounds`'s rounds."""

    def __init__(self):
      super().__init__(experiment)
      self._rates = np.asarray(rates, np.float64)
      self._z = experiment.setup.groups[0].effective_noise_multiplier

    def _cohort(self, rng) -> np.ndarray:
      return np.flatnonzero(rng.random(len(self._rates)) < self._rates)

    def account(self, ledger, round_num):
      del round_num  # Every round spends the same.
      for i in accounted:
        ledger.step(method.client_entry(i), self._rates[i], self._z)

  return IndividualRounds()


registry.register(IndividualSampling())
