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
"""Paper 001's FedHDP, HDP-FedAvg and DP-FedAvg as HDP-Bench methods.

Threat model: a trusted server, which knows each client's privacy level and
adds the noise (`tff_hdp.fedhdp`, Algorithm 2 without Ditto: the global
model is what is compared). The guarantee is client-level: every global
model is (epsilon_i, delta)-DP with respect to client i's whole data.

Paper 001 serves a few privacy levels, not one epsilon per client. So the
private clients are grouped into `levels` privacy levels by their epsilon_i
(as equal in size as the ranks allow, the strictest first) and each level
is calibrated to its strictest member's epsilon: its effective noise
multiplier z_j makes the benchmark's T rounds of Poisson sampling at rate q
spend exactly that epsilon (`accounting.noise_multiplier_for_epsilon`):
every member's budget is met, the looser ones under-spent. A client who
opts out (epsilon_i infinite) joins the non-private group, as in paper 001.

- DP-FedAvg puts every client at the strictest level (one group at
  min_i epsilon_i).
- HDP-FedAvg averages the levels by their expected counts (r = 1).
- FedHDP weighs level j by r_j = (z_min / z_j)^2, the inverse of its noise
  variance relative to the least noisy level (paper 001 up-weights the less
  noisy groups; its r is a tuned hyperparameter, and this rule is ours), and
  the private levels against the opt-outs by `ratio` on top (paper 001's
  best r on non-IID MNIST with 5% opt-outs, 0.01, Table 8).
- FedAvg without privacy (paper 001's Non-Private), on the same cohorts,
  is the family's reference.

The clip norm is fixed (S, no clip-count release is needed for its update;
the count is still noised with z_b = 2 max_j z_j, which costs at most 3% of
value noise, since the aggregator releases the unclipped fraction).
"""

import dataclasses
import math
from typing import Optional

import numpy as np

from tff_hdp.bench import method
from tff_hdp.bench import registry
from tff_hdp.bench.methods import global_model_runs
from tff_hdp.fedhdp import algorithm_registry
import tff_hdp.fedhdp.algorithms  # pylint: disable=unused-import  # Registered.

# The benchmark's name of an algorithm, where it is not its own (paper
# 003's rules hold 'non_private').
_METHOD_NAMES = {'dp_fedavg': 'dp_fedavg_min',
                 'non_private': 'non_private_fedavg'}
NO_GUARANTEE = dataclasses.replace(method.CLIENT_LEVEL, kind='none')


def privacy_levels(epsilons, levels: int) -> tuple[list, list[float]]:
  """(each client's level or None, each level's epsilon): the finite
  epsilons sorted and cut into `levels` groups as equal as possible (fewer
  if there are fewer distinct epsilons: clients asking the same epsilon
  share one level's mean and its noise, as paper 001's private group),
  level 0 the strictest; a level's epsilon is its smallest member's."""
  private = [i for i, e in enumerate(epsilons) if math.isfinite(e)]
  order = sorted(private, key=lambda i: epsilons[i])
  distinct = len({epsilons[i] for i in private})
  cuts = np.array_split(np.array(order, np.int64), min(levels, distinct))
  of_client = [None] * len(epsilons)
  targets = []
  for level, members in enumerate(cuts):
    for i in members:
      of_client[int(i)] = level
    targets.append(min(epsilons[int(i)] for i in members))
  return of_client, targets


