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
"""Every Robust-HDP aggregation rule as an HDP-Bench method.

Threat model: an untrusted server. Every client runs DP-SGD on its own data
(`tff_hdp.robust_hdp`), at its own b_i and the noise multiplier z_i that
makes the benchmark's T rounds spend exactly its epsilon_i
(`privacy_preferences.calibrate`), and sends only its noised update; the
rules (`tff_hdp.robust_hdp.rules`, one file each) differ in how the
server weighs the updates and what it must be told
(`Rule.server_knows`). A rule whose clients do not clip or add noise
(non-private training) is a reference, without a guarantee, never ranked.

Every rule of `tff_hdp.robust_hdp.rule_registry` is a method here, the
package's and any registered later (this file watches the registry): a
rule is registered once, where it is written. A client who opts out
(epsilon_i infinite) trains without noise (paper 003's non-private client);
a rule that weighs by every epsilon_i or noise refuses such a population.
The round is the package's own (`robust_hdp.training`: the direct runner,
robust PCA by the inexact ALM); nothing of a rule's maths is repeated here.
"""

import dataclasses
import math
from typing import Optional

import numpy as np

from tff_hdp.bench import method
from tff_hdp.bench import registry
from tff_hdp.robust_hdp import config as config_lib
from tff_hdp.robust_hdp import presets
from tff_hdp.robust_hdp import rule_registry
import tff_hdp.robust_hdp.rules  # pylint: disable=unused-import  # Registered.

NO_GUARANTEE = dataclasses.replace(method.SAMPLE_LEVEL, kind='none')


class RobustHdpRule(method.Method):
  """A registered Robust-HDP rule (`rule_registry`), on the benchmark."""

  threat_model = 'untrusted server'

  def __init__(self, rule: str, *, clip: float = presets.PAPER.clip,
               rpca_method: str = presets.PAPER.rpca_method):
    """The rule called `rule`; `clip` is DP-SGD's per-example c and
    `rpca_method` robust PCA's solver (default: paper 003's setting,
    `presets.PAPER`)."""
    found = rule_registry.get(rule)
    self.name = rule
    self.rule = rule
    self.clip = clip
    self.rpca_method = rpca_method
    self.guarantee = (method.SAMPLE_LEVEL if found.private else
                      NO_GUARANTEE)
    self.server_knows = found.server_knows
    # Where the rule is written: what a worker process must import.
    self.source_module = type(found).__module__

  def refuses(self, preferences):
    if (rule_registry.get(self.rule).needs_every_epsilon and
        not all(preferences.private)):
      return (f'{self.rule} weighs every client by its epsilon or noise; '
              'these preferences have a client who opts out')
    return None

  # Paper 003's round trains every client (no cohort) and Robust-HDP's
  # robust PCA factors every client's update, a cost growing as n^2 a
  # round; the paper runs 20 to 60 clients.
  max_clients = 100

  def refuses_population(self, setting):
    if setting.num_clients > self.max_clients:
      return (f'{self.rule} trains all {setting.num_clients} clients every '
              "round (paper 003's rules have no cohort; its experiments run "
              f'20-60 clients): refused above {self.max_clients}')
    return None

  def config(self, setting: method.Setting,
             preferences: method.Preferences) -> config_lib.RobustHdpConfig:
    """The run of this rule on `setting` for `preferences`."""
    batch_sizes = preferences.batch_sizes or (setting.batch_size,) * (
        preferences.num_clients)
    return config_lib.RobustHdpConfig(
        algorithm=self.rule,
        epsilons=tuple(e if math.isfinite(e) else None
                       for e in preferences.epsilons),
        batch_sizes=tuple(int(b) for b in batch_sizes),
        distribution=preferences.name, model=setting.model,
        rounds=setting.rounds, local_epochs=setting.local_epochs,
        learning_rate=setting.learning_rate, clip=self.clip,
        delta=setting.delta, accountant=setting.accountant,
        rpca_method=self.rpca_method, eval_every=setting.rounds,
        backend='direct')

  def calibrate(self, setting, preferences):
    from tff_hdp.robust_hdp import process  # pylint: disable=g-import-not-at-top
    config = self.config(setting, preferences)
    config.validate()
    clients = tuple(process.client_privacy(config, setting.num_examples()))
    # The run takes the clients' calibration with its config: a worker
    # process (jobs > 1) does not calibrate them again.
    return method.Calibration(
        clients=tuple(
            None if c.noise_multiplier is None else
            method.ClientMechanism(c.sampling_rate, c.noise_multiplier,
                                   c.steps)
            for c in clients),
        config=(config, clients))

  def run(self, setting, calibration, *, seed,
          mechanism_seed: Optional[int] = None):
    from tff_hdp.robust_hdp import training  # pylint: disable=g-import-not-at-top
    config, clients = calibration.config
    experiment = method.prepare_run(training, config, setting, seed=seed,
                                    mechanism_seed=mechanism_seed,
                                    clients=clients)
    run = training.run_rounds(experiment)
    accuracy = float(np.nanmean(training.local_accuracies(
        experiment.spec, run.state['global_weights'], setting.data)))
    return method.Outcome(
        accuracy=accuracy,
        epsilons=method.client_epsilons(run.ledger, [
            None if c.noise_multiplier is None else method.client_entry(i)
            for i, c in enumerate(experiment.clients)], setting))


rule_registry.watch(lambda rule: registry.register(RobustHdpRule(rule.name)))
