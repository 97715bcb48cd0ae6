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
"""Paper 003's Table 2 (noise power per rule and distribution), ours and the paper's.

    python run_scripts/table2_robust_hdp.py
    python run_scripts/table2_robust_hdp.py \
        --results_dir=results/paper_scale_fmnist/table2 --dataset=fashion_mnist

Prints, for every rule and Dist1-Dist9, our noise power next to the paper's
(`ours (paper)`) in Table 2's setting (FMNIST: 20 clients x 2,400 images,
E = 200, K = 1, c = 3, delta = 1e-4, p = 28,938; the paper's values and
setting are `tff_hdp.robust_hdp.paper_tables`); see
`tff_hdp.robust_hdp.noise_power` for how each entry is obtained (a rule
whose weights come from the updates, Robust-HDP, on synthetic updates).
With --results_dir (and --dataset), each rule with runs there gains a
measured row: per distribution, the mean over their rounds of the noise
power of the run_robust_hdp.py runs found (results.json of a run of that
rule with that distribution, 20 clients and noise calibrated for Table 2's
E = 200: `make table2-fmnist`'s, on real Fashion-MNIST). Writes table2.txt
and table2.md to --output_dir. Calibrating 360 clients takes a few
minutes.

--conversion=classic calibrates every client as the authors' Opacus
accountant did (the classic RDP conversion on Opacus's default orders; see
`tff_hdp.privacy.accounting`), which reproduces the paper's numbers.
"""

import json
import os
from typing import Optional

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
from absl import app
from absl import flags
import numpy as np

from tff_hdp.run_scripts import cli
from tff_hdp import tables

_RESULTS_DIR = flags.DEFINE_string(
    'results_dir', None, 'Directory searched for run_robust_hdp.py results.')
_OUTPUT_DIR = flags.DEFINE_string('output_dir', 'results/table2_robust_hdp',
                                  'Where table2.txt and table2.md go.')
_DATASET = flags.DEFINE_string(
    'dataset', None, 'With --results_dir: only runs on this dataset '
    "(Table 2's is fashion_mnist; default any).")
_DISTRIBUTIONS = flags.DEFINE_list(
    'distributions', None, 'Subset of dist1 ... dist9 (default: all).')
_CONVERSION = flags.DEFINE_enum(
    'conversion', 'improved', ['improved', 'classic'],
    'RDP to (epsilon, delta): improved (ours, dp_accounting) or classic (the '
    "authors' Opacus accounting, which reproduces the paper's values; about "
    '3 minutes per distribution).')

# Table 2's name of a row whose rule's label is not it.
PAPER_LABELS = {'Oracle': 'Oracle (eq. (8))'}


def measured(results_dir: str, rules, dataset: Optional[str] = None,
             calibration_rounds: Optional[int] = None
             ) -> dict[tuple[str, str], tuple[float, int]]:
  """{(rule, distribution): (mean noise power, rounds averaged)} of the
  runs of `rules` (with 20 clients) under results_dir; only runs on
  `dataset` and whose noise is calibrated for `calibration_rounds`, if
  given."""
  found = {}
  for root, _, files in os.walk(results_dir):
    if 'results.json' not in files:
      continue
    with open(os.path.join(root, 'results.json')) as f:
      runs = json.load(f).get('runs', [])
    for run in runs:
      config = run.get('config', {})
      calibrated = config.get('calibration_rounds') or config.get('rounds')
      if (config.get('algorithm') not in rules or
          len(config.get('epsilons', ())) != 20 or
          dataset not in (None, run.get('dataset')) or
          calibration_rounds not in (None, calibrated)):
        continue
      powers = [h['noise_power'] for h in run['history']
                if h.get('noise_power') is not None]
      if powers:
        found.setdefault((config['algorithm'], config['distribution']),
                         []).append(powers)
  return {d: (float(np.mean([p for run in v for p in run])),
              sum(len(run) for run in v)) for d, v in found.items()}


