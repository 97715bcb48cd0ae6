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
"""Runs paper 004's Figures 2a, 2b and 3 and draws them.

    python run_scripts/sweep_udp.py --dataset=cifar10 --data_dir=DIR
    python run_scripts/sweep_udp.py --list
    python run_scripts/sweep_udp.py --plot_only

Each figure is UDP-Alg's accuracy against epsilon, one curve per (S, sigma)
pair, with the Noiseless line (Figure 2a: CIFAR-10, 2b: FEMNIST, 3: CelebA;
`--dataset=mnist5k`, the default, and `--dataset=digits` draw the same
figure offline). sigma is the paper's noise stddev on grad phi,
z max_w S / (q W); a curve is one run of
`run_udp.py --algorithm=udp --clip=S --noise_stddev=sigma`, whose accuracy
and epsilon are recorded at every evaluation (epsilon grows with the rounds).
The grid of each dataset covers the pairs the paper quotes (`GRIDS`).

Runs go to `<results_dir>/sweep_udp/<dataset>/S<S>_sigma<sigma>/` and
`.../noiseless/`; a run whose results.json exists is skipped, an interrupted
one resumes from its checkpoint, `--parallel=k` runs k at a time, and flags
after `--` go to every run (e.g. `-- --rounds=50`). The figure
(`figures/accuracy_vs_epsilon.png`) and `table.md`, which puts the paper's
quoted numbers (`tff_hdp/udp/reference/paper004_quoted.csv`, `tff_hdp.udp.paper_tables`)
beside ours, are drawn from whatever runs have finished. A quoted number that names (S, sigma)
is compared with that curve at the largest evaluated epsilon not above the
quoted one (or its last point when the quote gives no epsilon); one that does
not is compared with the best curve at that epsilon.
"""

import os
import sys

# pylint: disable=g-import-not-at-top,wrong-import-position
import json
import math
from typing import Optional, Sequence

from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import subprocess_jobs
from tff_hdp.udp import paper_tables

# Per dataset, the (S, sigma) curves: the paper's quoted pairs and their
# neighbours on the grid of its Section 4 (S in {0.05, 0.1, 0.2}).
GRIDS = {
    'cifar10': [(0.1, 0.05), (0.1, 0.1), (0.2, 0.05), (0.2, 0.1)],
    'femnist': [(0.05, 0.0015), (0.05, 0.003), (0.1, 0.0015), (0.1, 0.003)],
    'celeba': [(0.05, 0.0015), (0.05, 0.003), (0.1, 0.0015), (0.1, 0.003)],
    # Offline (real MNIST images): sigma = 0.0045 at S = 0.1 is the
    # default run's z = 1.55; the others double sigma or S.
    'mnist5k': [(0.1, 0.0045), (0.1, 0.009), (0.2, 0.0045), (0.2, 0.009)],
    'digits': [(0.1, 0.01), (0.1, 0.02), (0.2, 0.01), (0.2, 0.02)],
}
FIGURE = {'cifar10': 'Figure 2a', 'femnist': 'Figure 2b',
          'celeba': 'Figure 3', 'mnist5k': 'offline, as Figures 2-3',
          'digits': 'offline, as Figures 2-3'}

_DATASET = flags.DEFINE_enum('dataset', 'mnist5k', sorted(GRIDS), 'Dataset.')
_DATA_DIR = flags.DEFINE_string('data_dir', None,
                                'Directory of the dataset file.')
_RESULTS_DIR = flags.DEFINE_string('results_dir', 'results',
                                   'Runs go to <results_dir>/sweep_udp/.')
_PARALLEL = flags.DEFINE_integer('parallel', 1, 'Runs at a time.')
_LIST = flags.DEFINE_bool('list', False, 'Print the runs and stop.')
_PLOT_ONLY = flags.DEFINE_bool('plot_only', False,
                               'Draw from finished runs; run nothing.')


def run_args(pair: Optional[tuple[float, float]]) -> list[str]:
  if pair is None:
    return [f'--algorithm={paper_tables.ceiling()}']
  return [f'--algorithm={paper_tables.proposed()}', f'--clip={pair[0]:g}',
          f'--noise_stddev={pair[1]:g}']


