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
"""UDP-Alg's comparison table (`run_scripts/run_udp.py`) and its claim line.

One row per run (UDP-Alg, its clip-only ablation, Noiseless, pFedHN) from
the results records of `tff_hdp.udp.training.train`: epsilon ('—' when the
run adds no noise), the mean and variance of the users' accuracies with
their generated models, and the noise stddev on grad phi; under it the line
of `tff_hdp.claims.udp`. TensorFlow-free.
"""

from typing import Any, Mapping, Sequence

from tff_hdp import claims
from tff_hdp import tables
from tff_hdp.udp import algorithm_registry
import tff_hdp.udp.algorithms  # pylint: disable=unused-import  # Registered.

HEADER = ('algorithm', 'epsilon', 'accuracy (mean)', 'accuracy (var)',
          'noise stddev')


def run_row(record: Mapping[str, Any]) -> tuple[str, ...]:
  """One table row from a run's results record."""
  epsilon = record['epsilon']
  metrics = record['metrics']
  return (record['config']['algorithm'],
          '—' if epsilon is None else f'{epsilon:.2f}',
          f'{metrics["accuracy_mean"]:.2f}',
          f'{metrics["accuracy_var"]:.1f}',
          f'{record["setup"]["noise_stddev"]:.3g}')


def claim_line(records: Sequence[Mapping[str, Any]]) -> str:
  """Whether paper 004's claim holds in these runs (`claims.udp`)."""
  runs = {r['config']['algorithm']: (r['metrics']['accuracy_mean'],
                                     r['epsilon']) for r in records}
  variants = {n: algorithm_registry.get(n) for n in runs
              if n in algorithm_registry.names()}
  return claims.udp(runs, variants) + claims.mechanism_caveat(records)


def table(records: Sequence[Mapping[str, Any]]) -> str:
  """The comparison table as text, its claim line last."""
  return (tables.format_text([run_row(r) for r in records], HEADER) + '\n' +
          claim_line(records))


def title(dataset: str, num_users: int, config) -> str:
  """The table's title line: the data and `config`'s (a `UdpConfig`)
  setting."""
  return (f'dataset={dataset} users={num_users} rounds={config.rounds} '
          f'q={config.sampling_rate:g} S={config.clip:g} '
          f'z={config.noise_multiplier:.4g} w_hat={config.sample_cap:g} '
          f'delta={config.delta:g}')


def summary(record: Mapping[str, Any]) -> str:
  """The line printed when a run ends."""
  epsilon = record['epsilon']
  return (f'accuracy={record["metrics"]["accuracy_mean"]:.2f} '
          f'epsilon={"none" if epsilon is None else f"{epsilon:.3f}"}' +
          ('' if epsilon is None else ' (users\' sizes taken as public)'))
