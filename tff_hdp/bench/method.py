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
"""What a heterogeneous-DP method is to HDP-Bench: one object, one interface.

As TF Privacy's `DPQuery` is the one interface every mechanism implements, a
`Method` is the one interface every heterogeneous-DP method of the benchmark
implements:

    class MyMethod(bench.Method):
      name = 'my_method'
      threat_model = 'trusted server'
      guarantee = bench.CLIENT_LEVEL
      server_knows = 'epsilon_i'

      def calibrate(self, setting, preferences) -> bench.Calibration: ...
      def run(self, setting, calibration, *, seed, mechanism_seed)
          -> bench.Outcome: ...

    bench.register(MyMethod())   # in its own file; the benchmark finds it

A population (`Setting`: the clients' data and what every method shares)
and its privacy preferences (`Preferences`: epsilon_i per client, infinite
for a client who opts out of privacy, and optionally a DP-SGD batch size
b_i) go in; `calibrate` gives every client's accounted mechanism, the
composition of Poisson-subsampled Gaussians its epsilon is computed from
(`ClientMechanism`), so that the benchmark can check, with its own
accountant, that every client's epsilon_i is met before anything runs; `run`
trains and returns the mean local test accuracy and each client's epsilon
as the run's own ledger spent it. A row whose ledger spends more than some
client asked is invalid and never ranked (`leaderboard`). Methods are
compared within a guarantee family only (`Guarantee.family`; why:
docs/bench.md). TensorFlow-free.
"""

import abc
import dataclasses
import functools
import math
from typing import Any, Optional, Sequence

from tff_hdp.data import federated_data

OPT_OUT = math.inf  # A client's preference when it opts out of privacy.


@dataclasses.dataclass(frozen=True)
class Guarantee:
  """What a method's epsilon means.

  Attributes:
    family: The leaderboard the method is ranked in: methods of one family
      promise the same kind of epsilon.
    protects: What a neighbouring dataset changes.
    covers: Which outputs the guarantee covers.
    kind: 'bound' (epsilon bounds what the run releases) or 'none' (a
      reference row without a guarantee, never ranked).
  """
  family: str
  protects: str
  covers: str
  kind: str = 'bound'

  def words(self) -> str:
    """The guarantee in one phrase, for a leaderboard."""
    if self.kind == 'none':
      return 'none (a reference)'
    return f'(epsilon_i, delta)-DP of {self.protects}, for {self.covers}'


SAMPLE_LEVEL = Guarantee(
    family='sample-level, per client (untrusted server)',
    protects='one example of client i',
    covers='everything client i sends')
CLIENT_LEVEL = Guarantee(
    family='client-level, per client (trusted server)',
    protects="client i's whole data",
    covers='every global model')
USER_LEVEL_PERSONALIZED = Guarantee(
    family='user-level, personalized (trusted server)',
    protects="user i's whole data",
    covers="the hypernetwork and every other user's model (billboard)")


@dataclasses.dataclass(frozen=True)
class Preferences:
  """A population's privacy preferences, one entry per client.

  Attributes:
    name: Its name in the leaderboard (e.g. 'dist1').
    epsilons: epsilon_i > 0 per client; `OPT_OUT` (infinity) for a client
      who opts out of privacy.
    batch_sizes: b_i >= 1 per client (DP-SGD methods), or None for the
      setting's.
    origin: Where they come from, in words (a distribution, a file, or a
      mixture and the public seed of its draw), for the run's output.
  """
  name: str
  epsilons: tuple[float, ...]
  batch_sizes: Optional[tuple[int, ...]] = None
  origin: str = ''

  def __post_init__(self):
    if not self.epsilons:
      raise ValueError(f'preferences {self.name!r}: no client')
    bad = [e for e in self.epsilons if not (e > 0)]  # NaN fails too.
    if bad:
      raise ValueError(f'preferences {self.name!r}: every epsilon must be > 0 '
                       f'(inf to opt out), got {bad[0]!r}')
    if self.batch_sizes is not None:
      if len(self.batch_sizes) != len(self.epsilons):
        raise ValueError(f'preferences {self.name!r}: one batch size per '
                         f'client ({len(self.epsilons)}), got '
                         f'{len(self.batch_sizes)}')
      if any(b < 1 for b in self.batch_sizes):
        raise ValueError(f'preferences {self.name!r}: batch sizes must be '
                         f'>= 1, got {min(self.batch_sizes)}')

  @property
  def num_clients(self) -> int:
    return len(self.epsilons)

  @property
  def private(self) -> tuple[bool, ...]:
    """Per client, whether it asked for privacy (a finite epsilon)."""
    return tuple(math.isfinite(e) for e in self.epsilons)


