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
"""The configuration of one run and what it resolves to (TensorFlow-free).

`FedHdpConfig` records every hyperparameter of a run; `resolve` turns it and
a dataset into the privacy groups, the clients' group assignment (the opt-out
set drawn once with the run's seed) and the noise parameters, checking every
value first so that a bad run is refused before anything is trained or
written.
"""

import dataclasses
from typing import Optional, Sequence, Union

import numpy as np

from tff_hdp import run_config
from tff_hdp.privacy import mechanism_key
from tff_hdp.data import federated_data
from tff_hdp.fedhdp import algorithm as algorithm_lib
from tff_hdp.fedhdp import algorithm_registry
from tff_hdp.fedhdp import clip_noise
from tff_hdp.fedhdp import presets
from tff_hdp.fedhdp import privacy_groups
import tff_hdp.fedhdp.algorithms  # pylint: disable=unused-import  # Registered.


DENOMINATORS = ('expected', 'realised')
# Where a client's Ditto model starts: theta^t of its first round
# (Algorithm 2: "theta_j <- theta^0 (if not initialized)", theta^0 being
# the model the client received), or the initial model theta^0 for every
# client (Ditto's reference code, litian96/ditto, copies the initial model
# into every client's slot before training).
DITTO_INITS = ('first_round', 'initial')
# How rounds run: 'tff' (TFF's runtime) or 'direct' (the same round in plain
# TensorFlow, without TFF's runtime, faster; `direct_backend`), as in
# Robust-HDP and UDP-Alg (`run_config.BACKENDS`).
BACKENDS = run_config.BACKENDS
# The defaults: paper 001's non-IID MNIST preset (Tables 5 and 7), every
# field of it, its learning-rate decay included.
_DEFAULT = presets.PRESETS['mnist']