class FedHdpLevels(method.Method):
  """One of paper 001's algorithms on privacy levels (module doc)."""

  threat_model = 'trusted server'
  guarantee = method.CLIENT_LEVEL
  server_knows = "each client's privacy level"

  def __init__(self, algorithm: str, *, levels: int = 2,
               sampling_rate: Optional[float] = None, clip: float = 1.0,
               ratio: float = 0.01):
    """`algorithm`: a registered algorithm's name (`algorithm_registry`;
    one without noise, as 'non_private', runs FedAvg on the same cohorts as
    a reference); `levels`: the private levels (one for an algorithm of
    one group); `sampling_rate`: q, each client's probability to take part
    in a round (None: the setting's); `clip`: S; `ratio`: FedHDP's r of the
    private levels against the opt-outs (used when some client opts out)."""
    found = algorithm_registry.get(algorithm)
    self.algorithm = algorithm
    self.name = _METHOD_NAMES.get(algorithm, algorithm)
    self.levels = 1 if found.one_group else levels
    self.sampling_rate = sampling_rate
    self.clip = clip
    self.ratio = ratio
    self.noised = found.noised
    self.takes_ratio = 'ratio' in found.config_fields()
    # Where the algorithm is written: what a worker process must import.
    self.source_module = type(found).__module__
    if not found.noised:
      self.guarantee = NO_GUARANTEE
      self.server_knows = 'nothing'

  def rate(self, setting) -> float:
    """q of a run on `setting`."""
    return self.sampling_rate or setting.sampling_rate

  def config(self, setting, preferences):
    """The run's `FedHdpConfig`: levels, their noise and weights."""
    from tff_hdp.fedhdp import config as config_lib  # pylint: disable=g-import-not-at-top
    rate = self.rate(setting)
    if not self.noised:  # Nobody private, no noise.
      of_client, targets = (None,) * setting.num_clients, ()
    else:
      of_client, targets = privacy_levels(preferences.epsilons, self.levels)
    z_effs = method.noise_multipliers_for_epsilons(
        targets, rate, setting.rounds, setting.delta,
        accountant=setting.accountant) or (0.0,)
    opt_outs = not all(preferences.private)
    if self.takes_ratio:  # FedHDP's r, inverse-variance across levels.
      ratios = tuple(min(z_effs) ** 2 / z ** 2 * (self.ratio if opt_outs
                                                  else 1.0)
                     for z in z_effs)
    else:
      ratios = (1.0,) * len(z_effs)
    return config_lib.FedHdpConfig(
        algorithm=self.algorithm, ditto=False, ratio=ratios,
        model=setting.model, rounds=setting.rounds,
        clients_per_round=max(1, round(rate * setting.num_clients)),
        sampling_rate=rate, poisson_sampling=True,
        denominators='expected', local_epochs=setting.local_epochs,
        batch_size=setting.batch_size, learning_rate=setting.learning_rate,
        initial_clip=self.clip, clip_learning_rate=0.0,
        noise_multiplier=z_effs, privacy_levels=tuple(of_client),
        clipped_count_stddev=2 * max(z_effs), delta=setting.delta,
        accountant=setting.accountant, eval_every=setting.rounds,
        backend='direct')

  def calibrate(self, setting, preferences):
    from tff_hdp.fedhdp import config as config_lib  # pylint: disable=g-import-not-at-top
    config = self.config(setting, preferences)
    setup = config_lib.resolve(config)  # Validates it.
    # Each private client's mechanism is its group's z_eff, what runs.
    z_effs = [setup.groups[g].effective_noise_multiplier
              for g in setup.client_groups]
    return method.Calibration(
        clients=tuple(
            None if level is None or z is None else method.ClientMechanism(
                self.rate(setting), z, setting.rounds)
            for level, z in zip(config.privacy_levels, z_effs)),
        config=config)

  def run(self, setting, calibration, *, seed,
          mechanism_seed: Optional[int] = None):
    from tff_hdp.fedhdp import training  # pylint: disable=g-import-not-at-top
    experiment = method.prepare_run(training, calibration.config, setting,
                                    seed=seed, mechanism_seed=mechanism_seed)
    groups = experiment.setup.groups
    return global_model_runs.outcome(
        experiment, training.run_rounds(experiment), setting,
        [groups[g].name if groups[g].is_private else None
         for g in experiment.setup.client_groups])


# Every algorithm of paper 001, and any registered later (this file watches
# the registry), is a method; paper 001's in the order the bench's tables
# have always listed them.
_PAPER_ORDER = ('fedhdp', 'hdp_fedavg', 'dp_fedavg', 'non_private')
for _name in _PAPER_ORDER:
  registry.register(FedHdpLevels(_name))
algorithm_registry.watch(
    lambda algorithm: algorithm.name in _PAPER_ORDER or registry.register(
        FedHdpLevels(algorithm.name)))
