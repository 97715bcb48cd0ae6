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
"""What a Robust-HDP aggregation rule is: one object, one interface.

Paper 003's server turns the round's noised updates Delta_i (rows of an
[n, p] matrix) into sum_i w_i Delta_i, and its rules (Table 1) differ in
how they weigh and in what the server must be told. As TF Privacy's
`DPQuery` is one interface every mechanism implements, a `Rule` says both:

    class FirstClient(rule.FixedWeightRule):
      name = 'first_client'
      label = 'First client'
      server_knows = 'nothing'

      def fixed_weights(self, side):
        return np.eye(len(side.num_examples))[0]

    rule_registry.register(FirstClient())   # in its own file

`told` picks from `SideInformation` (everything a server could be told
before training) what this rule's server is told, and `weights` sees only
that and the updates: a rule told nothing weighs from the updates alone.
The aggregator (`aggregator.NoiseAwareAggregationFactory`) and the drivers
take any object on this interface; `rule_registry` finds one by name.
TensorFlow-free at import (the binaries check names before TensorFlow
loads): a rule imports TensorFlow inside its `weights`.
"""

import abc
import dataclasses
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from tff_hdp import registry


@dataclasses.dataclass(frozen=True)
class SideInformation:
  """What a server could be told about the clients, one entry per client.

  Attributes:
    epsilons: Target epsilon_i (None: a client without privacy).
    num_examples: N_i.
    variances: sigma_i^2 of eq. (7) of each client's calibrated DP-SGD (the
      Oracle's knowledge; 0 for a client without noise).
  """
  epsilons: tuple[Optional[float], ...]
  num_examples: tuple[int, ...]
  variances: tuple[float, ...]


ROLES = registry.ROLES


class Rule(abc.ABC):
  """A Robust-HDP aggregation rule (module doc).

  Attributes:
    name: Its name in the registry, `--algorithm` and results.
    label: Its row's name in tables.
    server_knows: What its server must be told, in a few words (Table 1).
    private: False when its clients run plain SGD (no clipping, no noise).
    estimates_from_updates: True when its weights come from each round's
      updates (then they are measured, the aggregator can estimate them in
      the first round only, and a clip-only run computes them from the
      noised updates its clients would have sent).
    needs_every_epsilon: True when it cannot weigh a client without privacy.
    is_weighted_sum: False when its aggregate is not sum_i w_i Delta_i (its
      noise power is then undefined).
    role: What it is in a comparison (`ROLES`): 'proposed' (paper 003's
      Robust-HDP), 'baseline' (a private rule the claim compares against),
      'oracle' (told what no server knows), 'ours' (this package's
      variant), 'reference' (not private: the ceiling). The claim line, the
      sweeps and HDP-Bench read it; a rule of yours is a 'baseline' unless
      it says otherwise.
  """
  name: str
  label: str
  server_knows: str
  role: str = 'baseline'
  private: bool = True
  estimates_from_updates: bool = False
  needs_every_epsilon: bool = False
  is_weighted_sum: bool = True

  def configured(self, config) -> 'Rule':
    """This rule with the settings of `config` (a `RobustHdpConfig`) that
    it reads, e.g. its solver's; by default itself."""
    del config
    return self

  def calibration_epsilons(self, epsilons: Sequence[Optional[float]]
                           ) -> list[Optional[float]]:
    """The epsilon each client calibrates its DP-SGD to (None: no noise)."""
    return list(epsilons)

  def min_cohort(self, num_clients: int) -> int:
    """The fewest clients a round can aggregate (besides none)."""
    del num_clients
    return 1

  def told(self, side: SideInformation) -> dict[str, np.ndarray]:
    """What the server is told: per-client numpy arrays, fixed before
    training (default: nothing)."""
    del side
    return {}

  @abc.abstractmethod
  def weights(self, updates, told: Mapping[str, Any]):
    """(w, sigma^2 estimate), float64 [m] tensors, w summing to 1, from the
    [m, p] updates of the round's m clients and `told`'s arrays restricted
    to them (tensors). Plain TensorFlow (it runs inside the server's TFF
    computation); the estimate is zeros for a rule that makes none."""

  def aggregate(self, updates, weights, told: Mapping[str, np.ndarray]):
    """The [p] float32 aggregate of the [n, p] updates, absent rows
    weighing 0 (`told` as `told()` returned it). Default: sum_i w_i Delta_i.
    """
    del told
    from tff_hdp.robust_hdp import aggregation_rules  # pylint: disable=g-import-not-at-top
    return aggregation_rules.weighted_sum(updates, weights)


class FixedWeightRule(Rule):
  """A rule whose weights are fixed before training from what its server
  is told (`fixed_weights`), renormalised among a round's clients."""

  @abc.abstractmethod
  def fixed_weights(self, side: SideInformation) -> np.ndarray:
    """w_i >= 0 of every client, not all 0 (normalised by the caller)."""

  def told(self, side: SideInformation) -> dict[str, np.ndarray]:
    return {'weights': normalized(self.fixed_weights(side))}

  def weights(self, updates, told):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    weights = tf.cast(told['weights'], tf.float64)
    return (tf.math.divide_no_nan(weights, tf.reduce_sum(weights)),
            tf.zeros_like(weights))


def normalized(values: Sequence[float]) -> np.ndarray:
  """values / sum(values), float64."""
  values = np.asarray(values, np.float64)
  if values.ndim != 1 or len(values) == 0 or np.any(values < 0) or not (
      values.sum() > 0):
    raise ValueError(f'weights need non-negative values with a positive sum, '
                     f'got {values}')
  return values / values.sum()


def rpca_options(config) -> dict[str, Any]:
  """Robust PCA's settings in `config` (a `RobustHdpConfig`), as the
  keyword arguments of `rpca.noise_variances` and `rpca.split_norms`."""
  return dict(block_rows=config.block_rows,
              max_iterations=config.rpca_max_iterations,
              method=config.rpca_method)
