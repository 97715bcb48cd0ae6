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
    python run_scripts/table2_robust_hdp.py --results_dir=results/robust_hdp

Prints, for every rule and Dist1-Dist9, our noise power next to the paper's
(`ours (paper)`) in Table 2's setting (FMNIST: 20 clients x 2,400 images,
E = 200, K = 1, c = 3, delta = 1e-4, p = 28,938; the paper's values and
setting are `tff_hdp.robust_hdp.paper_tables`); see
`tff_hdp.robust_hdp.noise_power` for how each entry is obtained. With
--results_dir, the entry of a rule whose weights come from the updates
(Robust-HDP) is, for a distribution, the mean over rounds of the noise power
measured in run_robust_hdp.py runs found there (results.json of a run of
that rule with that distribution and 20 clients); otherwise it comes from
the rule on synthetic updates. Writes table2.txt and table2.md to
--output_dir. Calibrating 360 clients takes a few minutes.

--conversion=classic calibrates every client as the authors' Opacus
accountant did (the classic RDP conversion on Opacus's default orders; see
`tff_hdp.privacy.accounting`), which reproduces the paper's numbers.
"""

import json
import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
from tff_hdp import tables

_RESULTS_DIR = flags.DEFINE_string(
    'results_dir', None, 'Directory searched for run_robust_hdp.py results.')
_OUTPUT_DIR = flags.DEFINE_string('output_dir', 'results/table2_robust_hdp',
                                  'Where table2.txt and table2.md go.')
_DISTRIBUTIONS = flags.DEFINE_list(
    'distributions', None, 'Subset of dist1 ... dist9 (default: all).')
_CONVERSION = flags.DEFINE_enum(
    'conversion', 'improved', ['improved', 'classic'],
    'RDP to (epsilon, delta): improved (ours, dp_accounting) or classic (the '
    "authors' Opacus accounting, which reproduces the paper's values; about "
    '3 minutes per distribution).')

# Table 2's name of a row whose rule's label is not it.
PAPER_LABELS = {'Oracle': 'Oracle (eq. (8))'}


def measured(results_dir: str, rules) -> dict[tuple[str, str], float]:
  """{(rule, distribution): mean noise power} of the runs of `rules` (with
  20 clients) under results_dir."""
  found = {}
  for root, _, files in os.walk(results_dir):
    if 'results.json' not in files:
      continue
    with open(os.path.join(root, 'results.json')) as f:
      runs = json.load(f).get('runs', [])
    for run in runs:
      config = run.get('config', {})
      if (config.get('algorithm') not in rules or
          len(config.get('epsilons', ())) != 20):
        continue
      powers = [h['noise_power'] for h in run['history']
                if h.get('noise_power') is not None]
      if powers:
        found.setdefault((config['algorithm'], config['distribution']),
                         []).append(sum(powers) / len(powers))
  return {d: sum(v) / len(v) for d, v in found.items()}


def main(argv):
  cli.check_no_arguments(argv)
  from tff_hdp.robust_hdp import noise_power
  from tff_hdp.robust_hdp import paper_tables
  from tff_hdp.robust_hdp import privacy_preferences
  from tff_hdp.robust_hdp import rule_registry
  distributions = _DISTRIBUTIONS.value or list(privacy_preferences.DISTRIBUTIONS)
  unknown = [d for d in distributions
             if d not in privacy_preferences.DISTRIBUTIONS]
  cli.check(not unknown, f'--distributions: unknown {", ".join(unknown)}; '
            f'allowed: {", ".join(privacy_preferences.DISTRIBUTIONS)}')
  if _RESULTS_DIR.value is not None:
    cli.check(os.path.isdir(_RESULTS_DIR.value),
              f'--results_dir={_RESULTS_DIR.value} is not a directory')
  rules = {r: rule_registry.get(r) for r in paper_tables.TABLE_RULES}
  estimated = [r for r, rule in rules.items() if rule.estimates_from_updates]
  found = (measured(_RESULTS_DIR.value, estimated)
           if _RESULTS_DIR.value else {})
  paper = paper_tables.load_reference()
  setting = dict(paper_tables.SETTING)
  del setting['num_clients']
  setting['conversion'] = _CONVERSION.value
  cells = {rule: {} for rule in paper_tables.TABLE_RULES}
  for dist in distributions:
    eps, bs = privacy_preferences.load_distribution(dist, 20)
    for rule in paper_tables.TABLE_RULES:
      value = found.get((rule, dist))
      if value is None:
        value = noise_power.rule_noise_power(rule, eps, bs, **setting)
      cells[rule][dist] = value
    print(f'{dist}: ' + ' '.join(f'{r}={cells[r][dist]:.3g}'
                                 for r in paper_tables.TABLE_RULES), flush=True)
  header = ['alg \\ dist'] + [d.replace('dist', 'Dist') for d in distributions]
  names = {r: PAPER_LABELS.get(rule.label, rule.label)
           for r, rule in rules.items()}
  rows = [[names[r]] + [f'{cells[r][d]:.2f} ({paper[r][d]:.2f})'
                        for d in distributions]
          for r in paper_tables.TABLE_RULES]
  source = ', '.join(rules[r].label for r in estimated) + (
      ': measured in runs under ' + _RESULTS_DIR.value if found else
      ': RPCA on synthetic updates')
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