@dataclasses.dataclass(frozen=True, kw_only=True)
class FedHdpConfig(run_config.RunConfig):
  """A FedHDP run's configuration: every hyperparameter of one run.

  Recorded with the run's results (`dataclasses.asdict`). The defaults are
  paper 001's non-IID MNIST setting (Tables 5 and 7, Section 5: the defaults
  of `presets.Preset`, with clients_per_round = qN = 100); `ratio`,
  `lambda_p` and `lambda_np` have no single paper value (each of its tables
  sets its own). `run_scripts/run_fedhdp.py` fills every field from its
  preset and flags.

  `validate(num_clients=None)` checks the shared fields
  (`run_config.RunConfig.validate_run`), every other field's range and that
  the fields agree with each other (levels, ratios, accountant and
  sampling), and, given the population N, that clients_per_round <= N; it
  raises a one-line ValueError naming the first bad field.

  The fields every system shares (`rounds`, `eval_every`, `seed`,
  `mechanism_seed`, `delta`, `accountant`, `backend`, `tff_workers`) are
  `run_config.RunConfig`'s; here `seed` is public (opt-outs, levels,
  theta^0, dropout), and backend 'direct' runs the whole cohort as stacked
  tensors in one tf.function, with the same results as 'tff'. The other
  attributes mirror `presets.Preset` plus the algorithm's own: `algorithm`,
  `ditto`, `ratio` (r), `lambda_p`, `lambda_np`, `clients_per_round`,
  `ditto_init` (where a client's Ditto model starts, one of `DITTO_INITS`:
  'first_round', theta^t of the first round it takes part in, Algorithm 2
  as printed; 'initial', the initial model theta^0 for every client, as
  Ditto's reference code does),
  `clipped_count_stddev` (z_b; None for TFF's default 0.05 x cohort),
  `poisson_sampling` and `denominators`.

  Sampling and denominators decide what the epsilon is:
  Poisson cohorts with fixed (expected) denominators, the default, are
  accounted exactly under add/remove-one-client neighbours; a fixed cohort of
  `clients_per_round` (paper 001's Algorithm 2, `poisson_sampling=False`,
  with either denominators) is bounded under replace-one neighbours; Poisson
  cohorts with realised denominators have no bound, and their epsilon is
  reported as the Poisson approximation.

  Several private levels: `noise_multiplier` is a tuple with one z_eff per
  level (level 0, the default, first), `ratio` one r per level (or one for
  all), and `level_fractions` the population fraction at levels 1, 2, ...
  (level 0 keeps the remaining private clients).

  Who chose what: by default the opt-outs (`optout_fraction`) and the levels
  (`level_fractions`) are drawn once with the public `seed`, as paper 001's
  experiments do. `privacy_levels` gives each client's choice instead: its
  level (an index into `noise_multiplier`) or None to opt out, one entry per
  client in data order (then `optout_fraction`, `skewed_optout` and
  `level_fractions` are not used).
  """

  # The shared fields whose defaults are this system's (paper 001's).
  rounds: int = _DEFAULT.rounds
  eval_every: int = _DEFAULT.eval_every
  delta: float = _DEFAULT.delta
  backend: str = 'tff'
  # The algorithm's own.
  algorithm: str = 'fedhdp'
  ditto: bool = True
  ditto_init: str = 'first_round'
  ratio: Union[float, tuple[float, ...]] = 0.1
  lambda_p: float = 0.05
  lambda_np: float = 0.05
  model: str = _DEFAULT.model
  clients_per_round: int = _DEFAULT.clients_per_round
  sampling_rate: float = _DEFAULT.sampling_rate
  poisson_sampling: bool = True
  denominators: str = 'expected'
  local_epochs: int = _DEFAULT.local_epochs
  batch_size: int = _DEFAULT.batch_size
  learning_rate: float = _DEFAULT.learning_rate
  personal_learning_rate: float = _DEFAULT.personal_learning_rate
  lr_decay_factor: float = _DEFAULT.lr_decay_factor
  lr_decay_rounds: int = _DEFAULT.lr_decay_rounds
  initial_clip: float = _DEFAULT.initial_clip
  clip_learning_rate: float = _DEFAULT.clip_learning_rate
  target_quantile: float = _DEFAULT.target_quantile
  noise_multiplier: Union[float, tuple[float, ...]] = _DEFAULT.noise_multiplier
  level_fractions: tuple[float, ...] = ()
  privacy_levels: Optional[tuple[Optional[int], ...]] = None
  clipped_count_stddev: Optional[float] = None
  optout_fraction: float = _DEFAULT.optout_fraction
  skewed_optout: bool = _DEFAULT.skewed_optout

  @property
  def noise_multipliers(self) -> tuple[float, ...]:
    return tuple(np.atleast_1d(self.noise_multiplier).tolist())

  @property
  def ratios(self) -> tuple[float, ...]:
    return tuple(np.atleast_1d(self.ratio).tolist())

  @property
  def epsilon_is_bound(self) -> bool:
    """False for Poisson cohorts with realised denominators (no bound)."""
    return not (self.poisson_sampling and self.denominators == 'realised')

  def ledger_terms(self) -> dict:
    """The run's ledger's `is_bound` and `not_bound_because`: realised
    denominators under Poisson sampling, or a reproducible mechanism key,
    make epsilon something other than a bound on what the run published."""
    return mechanism_key.ledger_terms(
        self.mechanism_seed, None if self.epsilon_is_bound else
        'the Poisson approximation (realised denominators reveal who took '
        'part)')

  def round_sampling(self, num_clients: int) -> dict:
    """How the ledger accounts a round: `PrivacyLedger.step`'s keywords.

    Poisson: rate q, add/remove neighbours. A fixed cohort of n out of N:
    rate n / N with population N, replace-one neighbours.
    """
    if self.poisson_sampling:
      return dict(sampling_rate=self.sampling_rate)
    return dict(sampling_rate=self.clients_per_round / num_clients,
                population=num_clients)

  def validate(self, num_clients: Optional[int] = None,
               algorithm: Optional[algorithm_lib.Algorithm] = None) -> None:
    """Raises ValueError naming the first bad field and what is allowed.

    Args:
      num_clients: The population N; if given, clients_per_round must also
        be <= N (else only >= 1).
      algorithm: The run's algorithm object, if it is given rather than
        named by `algorithm` (registered or not).
    """
    if algorithm is None and self.algorithm not in algorithm_registry.names():
      raise ValueError(f'algorithm must be one of '
                       f'{", ".join(algorithm_registry.names())}, got '
                       f'{self.algorithm!r}')
    self.validate_run()
    checks = (self._level_checks(num_clients) + self._privacy_checks() +
              self._round_checks(num_clients))
    for ok, message in checks:
      if not ok:
        raise ValueError(message)

  def _level_checks(self, num_clients: Optional[int]) -> list:
    """(ok, message) of the ratios r, the levels and the clients' choices
    (r is checked here, where it is set: the groups rely on it)."""
    levels = len(self.noise_multipliers)
    return [
        (all(0.0 <= r <= 1.0 for r in self.ratios),
         f'r must be in [0, 1], got {self.ratio}'),
        (len(self.ratios) in (1, levels),
         f'give one r or one per privacy level ({levels}), got '
         f'{len(self.ratios)}'),
        (self.privacy_levels is not None or
         len(self.level_fractions) == levels - 1,
         f'{levels} privacy levels need {levels - 1} level fractions, got '
         f'{len(self.level_fractions)}'),
        (self.privacy_levels is None or num_clients is None or
         len(self.privacy_levels) == num_clients,
         f'privacy_levels must give each of the {num_clients} clients a '
         f'level or None, got {len(self.privacy_levels or ())}'),
        (self.privacy_levels is None or all(
            l is None or (isinstance(l, (int, np.integer)) and
                          0 <= l < levels)
            for l in self.privacy_levels),
         'privacy_levels must be None (opt-out) or a level in '
         f'[0, {levels}) (one per noise multiplier), got '
         f'{_first_bad_level(self.privacy_levels, self.noise_multipliers)!r}'),
    ]

  def _privacy_checks(self) -> list:
    """(ok, message) of Ditto's and the learning rates, the opt-outs and
    the mechanism and how it is accounted."""
    return [
        (self.ditto_init in DITTO_INITS,
         f'ditto_init must be one of {", ".join(DITTO_INITS)}, got '
         f'{self.ditto_init!r}'),
        (self.lambda_p >= 0, f'lambda_p must be >= 0, got {self.lambda_p}'),
        (self.lambda_np >= 0, f'lambda_np must be >= 0, got {self.lambda_np}'),
        (self.learning_rate > 0,
         f'learning_rate must be > 0, got {self.learning_rate}'),
        (self.personal_learning_rate >= 0, 'personal_learning_rate must be '
         f'>= 0, got {self.personal_learning_rate}'),
        (0.0 <= self.optout_fraction < 1.0, 'optout_fraction must be in '
         f'[0, 1), got {self.optout_fraction}'),
        (self.denominators in DENOMINATORS,
         f'denominators must be one of {", ".join(DENOMINATORS)}, got '
         f'{self.denominators!r}'),
        (self.poisson_sampling or self.accountant != 'pld',
         'accountant pld needs poisson_sampling: a fixed cohort is accounted '
         'by rdp only (dp_accounting has no PLD of sampling without '
         'replacement)'),
        (all(z >= 0 for z in self.noise_multipliers),
         f'noise_multiplier must be >= 0, got {self.noise_multiplier}'),
    ]

  def _round_checks(self, num_clients: Optional[int]) -> list:
    """(ok, message) of the cohort, the client update and adaptive
    clipping."""
    if num_clients is None:
      cohort_ok = self.clients_per_round >= 1
      cohort_range = '>= 1'
    else:
      cohort_ok = 1 <= self.clients_per_round <= num_clients
      cohort_range = f'in [1, {num_clients}] (the population)'
    return [
        (cohort_ok, f'clients_per_round must be {cohort_range}, got '
         f'{self.clients_per_round}'),
        (0.0 < self.sampling_rate <= 1.0,
         f'sampling_rate must be in (0, 1], got {self.sampling_rate}'),
        (self.local_epochs >= 1,
         f'local_epochs must be >= 1, got {self.local_epochs}'),
        (self.batch_size >= 1, f'batch_size must be >= 1, got {self.batch_size}'),
        (self.initial_clip > 0,
         f'initial_clip must be > 0, got {self.initial_clip}'),
        (self.clip_learning_rate >= 0, 'clip_learning_rate must be >= 0, got '
         f'{self.clip_learning_rate}'),
        (0.0 <= self.target_quantile <= 1.0, 'target_quantile must be in '
         f'[0, 1], got {self.target_quantile}'),
        (0.0 < self.lr_decay_factor <= 1.0, 'lr_decay_factor must be in '
         f'(0, 1], got {self.lr_decay_factor}'),
        (self.lr_decay_rounds >= 1,
         f'lr_decay_rounds must be >= 1, got {self.lr_decay_rounds}'),
    ]


