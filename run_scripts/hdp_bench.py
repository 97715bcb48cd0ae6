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
privacy preferences, one leaderboard per population and guarantee family.

    python run_scripts/hdp_bench.py --quick            # make bench-quick
    python run_scripts/hdp_bench.py                    # make bench
    python run_scripts/hdp_bench.py --preferences_csv=mine.csv --methods=robust_hdp,idp_sample

Two populations (`tff_hdp.bench.population`): cross_silo, paper 003's 20
clients of the 5,000 MNIST images, and cross_device, paper 001's non-IID
MNIST, one digit per client (the full MNIST's 2,000 clients at q = 0.05;
--quick: the 5,000 images' 200 clients at q = 0.2). The preferences are
paper 003's Dist1-Dist9 (for 20, 40 or 60 clients), mixtures for any
number (--mixtures=paper001, or a CSV with a fraction column; its clients
assigned by a draw from the public --assignment_seed, written out) or CSVs
of one row per client (a column epsilon, inf to opt out, optionally
batch_size), each on the populations it fits. Every registered method (and
files of yours that register one, --extra_methods) calibrates to each set
so that the rounds spend at most every client's epsilon_i (checked before
it runs) and runs once per seed; each client's spent epsilon comes from the
run's own ledger. A method that does not fit a population or its
preferences is refused, with its reason.