@dataclasses.dataclass(frozen=True)
class Setting:
  """What every method of one benchmark shares.

  Attributes:
    data: The clients (client i has preference i).
    rounds: T, the rounds every method runs; epsilon_i is its budget over
      all of them.
    delta: delta of every client's guarantee.
    model: A `tff_hdp.models` name.
    local_epochs, learning_rate: Each client's local SGD per round.
    batch_size: The local batch size of methods without per-client b_i.
    accountant: 'rdp' or 'pld', of every calibration and ledger.
    sampling_rate: q, each client's probability to take part in a round,
      for the methods that sample a cohort (client- and user-level).
    population: Its name in the leaderboard (`tff_hdp.bench.population`).
  """
  data: federated_data.FederatedData
  rounds: int
  delta: float = 1e-4
  model: str = 'cnn5'
  local_epochs: int = 1
  learning_rate: float = 0.1
  batch_size: int = 32
  accountant: str = 'rdp'
  sampling_rate: float = 0.5
  population: str = ''

  @property
  def num_clients(self) -> int:
    return self.data.num_clients

  def num_examples(self) -> list[int]:
    """N_i, each client's training examples."""
    return [len(y) for _, y in self.data.train]


@dataclasses.dataclass(frozen=True)
class ClientMechanism:
  """A client's accounted mechanism over the whole run: `steps` Poisson-
  subsampled Gaussian mechanisms of rate `sampling_rate` and multiplier
  `noise_multiplier` (its epsilon at the setting's delta is
  `tff_hdp.privacy.accounting.compute_epsilon` of them)."""
  sampling_rate: float
  noise_multiplier: float
  steps: int


@dataclasses.dataclass(frozen=True)
class Calibration:
  """A method's calibration to a population's preferences.

  Attributes:
    clients: Per client, its accounted mechanism, or None when the method
      gives it no guarantee (an opt-out, or a method without privacy).
    config: What the method runs (its system's configuration).
  """
  clients: tuple[Optional[ClientMechanism], ...]
  config: Any


@dataclasses.dataclass(frozen=True)
class Outcome:
  """What one run of a method gives.

  Attributes:
    accuracy: The mean over clients of the local test accuracy (%) of the
      model each client ends with (the global model, or its own personal
      model for a personalized method).
    epsilons: Per client, the epsilon its run's ledger spent at the
      setting's delta: inf for a client given no guarantee.
  """
  accuracy: float
  epsilons: tuple[float, ...]


class Method(abc.ABC):
  """A heterogeneous-DP method, as the benchmark runs it (module doc).

  Attributes:
    name: Its name in the registry and the leaderboard.
    threat_model: Who is trusted, in a few words.
    guarantee: What its epsilon means (`Guarantee`).
    server_knows: What the server must be told to aggregate.
  """
  name: str
  threat_model: str
  guarantee: Guarantee
  server_knows: str

  def refuses(self, preferences: Preferences) -> Optional[str]:
    """Why the method cannot serve these preferences (None if it can)."""
    del preferences
    return None

  def refuses_population(self, setting: Setting) -> Optional[str]:
    """Why the method does not fit this population, in one line (None if
    it does): e.g. a round whose cost grows with every client's update."""
    del setting
    return None

  @abc.abstractmethod
  def calibrate(self, setting: Setting,
                preferences: Preferences) -> Calibration:
    """Every client's mechanism, meeting its epsilon_i over the setting's
    rounds (or None where the method gives no guarantee)."""

  @abc.abstractmethod
  def run(self, setting: Setting, calibration: Calibration, *, seed: int,
          mechanism_seed: Optional[int] = None) -> Outcome:
    """Trains the setting's clients under `calibration`.

    Args:
      setting: The population.
      calibration: `calibrate`'s, for the preferences being run.
      seed: The public seed (the initial model).
      mechanism_seed: None: the run's noise and sampling come from a secret
        key; an integer makes them reproducible (and its epsilons not
        guarantees for its outputs).
    """


