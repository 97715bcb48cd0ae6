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
"""Plots the training curves and r sweeps of our runs of paper 001.

    python run_scripts/plots_fedhdp.py --results_dir=results \
        --output_dir=figures

Reads every `results.json` under --results_dir (recursively) and writes, per
dataset, into --output_dir:
  accuracy_<dataset>.png   server test accuracy of the global model over
                           rounds, one line per run (the four algorithms of a
                           table and every r and lambda run);
  r_sweep_<dataset>.png    FedHDP's Acc_g and Delta_l against r, one line per
                           (lambda_p, lambda_np), mean over seeds, with paper
                           001's Tables 8-11 values for the same lambda dashed;
                           only for datasets with FedHDP runs;
  clip_norm_<dataset>.png  the adaptive clip norm S^t over rounds, one line
                           per run.
PNG files carry no software version or date, so identical results give
byte-identical figures. Bad input is refused with one line and exit status 2
before anything is written.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
import re
from typing import Sequence

from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import output_dirs
from tff_hdp.fedhdp import paper_tables
from tff_hdp.fedhdp import table_rows

_RESULTS_DIR = flags.DEFINE_string(
    'results_dir', None, 'Directory searched recursively for results.json.')
_OUTPUT_DIR = flags.DEFINE_string('output_dir', None,
                                  'Where the PNG files are written.')

# PNG text chunks: matplotlib writes its version as 'Software' unless told
# not to; no other chunk varies between runs.
PNG_METADATA = {'Software': None}
_LINTHRESH = 1e-3  # r = 0 and 0.001 both appear in Tables 8-11.


def _label(record) -> str:
  name, hyper = table_rows.run_row(record)[:2]
  seed = record['config'].get('seed')
  return f'{name} {hyper}' + (f' seed={seed}' if seed is not None else '')


def _file_name(kind: str, dataset: str) -> str:
  return f"{kind}_{re.sub(r'[^A-Za-z0-9_.-]', '_', dataset) or 'unnamed'}.png"


def _series(history, key):
  points = [(e['round'], e[key]) for e in history
            if key in e and e[key] is not None]
  return [p[0] for p in points], [p[1] for p in points]


def _save(fig, path: str) -> None:
  fig.tight_layout()
  fig.savefig(path, format='png', dpi=100, metadata=PNG_METADATA)


def plot_over_rounds(plt, runs: Sequence[paper_tables.Run], key: str,
                     scale: float, ylabel: str, title: str, path: str) -> bool:
  """One line per run of history[key] x scale against the round."""
  fig, ax = plt.subplots(figsize=(8, 5))
  drawn = False
  for run in runs:
    x, y = _series(run.record.get('history', []), key)
    if x:
      ax.plot(x, [v * scale for v in y], label=_label(run.record),
              linewidth=1.2, marker='.', markersize=4)
      drawn = True
  if drawn:
    ax.set_xlabel('round')
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6, loc='best')
    _save(fig, path)
  plt.close(fig)
  return drawn


def plot_r_sweep(plt, runs: Sequence[paper_tables.Run], reference,
                 dataset: str, path: str) -> bool:
  """Acc_g and Delta_l of FedHDP runs against r, one line per lambda pair."""
  by_lambda = {}
  for run in runs:
    config = run.record['config']
    r = paper_tables.recorded_ratio(config)
    if r is None:
      continue
    key = (float(config['lambda_p']), float(config['lambda_np']))
    by_lambda.setdefault(key, {}).setdefault(r, []).append(
        run.record['metrics'])
  if not by_lambda:
    return False
  fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
  for i, ((lambda_p, lambda_np), points) in enumerate(sorted(
      by_lambda.items())):
    color = f'C{i % 10}'
    label = rf'$\lambda_p$={lambda_p:g}, $\lambda_{{np}}$={lambda_np:g}'
    for ax, metric in zip(axes, ('acc_g', 'delta_l')):
      xs, ys = [], []
      for r in sorted(points):
        values = [m[metric] for m in points[r] if m.get(metric) is not None]
        if values:
          xs.append(r)
          ys.append(sum(values) / len(values))
      if xs:
        ax.plot(xs, ys, 'o-', color=color, label=f'ours {label}')
      paper = sorted(
          (row.r, row.values[metric]) for row in reference
          if row.table in (8, 9, 10, 11) and row.dataset == dataset and
          row.algorithm == 'fedhdp' and row.lambda_p == lambda_p and
          row.lambda_np == lambda_np and row.values[metric] is not None)
      if paper:
        ax.plot([p[0] for p in paper], [p[1] for p in paper], 's--',
                color=color, markerfacecolor='none', alpha=0.7,
                label=f'paper {label}')
  for ax, ylabel in zip(axes, ('Acc_g %', 'Delta_l % (non-private - private)')):
    ax.set_xscale('symlog', linthresh=_LINTHRESH)
    ax.set_xlabel('r')
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6, loc='best')
  fig.suptitle(f'{dataset}: FedHDP against r')
  _save(fig, path)
  plt.close(fig)
  return True


def main(argv):
  cli.check_no_arguments(argv)
  results_dir = _RESULTS_DIR.value
  output_dirs.check_results_dir(results_dir)
  cli.check(bool(_OUTPUT_DIR.value), '--output_dir is required: where the '
            'PNG files go')
  runs = output_dirs.load_runs(results_dir, paper_tables.load_runs)
  reference = (paper_tables.load_reference()
               if os.path.isfile(paper_tables.REFERENCE_CSV) else ())

  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top

  output_dir = _OUTPUT_DIR.value
  os.makedirs(output_dir, exist_ok=True)
  groups = {}
  for run in sorted(runs, key=paper_tables.run_sort_key):
    groups.setdefault(paper_tables.record_dataset(run.record), []).append(run)
  written = []
  for dataset, group in groups.items():
    path = os.path.join(output_dir, _file_name('accuracy', dataset))
    if plot_over_rounds(plt, group, 'accuracy', 100.0, 'test accuracy %',
                        f'{dataset}: global model on the server test set',
                        path):
      written.append(path)
    path = os.path.join(output_dir, _file_name('r_sweep', dataset))
    if plot_r_sweep(plt, group, reference, dataset, path):
      written.append(path)
    path = os.path.join(output_dir, _file_name('clip_norm', dataset))
    if plot_over_rounds(plt, group, 'clip_norm', 1.0, 'clip norm $S^t$',
                        f'{dataset}: adaptive clip norm', path):
      written.append(path)
  for path in written:
    print(f'wrote {path}')


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