Writes to --output_dir: `leaderboard.md` (printed too), `leaderboard.json`
(every row and run, each client's spent and asked epsilon), `leaderboard.png`
(a row of panels per population, one per family),
`preferences/<population>/<name>.csv` (every client's preferences as run)
and `runs.jsonl` (one line per run as it ends: a rerun with the same flags
skips those). Noise and sampling come from a secret key unless
--mechanism_seed is given. Bad input is refused with one line and exit 2
before anything is written.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
# On a GPU this process and its workers (--jobs) share it: each takes memory
# as it needs it, not all of it (TensorFlow's default).
os.environ.setdefault('TF_FORCE_GPU_ALLOW_GROWTH', 'true')

# pylint: disable=g-import-not-at-top,wrong-import-position
import dataclasses
import json
import sys

from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import output_dirs
from tff_hdp.run_scripts import run_flags

POPULATIONS = ('cross_silo', 'cross_device')

_POPULATIONS = flags.DEFINE_list(
    'populations', None, 'Populations to run: cross_silo, cross_device '
    '(default both, or those your preferences fit).')
_CROSS_SILO_DATASET = flags.DEFINE_string(
    'cross_silo_dataset', None, 'The cross-silo clients\' images, split as '
    'paper 003\'s authors split them (default mnist5k).')
_CROSS_SILO_CLIENTS = flags.DEFINE_integer(
    'cross_silo_clients', None, 'Its n (default 20; Dist1-Dist9 hold 20, 40 '
    'or 60).')
_CROSS_DEVICE_DATASET = flags.DEFINE_string(
    'cross_device_dataset', None, 'The cross-device clients\' images, one '
    'digit per client as paper 001 splits them (default mnist, --quick '
    'mnist5k).')
_CROSS_DEVICE_CLIENTS = flags.DEFINE_integer(
    'cross_device_clients', None, 'Its n, a multiple of 10 (default 2000, '
    '--quick 200).')
_DATA_DIR = flags.DEFINE_string('data_dir', None,
                                'Where the datasets\' files are.')
_DISTRIBUTIONS = flags.DEFINE_list(
    'distributions', None, 'Paper 003\'s preference distributions (dist1 ... '
    'dist9), for populations of 20, 40 or 60 clients.')
_MIXTURES = flags.DEFINE_list(
    'mixtures', [], 'Built-in preference mixtures, for any population: '
    'paper001 (95% at epsilon 3.6, 5% opt out).')
_CSV = flags.DEFINE_list(
    'preferences_csv', [], 'CSV files of preferences: a column epsilon (> 0, '
    'inf to opt out), optionally batch_size; one row per client, or a '
    'column fraction for a mixture.')
_ASSIGNMENT_SEED = flags.DEFINE_integer(
    'assignment_seed', 0, 'The public seed of the draw that assigns a '
    'mixture\'s rows to clients.')
_METHODS = flags.DEFINE_list('methods', None,
                             'Registered methods to run (default: all).')
_EXTRA = flags.DEFINE_list(
    'extra_methods', [], 'Python files of yours that register methods '
    '(tff_hdp.bench.register).')
_SEEDS = flags.DEFINE_list('seeds', None,
                           'Public seeds (default 0,1,2; --quick: 0).')
_ROUNDS = flags.DEFINE_integer(
    'rounds', None, 'T, every method\'s rounds, in every population '
    '(default: each population\'s).')
_MODEL = flags.DEFINE_string(
    'model', None, 'A tff_hdp.models name, in every population (default: '
    'each population\'s).')
_DELTA = flags.DEFINE_float('delta', 1e-4, 'delta of every guarantee.')
_QUICK = flags.DEFINE_bool(
    'quick', False, 'One seed; cross_silo on Dist1, Dist5 and Dist9, '
    'cross_device on the 200 clients of the 5,000 images.')
_OUTPUT = flags.DEFINE_string('output_dir', 'results/hdp_bench',
                              'Where the leaderboard is written.')
_MECHANISM_SEED = run_flags.define_mechanism_seed_flag()
_ACCOUNTANT = run_flags.define_accountant_flag('every calibration and ledger')
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
  import tff_hdp.bench.methods  # pylint: disable=g-import-not-at-top,unused-import
  for path in paths:
    cli.check(os.path.isfile(path), f'--extra_methods: no such file {path}')
    registry.load_file(path)


def _populations():
  """The populations the flags name, with their overrides (not loaded)."""
  from tff_hdp.bench import population  # pylint: disable=g-import-not-at-top
  names = _POPULATIONS.value or list(POPULATIONS)
  cli.check_names(names, POPULATIONS, 'populations', 'population')
  cli.check(len(set(names)) == len(names),
            f'--populations names one twice: {",".join(names)}')
  overrides = {
      'cross_silo': (_CROSS_SILO_DATASET.value, _CROSS_SILO_CLIENTS.value),
      'cross_device': (_CROSS_DEVICE_DATASET.value,
                       _CROSS_DEVICE_CLIENTS.value)}
  out = []
  for name in names:
    p = population.get(name, quick=_QUICK.value)
    dataset, clients = overrides[name]
    cli.check(clients is None or clients >= 1,
              f'--{name}_clients must be >= 1, got {clients}')
    out.append(dataclasses.replace(
        p, dataset=dataset or p.dataset, num_clients=clients or p.num_clients,
        rounds=_ROUNDS.value or p.rounds, model=_MODEL.value or p.model))
  return out


def _flag_preferences():
  """(Dist names, mixtures, CSVs' preferences or mixtures, in order) the
  flags name, or None when they name none (each population's own then)."""
  from tff_hdp.bench import preferences  # pylint: disable=g-import-not-at-top
  if _DISTRIBUTIONS.value is None and not _MIXTURES.value and not _CSV.value:
    return None
  names = _DISTRIBUTIONS.value or []
  cli.check_names(names, preferences.DISTRIBUTIONS, 'distributions',
                  'distribution')
  try:
    return (names, [preferences.mixture(n) for n in _MIXTURES.value],
            [preferences.read_csv(path) for path in _CSV.value])
  except ValueError as e:
    raise cli.UsageError(str(e)) from None


def _preferences_of(p, names, mixtures, files):
  """The preferences among the flags' that fit population `p`: a mixture
  drawn for its clients, and one row per client if it has as many."""
  from tff_hdp.bench import preferences  # pylint: disable=g-import-not-at-top
  n = p.num_clients
  out = []
  if n in preferences.CLIENT_COUNTS:
    out += [preferences.distribution(d, n) for d in names]
  try:
    for found in list(mixtures) + list(files):
      if isinstance(found, preferences.Mixture):
        out.append(preferences.assign(found, n, _ASSIGNMENT_SEED.value))
      elif found.num_clients == n:
        out.append(found)
  except ValueError as e:
    raise cli.UsageError(f'{p.name}: {e}') from None
  return out


def _plan_preferences(populations):
  """[(population, its preferences)]: each population's own, or those of
  the flags that fit it; one line naming what fits nothing."""
  from tff_hdp.bench import preferences  # pylint: disable=g-import-not-at-top
  given = _flag_preferences()
  if given is None:
    for p in populations:
      cli.check(not p.distributions or
                p.num_clients in preferences.CLIENT_COUNTS,
                f'{p.name} has {p.num_clients} clients: Dist1-Dist9 hold '
                '20, 40 or 60; give --mixtures or --preferences_csv')
    given_by = {p.name: (p.distributions, [preferences.mixture(m)
                                           for m in p.mixtures], [])
                for p in populations}
  else:
    given_by = {p.name: given for p in populations}
  plan = [(p, _preferences_of(p, *given_by[p.name])) for p in populations]
  sizes = ', '.join(f'{p.name} {p.num_clients}' for p in populations)
  if given is not None:
    names, _, files = given
    for c in files:
      if isinstance(c, preferences.Mixture):
        continue
      cli.check(any(c.num_clients == p.num_clients for p in populations),
                f'{c.name}: {c.num_clients} rows of preferences (one per '
                f'client), and no population has {c.num_clients} clients '
                f'({sizes}); a fraction column makes it a mixture')
    cli.check(not names or any(p.num_clients in preferences.CLIENT_COUNTS
                               for p in populations),
              f'--distributions: Dist1-Dist9 hold 20, 40 or 60 clients, '
              f'and the populations have {sizes}')
    if _POPULATIONS.value is None:  # Only those the preferences fit.
      plan = [(p, prefs) for p, prefs in plan if prefs]
  for p, prefs in plan:
    cli.check(bool(prefs), f'no preferences fit {p.name} ({p.num_clients} '
              'clients): give --mixtures, a mixture CSV or one of its size')
    names = [x.name for x in prefs]
    cli.check(len(set(names)) == len(names), f'{p.name}: two preference '
              f'sets share a name: {", ".join(names)}')
  return plan


def _load(plan):
  """[(setting, its preferences)] of the planned populations, loaded."""
  from tff_hdp import datasets  # pylint: disable=g-import-not-at-top
  out = []
  for p, prefs in plan:
    try:
      data = p.load(_DATA_DIR.value)
    except datasets.DataFileError as e:
      raise cli.UsageError(str(e)) from None
    except ValueError as e:
      raise cli.UsageError(f'{p.name}, dataset {p.dataset}: {e}') from None
    out.append((p, p.setting(data, delta=_DELTA.value,
                             accountant=_ACCOUNTANT.value), prefs))
  return out


def _caption(p, seeds):
  text = (f'{p.words()} delta={_DELTA.value:g} '
          f'seeds={",".join(map(str, seeds))} accountant={_ACCOUNTANT.value}')
  if _MECHANISM_SEED.value is not None:
    text += (f' mechanism_seed={_MECHANISM_SEED.value}+seed: every '
             "epsilon is the mechanism's, NOT a guarantee for these outputs")
  return text


def _write_preferences(output_dir, p, prefs):
  """Every client's preferences as run, one CSV per set; prints where a
  mixture's draw went."""
  from tff_hdp.bench import preferences  # pylint: disable=g-import-not-at-top
  folder = os.path.join(output_dir, 'preferences', p.name)
  os.makedirs(folder, exist_ok=True)
  for x in prefs:
    path = os.path.join(folder, f'{x.name}.csv')
    preferences.to_csv(x, path)
    print(f'{p.name}: {preferences.describe(x)} ({x.origin}): '
          f'{os.path.relpath(path, output_dir)}', flush=True)


def _read_done(runs_path, wanted):
  from tff_hdp.bench import leaderboard  # pylint: disable=g-import-not-at-top
  if not os.path.exists(runs_path):
    return []
  with open(runs_path) as f:
    done = [leaderboard.RunResult.from_json(json.loads(line))
            for line in f if line.strip()]
  return [r for r in done
          if (r.population, r.method, r.preferences, r.seed) in wanted]


def _run_all(loaded, methods, seeds, output_dir):
  """Every population's runs (resumed from runs.jsonl): its results."""
  from tff_hdp import runtime  # pylint: disable=g-import-not-at-top
  from tff_hdp.bench import benchmark  # pylint: disable=g-import-not-at-top
  from tff_hdp.bench import parallel  # pylint: disable=g-import-not-at-top
  runs_path = os.path.join(output_dir, 'runs.jsonl')
  done = _read_done(runs_path, {
      (p.name, m.name, x.name, s) for p, _, prefs in loaded
      for m in methods for x in prefs for s in seeds})

  def save(result):
    with open(runs_path, 'a') as f:
      f.write(json.dumps(result.to_json()) + '\n')
    if _PROGRESS.value:
      accuracy = ('refused' if result.accuracy is None else
                  f'accuracy {result.accuracy:.2f}%')
      print(f'{result.population} {result.method} {result.preferences} '
            f'seed {result.seed}: {accuracy} ({result.seconds:.0f} s)',
            flush=True)

  jobs = _JOBS.value or parallel.available_cores()
  # The methods run on the direct backend (a method of the user's that
  # calls TFF starts a worker then).
  with runtime.on_demand_context():
    # Every population at once: with jobs > 1 they share the workers.
    results = benchmark.run_populations(
        [(setting, prefs) for _, setting, prefs in loaded], methods, seeds,
        mechanism_seed=_MECHANISM_SEED.value,
        done=[[r for r in done if r.population == p.name]
              for p, _, _ in loaded],
        on_result=save, jobs=jobs,
        method_files=[os.path.abspath(x) for x in _EXTRA.value])
  return {p.name: r for (p, _, _), r in zip(loaded, results)}


def _write_leaderboards(loaded, methods, seeds, results, output_dir):
  """leaderboard.md (printed), .json and .png."""
  from tff_hdp.bench import leaderboard  # pylint: disable=g-import-not-at-top
  by_name = {m.name: m for m in methods}
  parts, panels, record = [], [], {}
  for p, setting, prefs in loaded:
    boards = leaderboard.leaderboards(results[p.name], by_name)
    names = [x.name for x in prefs]
    caption = _caption(p, seeds)
    parts.append(f'## {p.name}\n\n```\n{caption}\n```\n\n' +
                 leaderboard.markdown(boards, names))
    panels.append(leaderboard.Panel(p.name, boards, tuple(names),
                                    100.0 / setting.data.num_classes))
    record[p.name] = dict(
        caption=caption, population=dataclasses.asdict(p),
        distributions=names,
        preferences=[dataclasses.asdict(x) for x in prefs],
        **leaderboard.to_json(boards, results[p.name]))
  text = 'HDP-Bench\n\n' + '\n'.join(parts)
  print('\n' + text)
  with open(os.path.join(output_dir, 'leaderboard.md'), 'w') as f:
    f.write(text)
  with open(os.path.join(output_dir, 'leaderboard.json'), 'w') as f:
    json.dump({'argv': sys.argv, 'seeds': seeds,
               'assignment_seed': _ASSIGNMENT_SEED.value,
               'mechanism_seed': _MECHANISM_SEED.value,
               'populations': record}, f, indent=1, default=str)
  leaderboard.plot(panels, os.path.join(output_dir, 'leaderboard.png'),
                   title='HDP-Bench' + (' --quick' if _QUICK.value else ''))
  print(f'wrote {os.path.join(output_dir, "leaderboard.md")}, '
        'leaderboard.json, leaderboard.png')


def main(argv):
  cli.check_no_arguments(argv)
  output_dirs.check_output_dir(_OUTPUT.value)
  cli.check(_ROUNDS.value is None or _ROUNDS.value >= 1,
            f'--rounds must be >= 1, got {_ROUNDS.value}')
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
  loaded = _load(_plan_preferences(_populations()))

  # Everything was checked: only now is anything written.
  output_dir = _OUTPUT.value
  output_dirs.claim_output_dir(output_dir)
  run_flags.mechanism_notice(_MECHANISM_SEED.value)
  for p, _, prefs in loaded:
    _write_preferences(output_dir, p, prefs)
  results = _run_all(loaded, methods, seeds, output_dir)
  _write_leaderboards(loaded, methods, seeds, results, output_dir)


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