def prepare_run(training, config, setting: Setting, *, seed: int,
                mechanism_seed: Optional[int], **prepare_args):
  """A system's driver experiment (`training.prepare`: FedHDP's, Robust-HDP's
  or UDP-Alg's) of a calibrated `config` on the setting's clients, with this
  run's public seed and mechanism seed (None: a secret key); `prepare_args`
  go to `training.prepare` (e.g. Robust-HDP's calibrated `clients`)."""
  return training.prepare(
      dataclasses.replace(config, seed=seed, mechanism_seed=mechanism_seed),
      setting.data, **prepare_args)


# The methods calibrate to the same few epsilons (a level's, the minimum) at
# the same q and T, and idp_scale to every client's: (epsilon, q, T, delta,
# accountant) -> z, each computed once per process.
_NOISE_MULTIPLIERS = {}


def noise_multipliers_for_epsilons(epsilons: Sequence[float],
                                   sampling_rate: float, rounds: int,
                                   delta: float, accountant: str = 'rdp'
                                   ) -> tuple[float, ...]:
  """`tff_hdp.privacy.accounting.noise_multipliers_for_epsilons` (z per
  epsilon at one q and T, one search for all), remembered."""
  from tff_hdp.privacy import accounting  # pylint: disable=g-import-not-at-top
  keys = [(e, sampling_rate, rounds, delta, accountant) for e in epsilons]
  todo = list(dict.fromkeys(k[0] for k in keys if k not in _NOISE_MULTIPLIERS))
  if todo:
    zs = accounting.noise_multipliers_for_epsilons(
        todo, sampling_rate, rounds, delta, accountant=accountant)
    _NOISE_MULTIPLIERS.update(
        ((e, sampling_rate, rounds, delta, accountant), z)
        for e, z in zip(todo, zs))
  return tuple(_NOISE_MULTIPLIERS[k] for k in keys)


def noise_multiplier_for_epsilon(epsilon: float, sampling_rate: float,
                                 rounds: int, delta: float,
                                 accountant: str = 'rdp') -> float:
  """z of one epsilon (`noise_multipliers_for_epsilons`), remembered."""
  return noise_multipliers_for_epsilons([epsilon], sampling_rate, rounds,
                                        delta, accountant)[0]


@functools.lru_cache(maxsize=None)
def mechanism_epsilon(mechanism: ClientMechanism, delta: float,
                      accountant: str = 'rdp') -> float:
  """The epsilon `mechanism` spends at `delta`
  (`tff_hdp.privacy.accounting.compute_epsilon`), remembered."""
  from tff_hdp.privacy import accounting  # pylint: disable=g-import-not-at-top
  return accounting.compute_epsilon(
      mechanism.sampling_rate, mechanism.noise_multiplier, mechanism.steps,
      delta, accountant=accountant)


def planned_epsilons(calibration: Calibration, delta: float,
                     accountant: str = 'rdp') -> tuple[float, ...]:
  """Per client, the epsilon its accounted mechanism spends (inf for none)."""
  return tuple(math.inf if m is None else
               mechanism_epsilon(m, delta, accountant)
               for m in calibration.clients)


def client_entry(i: int) -> str:
  """The ledger entry of client i in a method that accounts client by
  client."""
  return f'client_{i}'


def client_epsilons(ledger, entries: Sequence[Optional[str]],
                    setting: Setting) -> tuple[float, ...]:
  """Per client, the epsilon `ledger` spent on its entry (`entries[i]`, or
  None for a client no mechanism covers: inf) at the setting's delta."""
  return tuple(math.inf if name is None else
               ledger.get_epsilon(name, setting.delta, setting.accountant)
               for name in entries)


def budgets_met(spent: Sequence[float], asked: Sequence[float],
                tolerance: float = 1e-9) -> bool:
  """Whether every client's spent epsilon is within what it asked for."""
  return all(s <= a * (1 + tolerance) for s, a in zip(spent, asked))
