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
"""Robust-HDP's comparison table (`run_scripts/run_robust_hdp.py`) and its
claim line.

One row per aggregation rule from the results records of
`tff_hdp.robust_hdp.training.train`: the mean (std) of the clients' local
test accuracies, the noise power of the aggregate, what the server must know
to weigh the updates (the rule's `server_knows`; paper 003's Table 1), and
the smallest and largest epsilon the clients achieved; under it the line of
`tff_hdp.claims.robust_hdp`. TensorFlow-free.
"""

from typing import Any, Mapping, Sequence

from tff_hdp import claims
from tff_hdp import tables
from tff_hdp.robust_hdp import rule_registry
import tff_hdp.robust_hdp.rules  # pylint: disable=unused-import  # Registered.

HEADER = ('Algorithm', 'accuracy%', 'noise power', 'server knows',
          'min/max epsilon achieved')


def run_row(record: Mapping[str, Any]) -> list[str]:
  """One row of the comparison table from a run's record."""
  rule = rule_registry.get(record['config']['algorithm'])
  m = record['metrics']
  achieved = [c['achieved_epsilon'] for c in record['clients']
              if c['achieved_epsilon'] is not None]
  if record['config'].get('clip_only'):
    achieved = []  # No noise: the calibrated epsilons were not spent.
  return [
      name(record['config']),
      f"{m['accuracy']:.2f}({m['accuracy_std']:.2f})",
      '-' if m['noise_power'] is None else f"{m['noise_power']:.4g}",
      rule.server_knows,
      f'{min(achieved):.2f}/{max(achieved):.2f}' if achieved else '-',
  ]


def name(config: Mapping[str, Any]) -> str:
  """A run's name in the table: its rule's label, marked when clip only (no
  noise; `RobustHdpConfig.clip_only`)."""
  return (rule_registry.get(config['algorithm']).label +
          (' (clip only)' if config.get('clip_only') else ''))


def claim_line(records: Sequence[Mapping[str, Any]]) -> str:
  """Whether paper 003's claim holds in these runs (`claims.robust_hdp`;
  clip-only runs are not private, so not compared)."""
  return claims.robust_hdp(
      {name(r['config']): r['metrics']['accuracy'] for r in records
       if not r['config'].get('clip_only')},
      roles()) + claims.mechanism_caveat(records)


def roles() -> dict[str, str]:
  """Every registered rule's role, by its label (`claims.robust_hdp`)."""
  return {rule_registry.get(n).label: rule_registry.get(n).role
          for n in rule_registry.names()}


def table(records: Sequence[Mapping[str, Any]]) -> str:
  """The comparison table as text, its claim line last."""
  return (tables.format_text([run_row(r) for r in records], HEADER) + '\n' +
          claim_line(records))


def title(dataset: str, num_clients: int, config,
          shards_per_client: int) -> str:
  """The table's title line: the data and `config`'s (a `RobustHdpConfig`)
  setting."""
  return (f'dataset={dataset} clients={num_clients} '
          f'privacy={config.distribution} rounds={config.rounds} ' +
          (f'(noise calibrated for {config.calibration_rounds}) '
           if getattr(config, 'calibration_rounds', None) else '') +
          f'local_epochs={config.local_epochs} lr={config.learning_rate} '
          f'clip={config.clip} delta={config.delta} model={config.model} '
          f'shards_per_client={shards_per_client}')


def summary(record: Mapping[str, Any]) -> str:
  """The line printed when a run ends."""
  m = record['metrics']
  power = m['noise_power']
  return (f"accuracy={m['accuracy']:.2f} noise_power="
          f"{power if power is None else round(power, 4)}")
