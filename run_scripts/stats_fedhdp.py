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
"""Paper 001's Table 2 over seeds, from kept runs: every mean, spread, gap
and gain the full-scale page states.

    python run_scripts/stats_fedhdp.py --results_dir=docs/runs/paper_scale

Reads every `results.json` under --results_dir (recursively) and prints, as
Markdown, each Table 2 row's Acc_g and mean clip norm per seed, their mean
and spread, the paper's cell and the distance from it, then FedHDP's gain
over DP-FedAvg in each block over the seeds both ran
(`tff_hdp.fedhdp.seed_stats`), and, with --noise_off_dirs, what clipping
and the noise each cost a row that also ran with the noise off.

With --ablation_dirs (folders of runs of a Table 2 row with some flags
changed, e.g. docs/runs/paper_scale_fixed_clip), it then prints, after a
blank line, a summary of Table 2 (the private runs' distance from the
paper's cells, the means over the seeds both FedHDP and DP-FedAvg ran, the
paper's own cost of privacy), the setting every Table 2 run shares, and per
folder each changed setting over its seeds: Acc_g, Acc_l and S^t beside the
Table 2 row at the same seeds and the paper's cell, then what the noise
costs wherever a setting also ran with the noise off.

With --ablation_dirs and --row_analyses it prints instead the per-row
analyses of docs/results/paper001_rows.md (`seed_stats.markdown_rows`):

    python run_scripts/stats_fedhdp.py --results_dir=docs/runs/paper_scale \
        --ablation_dirs=docs/runs/paper_scale_noise_off,... --row_analyses

docs/results/paper001.md holds this output for docs/runs/paper_scale, its
noise-off runs and its ablations, docs/results/paper001_rows.md the per-row
analyses (the commands are on the pages); tests/fedhdp/test_seed_stats.py
and tests/test_prose_numbers.py check that the pages and the command
agree.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
from tff_hdp.fedhdp import paper_tables
from tff_hdp.fedhdp import seed_stats

_RESULTS_DIR = flags.DEFINE_string(
    'results_dir', 'docs/runs/paper_scale',
    'Directory searched recursively for results.json.')
_NOISE_OFF_DIRS = flags.DEFINE_list(
    'noise_off_dirs', [],
    'Directories of the same rows run with the noise off (z_eff = 0), e.g. '
    'docs/runs/paper_scale_noise_off: then what clipping and the noise '
    'each cost a row is printed too.')
_ABLATION_DIRS = flags.DEFINE_list(
    'ablation_dirs', [],
    'Directories of ablations: runs of a Table 2 row with some of its flags '
    'changed, one run a results.json (e.g. docs/runs/paper_scale_fixed_clip). '
    'Then a summary of Table 2 and, per directory, each setting over its '
    'seeds beside its Table 2 row are printed too, after a blank line.')
_ROW_ANALYSES = flags.DEFINE_boolean(
    'row_analyses', False,
    'With --ablation_dirs: print, instead of the tables, the per-row '
    'analyses of docs/results/paper001_rows.md: the Non-Private row '
    'clipped, FedHDP\'s gain at a changed setting, the personal models '
    'against the paper\'s cells, what the local test sets\' size gives '
    'the variances, the personal models on every held-out image and their '
    'runs\' global model over the rounds, and the opted-out clients\' '
    'standard errors.')


def main(argv):
  cli.check_no_arguments(argv)
  cli.check(os.path.isdir(_RESULTS_DIR.value),
            f'--results_dir={_RESULTS_DIR.value} is not a directory')
  for name, directories in (('noise_off_dirs', _NOISE_OFF_DIRS.value),
                            ('ablation_dirs', _ABLATION_DIRS.value)):
    for directory in directories:
      cli.check(os.path.isdir(directory),
                f'--{name}: {directory} is not a directory')
  cli.check(_ABLATION_DIRS.value or not _ROW_ANALYSES.value,
            '--row_analyses needs --ablation_dirs')
  try:
    runs = paper_tables.load_runs(_RESULTS_DIR.value)
    noise_off = [run for directory in _NOISE_OFF_DIRS.value
                 for run in paper_tables.load_runs(directory)]
    text = seed_stats.markdown(runs, noise_off)
    if _ABLATION_DIRS.value:
      kept = [k for directory in _ABLATION_DIRS.value
              for k in seed_stats.load_kept(directory)]
      table_runs = seed_stats.load_kept(_RESULTS_DIR.value)
      if _ROW_ANALYSES.value:
        text = seed_stats.markdown_rows(table_runs, kept)
      else:
        text += '\n\n' + seed_stats.markdown_ablations(table_runs, kept)
  except ValueError as e:
    raise cli.UsageError(str(e)) from None
  print(text)


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
