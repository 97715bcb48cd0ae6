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
"""Runs the README's privacy-audit configurations and prints their table.

    python run_scripts/audit_table.py --output_dir=results/audit_table
    python run_scripts/audit_table.py --mnist_data_dir=~/.keras/datasets
    python run_scripts/audit_table.py --standin_mnist

Each configuration is one `audit_privacy.py` run (FedHDP) or `audit_udp.py`
run (UDP-Alg's phi), skipped when its results.json exists, under both
statistics; the table has one row per privacy group. The digits rows need nothing downloaded. The paper-preset rows
(MNIST, Table 7, at 50 rounds) need `mnist.npz`: pass --mnist_data_dir, or
--standin_mnist to write a stand-in file of the same format made from
scikit-learn's digits (8x8 images upscaled to 28x28, 60,000 + 10,000 draws):
the mechanism is the preset's (N = 2,000, q = 0.05, z = 1.5, the 199,210
parameter FC NN), the images are not MNIST's.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# pylint: disable=g-import-not-at-top,wrong-import-position
import json
import math

from absl import app
from absl import flags

from run_scripts import cli

_OUTPUT_DIR = flags.DEFINE_string('output_dir', 'results/audit_table',
                                  'Where each run and the table go.')
_MNIST_DIR = flags.DEFINE_string('mnist_data_dir', None,
                                 'Directory of mnist.npz: adds the MNIST '
                                 'preset rows.')
_STANDIN = flags.DEFINE_bool('standin_mnist', False,
                             'Add the MNIST preset rows on a stand-in '
                             'mnist.npz made from the digits (see above).')

_DIGITS = ['--quick', '--canaries_per_group=200']
_LEVELS = ['--r=1', '--noise_multiplier=3,1.5', '--level_fractions=0.45']
_PLANT = ['--planted_noise_scale=0.5']
# (name, flags) of each configuration.
CONFIGS = (
    ('digits fedhdp r=0.01', _DIGITS),
    ('digits fedhdp r=1, two levels', _DIGITS + _LEVELS),
    ('digits fedhdp r=1, two levels, private_1 noise x0.5',
     _DIGITS + _LEVELS + _PLANT + ['--planted_noise_group=private_1']),
    ('digits dp_fedavg', _DIGITS + ['--algorithm=dp_fedavg']),
    ('digits dp_fedavg, noise x0.5',
     _DIGITS + ['--algorithm=dp_fedavg'] + _PLANT),
)
# UDP-Alg's phi on the offline digits (run_udp.py's digits defaults: 50
# users).
UDP_CONFIGS = (
    ('digits udp-alg', ['--dataset=digits']),
    ('digits udp-alg, noise x0.5', ['--dataset=digits'] + _PLANT),
)
_MNIST = ['--preset=mnist', '--rounds=50', '--noditto',
          '--canaries_per_group=500']
MNIST_CONFIGS = (
    ('mnist preset, 50 rounds', _MNIST),
    ('mnist preset, 50 rounds, noise x0.5', _MNIST + _PLANT),
)


def _fmt(value) -> str:
  if value is None:
    return '—'
  return '∞' if math.isinf(value) else f'{value:.2f}'


def main(argv):
  if len(argv) > 1:
    raise cli.UsageError(f'unexpected arguments: {" ".join(argv[1:])}')
  cli.check(not (_MNIST_DIR.value and _STANDIN.value),
            'give --mnist_data_dir or --standin_mnist, not both')
  configs = list(CONFIGS)
  mnist_dir = _MNIST_DIR.value
  if _STANDIN.value:
    mnist_dir = os.path.join(_OUTPUT_DIR.value, 'standin_mnist')
    if not os.path.exists(os.path.join(mnist_dir, 'mnist.npz')):
      from datasets import mnist  # pylint: disable=g-import-not-at-top
      mnist.write_standin(mnist_dir)
  if mnist_dir:
    suffix = ' (stand-in data)' if _STANDIN.value else ''
    configs += [(name + suffix, args + [f'--data_dir={mnist_dir}'])
                for name, args in MNIST_CONFIGS]
  configs = [(name, 'audit_privacy.py', args) for name, args in configs]
  configs += [(name, 'audit_udp.py', args) for name, args in UDP_CONFIGS]
  jobs, runs = [], []
  for name, script_name, args in configs:
    script = os.path.join(cli.REPO_ROOT, 'run_scripts', script_name)
    for statistic in ('max', 'sum'):
      slug = ''.join(c if c.isalnum() else '_' for c in name)
      out = os.path.join(_OUTPUT_DIR.value, f'{slug}_{statistic}')
      runs.append((name, statistic, out))
      if os.path.exists(os.path.join(out, 'results.json')):
        continue
      command = [sys.executable, script, *args, f'--statistic={statistic}',
                 '--noprogress', f'--output_dir={out}']
      jobs.append((f'{name} [{statistic}]',
                   lambda c=command, o=out: cli.run_logged(c, o)))
  failed = cli.run_jobs(jobs, parallel=1)
  cli.check(not failed, f'{len(failed)} runs failed; see their log.txt')
  lines = ['| configuration | statistic | group | ε accounted | ε estimate '
           '| ε lower bound (95%) | planted |', '|---' * 7 + '|']
  for name, statistic, out in runs:
    with open(os.path.join(out, 'results.json')) as f:
      record = json.load(f)
    for row in record['audit']:
      lines.append(
          f'| {name} | {statistic} | {row["group"]} | '
          f'{_fmt(row["epsilon_accounted"])} | {_fmt(row["epsilon_estimate"])}'
          f' | {_fmt(row["epsilon_lower_bound"])} | '
          f'{row["planted_noise_scale"]:g} |')
  table = '\n'.join(lines)
  print(table)
  with open(os.path.join(_OUTPUT_DIR.value, 'table.md'), 'w') as f:
    f.write(table + '\n')


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
