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
"""Runs docs/audit.md's privacy-audit configurations and prints their table.

    python run_scripts/audit_table.py --output_dir=results/audit_table

Each configuration is one run of `audit_fedhdp.py` (FedHDP, DP-FedAvg),
`audit_udp.py` (UDP-Alg's phi) or `audit_robust_hdp.py` (Robust-HDP's
clients), skipped when its results.json exists; all on offline data (the
digits, or the 5,000 real MNIST images of `mnist5k`). Every run observes the
release with the LR statistic (the binaries' defaults); a second table shows
what the weaker observer of the global model sees at FedHDP's default
r = 0.01 (for comparison: it is not an audit of the guarantee). The table has one row per audited group or
client: the RDP and PLD epsilons, the estimate and its ratio to each, the
lower bound, and the planted noise factor.
"""

import os
import sys

# pylint: disable=g-import-not-at-top,wrong-import-position
import json
import math

from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import subprocess_jobs
from tff_hdp.run_scripts import output_dirs

_OUTPUT_DIR = flags.DEFINE_string('output_dir', 'results/audit_table',
                                  'Where each run and the table go.')

_DIGITS = ['--quick', '--canaries_per_group=1000']
_LEVELS = ['--r=1', '--noise_multiplier=3,1.5', '--level_fractions=0.45']
_PLANT = ['--planted_noise_scale=0.5']
_GLOBAL = ['--observe=global', '--statistic=max']
_MNIST = ['--preset=mnist', '--dataset=mnist5k', '--rounds=50', '--noditto',
          '--canaries_per_group=2000']
_UDP_DIGITS = ['--quick', '--canaries=1000']
_RHDP = ['--privacy_distribution=dist1', '--rounds=40']
# (name, binary, flags) of each configuration, each run correct and planted.
CONFIGS = (
    ('FedHDP digits, r=0.01', 'audit_fedhdp.py', _DIGITS),
    ('FedHDP digits, r=1, two levels', 'audit_fedhdp.py', _DIGITS + _LEVELS),
    ('DP-FedAvg digits', 'audit_fedhdp.py',
     _DIGITS + ['--algorithm=dp_fedavg']),
    ('FedHDP MNIST preset, 50 rounds, mnist5k', 'audit_fedhdp.py', _MNIST),
    ('UDP-Alg digits', 'audit_udp.py', _UDP_DIGITS),
    ('UDP-Alg mnist5k', 'audit_udp.py', []),
    ('Robust-HDP Dist1, 40 rounds', 'audit_robust_hdp.py', _RHDP),
)
# For comparison, not an audit of the guarantee: the weaker observer of the
# global model at FedHDP's default r = 0.01.
COMPARISON = (
    ('FedHDP digits, r=0.01, global observer', 'audit_fedhdp.py',
     _DIGITS + _GLOBAL),
)


def _fmt(value, digits=2) -> str:
  if value is None:
    return '—'
  if isinstance(value, float) and math.isnan(value):
    return 'nan'
  return '∞' if math.isinf(value) else f'{value:.{digits}f}'


def runs(configs):
  """(name, planted, output directory, command) of every run."""
  out = []
  for name, script_name, args in configs:
    script = os.path.join(cli.REPO_ROOT, 'run_scripts', script_name)
    for planted in (False, True):
      extra = list(_PLANT) if planted else []
      if planted and _LEVELS[0] in args:
        extra.append('--planted_noise_group=private_1')
      slug = ''.join(c if c.isalnum() else '_' for c in name)
      directory = os.path.join(_OUTPUT_DIR.value,
                               slug + ('_planted' if planted else ''))
      out.append((name, planted, directory,
                  [sys.executable, script, *args, *extra, '--noprogress',
                   f'--output_dir={directory}']))
  return out


def table(records) -> str:
  """docs/audit.md's table from (name, record) pairs."""
  lines = ['| configuration | observer | group | ε RDP | ε PLD | ε estimate | '
           'estimate / RDP | estimate / PLD | ε lower bound (95%) | '
           'planted |', '|---' * 10 + '|']
  for name, record in records:
    for row in record['audit']:
      group = row['group']
      if 'Robust-HDP' in name:
        group = (f'client {group} (ε_i={row["target_epsilon"]:g}, '
                 f'b_i={row["batch_size"]})')
      lines.append(
          f'| {name} | {row["observe"]}, {row["statistic"]} | {group} | '
          f'{_fmt(row["epsilon_accounted"])} | '
          f'{_fmt(row["epsilon_accounted_pld"])} | '
          f'{_fmt(row["epsilon_estimate"])} | '
          f'{_fmt(row["estimate_over_accounted"])} | '
          f'{_fmt(row["estimate_over_accounted_pld"])} | '
          f'{_fmt(row["epsilon_lower_bound"])} | '
          f'{row["planted_noise_scale"]:g} |')
  return '\n'.join(lines)


def main(argv):
  cli.check_no_arguments(argv)
  output_dirs.check_output_dir(_OUTPUT_DIR.value)
  main_runs, comparison_runs = runs(CONFIGS), runs(COMPARISON)
  jobs = [(f'{name}{" [planted]" if planted else ""}',
           lambda c=command, o=directory: subprocess_jobs.run_logged(c, o))
          for name, planted, directory, command in main_runs + comparison_runs
          if not os.path.exists(os.path.join(directory, 'results.json'))]
  failed = subprocess_jobs.run_jobs(jobs, parallel=1)
  cli.check(not failed, f'{len(failed)} runs failed; see their log.txt')
  texts = []
  for selected in (main_runs, comparison_runs):
    records = []
    for name, _, directory, _ in selected:
      with open(os.path.join(directory, 'results.json')) as f:
        records.append((name, json.load(f)))
    texts.append(table(records))
  text = texts[0] + '\n\nFor comparison, the global observer:\n\n' + texts[1]
  print(text)
  with open(os.path.join(_OUTPUT_DIR.value, 'table.md'), 'w') as f:
    f.write(text + '\n')


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
