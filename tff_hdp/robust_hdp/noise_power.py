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
"""Paper 003's Table 2 computed: the noise power of each rule's aggregate.

Table 2 prints, for FMNIST with E = 200 rounds and each privacy distribution,
the noise power sum_i w_i^2 sigma_i^2 / (p eta_l^2) of the aggregate, with
sigma_i^2 from eqs. (7) and (3). For a rule whose weights are fixed by what
the server is told (`rule.FixedWeightRule`) the entry follows from the
clients' (epsilon_i, b_i, N_i) and the accountant alone. A rule whose
weights come from the updates (Robust-HDP's robust PCA) runs on synthetic
updates of the real size p whose noise has exactly the eq. (7) variances (a
shared update plus Gaussian noise), which measures how close it gets to the
Oracle when the DP noise is what the model says it is. A trained run's
measured value (`run_robust_hdp.py`, results.json) replaces it where
available (run_scripts/table2_robust_hdp.py). `rule_noise_power` gives
either.

The paper's values, its rules and its setting are `paper_tables` (the
transcription in `tff_hdp/robust_hdp/reference/paper003_table2.csv`).
"""

import dataclasses
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf

from tff_hdp.robust_hdp import aggregation_rules
from tff_hdp.robust_hdp import privacy_preferences
from tff_hdp.robust_hdp import rule as rule_lib
from tff_hdp.robust_hdp import rule_registry
import tff_hdp.robust_hdp.rules  # pylint: disable=unused-import  # Registered.


@dataclasses.dataclass(frozen=True)
class Setting:
  """What every client shares in Table 2 (`paper_tables.SETTING` without
  num_clients).

  Attributes:
    num_examples: N_i, every client's examples.
    rounds: E, the rounds the noise is calibrated for.
    local_epochs: K.
    clip: c, the per-example clip norm.
    learning_rate: eta_l.
    delta: The target delta.
    num_parameters: p, the model's parameters.
    conversion: RDP to (epsilon, delta), as in
      `privacy_preferences.calibration_accountant`.
  """
  num_examples: int
  rounds: int
  local_epochs: int
  clip: float
  learning_rate: float
  delta: float
  num_parameters: int
  conversion: str = 'improved'


def client_variances(epsilons: Sequence[Optional[float]],
                     batch_sizes: Sequence[int],
                     setting: Setting) -> np.ndarray:
  """sigma_i^2 (eq. (7)) of clients calibrated to `epsilons` in
  `setting`."""
  clients = privacy_preferences.calibrate(
      epsilons, batch_sizes, [setting.num_examples] * len(epsilons),
      rounds=setting.rounds, local_epochs=setting.local_epochs,
      delta=setting.delta,
      accountant=privacy_preferences.calibration_accountant(
          conversion=setting.conversion))
  return np.array([
      aggregation_rules.dp_sgd_noise_variance(
          c.noise_multiplier, c.batch_size, c.num_examples,
          setting.local_epochs, setting.clip, setting.learning_rate,
          setting.num_parameters) for c in clients
  ])


def rule_noise_power(name: str, epsilons, batch_sizes, *, seed: int = 0,
                     signal_scale: float = 0.01, **setting) -> float:
  """Table 2's entry of the rule called `name` (module doc); `setting` the
  fields of `Setting` (`paper_tables.SETTING` without num_clients); `seed`
  and `signal_scale` make the synthetic updates of a rule whose weights
  come from them.

  Raises:
    ValueError: If the rule's aggregate is not a weighted sum (PFA's).
  """
  rule = rule_registry.get(name)
  if not rule.is_weighted_sum:
    raise ValueError(f'rule {name}\'s aggregate is not a weighted sum of the '
                     'updates: it has no noise power')
  setting = Setting(**setting)
  variances = client_variances(rule.calibration_epsilons(epsilons),
                               batch_sizes, setting)
  p = setting.num_parameters
  side = rule_lib.SideInformation(
      epsilons=tuple(epsilons),
      num_examples=(setting.num_examples,) * len(epsilons),
      variances=tuple(variances))
  if isinstance(rule, rule_lib.FixedWeightRule):
    weights = rule_lib.normalized(rule.fixed_weights(side))
  else:
    rng = np.random.default_rng(seed)
    updates = (rng.normal(size=(1, p)) * signal_scale +
               rng.normal(size=(len(epsilons), p)) *
               np.sqrt(variances / p)[:, None])
    weights, _ = rule.weights(
        tf.constant(updates),
        {k: tf.constant(v) for k, v in rule.told(side).items()})
    weights = weights.numpy()
  return aggregation_rules.noise_power(weights, variances, p,
                                       setting.learning_rate)