def _first_bad_level(levels, noise_multipliers):
  for level in levels or ():
    if level is not None and not (isinstance(level, (int, np.integer)) and
                                  0 <= level < len(noise_multipliers)):
      return level
  return None


@dataclasses.dataclass(frozen=True)
class Setup:
  """What a config resolves to before training (all deterministic)."""

  algorithm: algorithm_lib.Algorithm
  groups: tuple[privacy_groups.PrivacyGroup, ...]
  client_groups: np.ndarray  # Group index of each client.
  opted_out: np.ndarray  # The clients' own choice (True = opted out).
  value_noise_multipliers: tuple[float, ...]  # z of each private level.
  clipped_count_stddev: float
  # Per group, E[N_i^t] (the fixed denominators); None for realised counts.
  expected_counts: Optional[tuple[float, ...]]


def run_algorithm(config: FedHdpConfig,
                  algorithm: Optional[algorithm_lib.Algorithm] = None
                  ) -> algorithm_lib.Algorithm:
  """`algorithm` if given (an object, registered or not, with its own
  settings), else the registered algorithm `config.algorithm` names, with
  the settings of `config` it owns (`Algorithm.configured`)."""
  if algorithm is not None:
    return algorithm
  return algorithm_registry.get(config.algorithm).configured(config)