def load_runs(sweep_dir: str) -> dict[str, dict]:
  """{run name: its record} of the finished runs."""
  out = {}
  for pair in GRIDS[_DATASET.value] + [None]:
    path = os.path.join(sweep_dir, paper_tables.run_name(pair), 'results.json')
    if os.path.exists(path):
      with open(path) as f:
        out[paper_tables.run_name(pair)] = json.load(f)['runs'][0]
  return out


def draw(runs: dict[str, dict], figure_dir: str, dataset: str) -> None:
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, ax = plt.subplots(figsize=(5, 3.6))
  for pair in GRIDS[dataset]:
    record = runs.get(paper_tables.run_name(pair))
    if record is not None:
      eps, acc = paper_tables.curve(record)
      ax.plot(eps, acc, marker='o', markersize=3,
              label=f'S = {pair[0]:g}, σ = {pair[1]:g}')
  ceiling = runs.get(paper_tables.run_name(None))
  if ceiling is not None:
    ax.axhline(ceiling['metrics']['accuracy_mean'], color='black',
               linestyle='--', label='Noiseless')
  ax.set_xlabel('ε (δ = 1e-5)')
  ax.set_ylabel('accuracy of the generated models (%)')
  ax.set_title(f'UDP-Alg, {dataset} (paper 004, {FIGURE[dataset]})')
  ax.legend(fontsize=7)
  fig.tight_layout()
  os.makedirs(figure_dir, exist_ok=True)
  fig.savefig(os.path.join(figure_dir, 'accuracy_vs_epsilon.png'), dpi=150)
  plt.close(fig)


def main(argv: Sequence[str]):
  extra = list(argv[1:])
  dataset = _DATASET.value
  cli.check(_PARALLEL.value >= 1,
            f'--parallel must be >= 1, got {_PARALLEL.value}')
  sweep_dir = os.path.join(_RESULTS_DIR.value, 'sweep_udp', dataset)
  pairs = GRIDS[dataset] + [None]
  if _LIST.value:
    for pair in pairs:
      print(paper_tables.run_name(pair), ' '.join(run_args(pair) + extra))
    return
  if not _PLOT_ONLY.value:
    script = os.path.join(cli.REPO_ROOT, 'run_scripts', 'run_udp.py')
    jobs = []
    threads = subprocess_jobs.threads_per_job(_PARALLEL.value)
    for pair in pairs:
      out = os.path.join(sweep_dir, paper_tables.run_name(pair))
      if os.path.exists(os.path.join(out, 'results.json')):
        continue
      command = [sys.executable, script, f'--dataset={dataset}',
                 *([f'--data_dir={_DATA_DIR.value}'] if _DATA_DIR.value
                   else []), *run_args(pair), '--noprogress',
                 f'--output_dir={out}', *extra]
      jobs.append((paper_tables.run_name(pair),
                   lambda c=command, o=out: subprocess_jobs.run_logged(
                       c, o, threads)))
    failed = subprocess_jobs.run_jobs(jobs, _PARALLEL.value)
    cli.check(not failed, f'{len(failed)} runs failed; see their log.txt')
  runs = load_runs(sweep_dir)
  cli.check(bool(runs), f'no finished run under {sweep_dir}')
  draw(runs, os.path.join(sweep_dir, 'figures'), dataset)
  header = ['quantity', 'ε', 'S / σ', 'paper 004', 'ours']
  lines = ['| ' + ' | '.join(header) + ' |', '|---' * len(header) + '|']
  lines += ['| ' + ' | '.join(r) + ' |' for r in paper_tables.comparison(runs, dataset)]
  for name, record in sorted(runs.items()):
    eps, acc = paper_tables.curve(record)
    last = (f'ε = {eps[-1]:.2f}' if eps and not math.isnan(eps[-1])
            else 'no ε')
    print(f'{name}: accuracy {record["metrics"]["accuracy_mean"]:.2f} '
          f'({last})')
  table = '\n'.join(lines)
  print(table)
  with open(os.path.join(sweep_dir, 'table.md'), 'w') as f:
    f.write(table + '\n')
  figure = os.path.join(sweep_dir, 'figures', 'accuracy_vs_epsilon.png')
  print(f'wrote {figure}')


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