def main(argv):
  cli.check_no_arguments(argv)
  from tff_hdp.robust_hdp import noise_power
  from tff_hdp.robust_hdp import paper_tables
  from tff_hdp.robust_hdp import privacy_preferences
  from tff_hdp.robust_hdp import rule_registry
  import tff_hdp.robust_hdp.rules  # pylint: disable=unused-import  # Registered.
  distributions = _DISTRIBUTIONS.value or list(privacy_preferences.DISTRIBUTIONS)
  unknown = [d for d in distributions
             if d not in privacy_preferences.DISTRIBUTIONS]
  cli.check(not unknown, f'--distributions: unknown {", ".join(unknown)}; '
            f'allowed: {", ".join(privacy_preferences.DISTRIBUTIONS)}')
  if _RESULTS_DIR.value is not None:
    cli.check(os.path.isdir(_RESULTS_DIR.value),
              f'--results_dir={_RESULTS_DIR.value} is not a directory')
  rules = {r: rule_registry.get(r) for r in paper_tables.TABLE_RULES}
  found = (measured(_RESULTS_DIR.value, rules, _DATASET.value,
                    calibration_rounds=paper_tables.SETTING['rounds'])
           if _RESULTS_DIR.value else {})
  paper = paper_tables.load_reference()
  setting = dict(paper_tables.SETTING)
  del setting['num_clients']
  setting['conversion'] = _CONVERSION.value
  cells = {rule: {} for rule in paper_tables.TABLE_RULES}
  for dist in distributions:
    eps, bs = privacy_preferences.load_distribution(dist, 20)
    for rule in paper_tables.TABLE_RULES:
      cells[rule][dist] = noise_power.rule_noise_power(rule, eps, bs,
                                                       **setting)
    print(f'{dist}: ' + ' '.join(f'{r}={cells[r][dist]:.3g}'
                                 for r in paper_tables.TABLE_RULES), flush=True)
  header = ['alg \\ dist'] + [d.replace('dist', 'Dist') for d in distributions]
  names = {r: PAPER_LABELS.get(rule.label, rule.label)
           for r, rule in rules.items()}
  rows = [[names[r]] + [f'{cells[r][d]:.2f} ({paper[r][d]:.2f})'
                        for d in distributions]
          for r in paper_tables.TABLE_RULES]
  # A measured row under its analytic one's rules: the runs' mean over
  # their rounds, beside the paper's cell.
  for r in paper_tables.TABLE_RULES:
    if any((r, d) in found for d in distributions):
      rows.append([f'{names[r]}, measured'] + [
          f'{found[r, d][0]:.2f} ({paper[r][d]:.2f})' if (r, d) in found
          else '-' for d in distributions])
  rounds = sorted({n for _, n in found.values()})
  source = (f'Measured rows: the noise power of runs under '
            f'{_RESULTS_DIR.value}' +
            (f' on {_DATASET.value}' if _DATASET.value else '') +
            f' (noise calibrated for E = {paper_tables.SETTING["rounds"]}), '
            f'averaged over {"/".join(map(str, rounds))} rounds a cell. '
            if found else '') + (
                ', '.join(rule.label for rule in rules.values()
                          if rule.estimates_from_updates) +
                ' analytic: RPCA on synthetic updates.')
  title = ('Table 2, ours (paper): noise power sum w_i^2 sigma_i^2 / (p '
           f'eta^2), FMNIST setting, {_CONVERSION.value} RDP conversion. ' +
           source)
  text = tables.format_text(rows, header)
  print('\n' + title + '\n' + text)
  os.makedirs(_OUTPUT_DIR.value, exist_ok=True)
  with open(os.path.join(_OUTPUT_DIR.value, 'table2.txt'), 'w') as f:
    f.write(title + '\n' + text + '\n')
  with open(os.path.join(_OUTPUT_DIR.value, 'table2.md'), 'w') as f:
    f.write(tables.format_markdown(rows, header) + '\n')


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