def with_algorithm(config: FedHdpConfig,
                   algorithm: algorithm_lib.Algorithm) -> FedHdpConfig:
  """`config` running `algorithm` (an object, registered or not): its name
  and the fields its settings fill, so the run records what ran."""
  if not isinstance(algorithm, algorithm_lib.Algorithm):
    raise TypeError('algorithm must be a tff_hdp.fedhdp.algorithm.Algorithm'
                    f', got {type(algorithm).__name__}')
  if not algorithm.name:
    raise TypeError(f'algorithm {type(algorithm).__name__} has no name')
  return dataclasses.replace(config, algorithm=algorithm.name,
                             **algorithm.config_fields())


def resolve_noise(
    config: FedHdpConfig,
    algorithm: Optional[algorithm_lib.Algorithm] = None
) -> tuple[list[float], list[float], float]:
  """(z per level, z_eff per level, z_b) of the run's algorithm
  (`run_algorithm`).

  z_b defaults to TFF's 0.05 x cohort; z is derived from z_eff and z_b as
  TFF's `gaussian_adaptive` does (`clip_noise.split_noise_multiplier`).
  Raises ValueError if some z_eff >= 2 z_b. The Non-Private baseline has no
  noise at all.
  """
  noised = run_algorithm(config, algorithm).noised
  z_effs = [z if noised else 0.0 for z in config.noise_multipliers]
  z_b = config.clipped_count_stddev
  if z_b is None and any(z_effs):
    z_b = clip_noise.default_clipped_count_stddev(config.clients_per_round)
  z_b = z_b or 0.0
  zs = [clip_noise.split_noise_multiplier(z, z_b)[0] for z in z_effs]
  return zs, z_effs, z_b


def resolve(config: FedHdpConfig,
            data: Optional[federated_data.FederatedData] = None,
            algorithm: Optional[algorithm_lib.Algorithm] = None) -> Setup:
  """The clients' choices and the groups and noise parameters.

  With `config.privacy_levels`, the clients' own choices (no data needed);
  else the opt-outs and levels drawn once with the public seed among
  `data`'s clients, as paper 001's experiments do. The groups are those of
  `run_algorithm(config, algorithm)`.
  """
  if config.privacy_levels is None and data is None:
    raise ValueError('privacy_levels must give every client a level or None '
                     '(opt-out)')
  num_clients = (data.num_clients if data is not None else
                 len(config.privacy_levels))
  config.validate(num_clients, algorithm)
  if config.privacy_levels is not None:  # Each client's own choice.
    opted_out = np.array([l is None for l in config.privacy_levels])
    levels = np.array([0 if l is None else l for l in config.privacy_levels],
                      np.int32)
  else:  # Drawn once with the public seed, as paper 001's experiments.
    candidates = data.clients_with_label(7) if config.skewed_optout else None
    opted_out = privacy_groups.select_opt_outs(
        num_clients, config.optout_fraction, config.seed,
        candidates=candidates)
    levels = privacy_groups.select_levels(opted_out, config.level_fractions,
                                          config.seed)
  algorithm = run_algorithm(config, algorithm)
  zs, z_effs, z_b = resolve_noise(config, algorithm)
  groups = privacy_groups.build_groups(
      algorithm,
      noise_multipliers=zs,
      effective_noise_multipliers=z_effs,
      lambda_p=config.lambda_p,
      lambda_np=config.lambda_np)
  client_groups = privacy_groups.assign_groups(
      algorithm, opted_out, levels, len(config.noise_multipliers))
  return Setup(algorithm, groups, client_groups, opted_out, tuple(zs), z_b,
               expected_counts(config, groups, client_groups))


def expected_counts(config: FedHdpConfig,
                    groups: Sequence[privacy_groups.PrivacyGroup],
                    client_groups: np.ndarray) -> Optional[tuple[float, ...]]:
  """E[N_i^t] per group (0 for a group never communicated with), or None.

  Each client takes part with probability q (Poisson) or n / N (a fixed
  cohort), so group i's expected count is that rate times its size N_i.
  FedHDP with r = 0 drops its private clients from every cohort
  (`excluded_groups`): their group's expected count is 0.
  """
  if config.denominators == 'realised':
    return None
  num_clients = len(client_groups)
  rate = config.round_sampling(num_clients)['sampling_rate']
  excluded = excluded_groups(groups)
  sizes = np.bincount(client_groups, minlength=len(groups))
  return tuple(0.0 if i in excluded else float(rate * sizes[i])
               for i in range(len(groups)))


def excluded_groups(groups: Sequence[privacy_groups.PrivacyGroup]) -> set[int]:
  """Groups never communicated with: ratio 0 (FedHDP r = 0's private group)."""
  if len(groups) < 2:
    return set()
  return {i for i, g in enumerate(groups) if g.ratio == 0}


