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
"""Paper 004's UDP-Alg at the minimum epsilon, as an HDP-Bench method.

Threat model: a trusted server holding a hypernetwork phi and every user's
embedding (`tff_hdp.udp`, Algorithm 1). UDP-Alg has one privacy level, so
every user runs at the strictest: z makes the benchmark's T rounds of
Poisson sampling at rate q spend min_i epsilon_i
(`accounting.noise_multiplier_for_epsilon`). Its guarantee is user-level and
holds for phi and every *other* user's model ("billboard"): user i's own
personal model is not private from user i's data, so UDP-Alg is ranked with
the personalized methods, on the accuracy of each user's own model, not
beside the global ones.

The target network is the setting's model; the sample cap w_hat is
UdpConfig's default (`tff_hdp.udp.config.default_sample_cap`), as the
binary's.
"""

import math
from typing import Optional

from tff_hdp.bench import method
from tff_hdp.bench import registry


class UdpAtMinimumEpsilon(method.Method):
  """UDP-Alg with every user at min_i epsilon_i (module doc)."""

  name = 'udp_min'
  threat_model = 'trusted server'
  guarantee = method.USER_LEVEL_PERSONALIZED
  server_knows = 'epsilon_min'

  def __init__(self, *, sampling_rate: Optional[float] = None,
               clip: float = 0.1, local_steps: int = 10):
    """`sampling_rate`: q (None: the setting's); `clip`: S; `local_steps`:
    each user's steps a round."""
    self.sampling_rate = sampling_rate
    self.clip = clip
    self.local_steps = local_steps

  def calibrate(self, setting, preferences):
    from tff_hdp.udp import config as config_lib  # pylint: disable=g-import-not-at-top
    target = min(preferences.epsilons)
    if not math.isfinite(target):
      raise ValueError('UDP-Alg needs a user with a finite epsilon')
    rate = self.sampling_rate or setting.sampling_rate
    z = method.noise_multiplier_for_epsilon(
        target, rate, setting.rounds, setting.delta,
        accountant=setting.accountant)
    config = config_lib.UdpConfig(
        algorithm='udp', target='fc' if setting.model == 'fc' else 'lenet',
        rounds=setting.rounds, sampling_rate=rate,
        clip=self.clip, noise_multiplier=z, local_steps=self.local_steps, batch_size=setting.batch_size,
        delta=setting.delta, accountant=setting.accountant,
        eval_every=setting.rounds, backend='direct')
    config.validate()
    mechanism = method.ClientMechanism(rate, z, setting.rounds)
    return method.Calibration(
        clients=(mechanism,) * setting.num_clients, config=config)

  def run(self, setting, calibration, *, seed,
          mechanism_seed: Optional[int] = None):
    from tff_hdp.udp import training  # pylint: disable=g-import-not-at-top
    experiment = method.prepare_run(training, calibration.config, setting,
                                    seed=seed, mechanism_seed=mechanism_seed)
    run = training.run_rounds(experiment)
    record = training.results_record(experiment, run, 0.0)
    spent = run.ledger.get_epsilon(training.LEDGER_NAME, setting.delta,
                                   setting.accountant)
    return method.Outcome(accuracy=record['metrics']['accuracy_mean'],
                          epsilons=(spent,) * setting.num_clients)


registry.register(UdpAtMinimumEpsilon())
