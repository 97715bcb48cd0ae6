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
"""Runs paper 003's Figures 2-5 and draws them.

    python run_scripts/sweep_robust_hdp.py --figures=2 --distributions=dist1,dist3,dist4
    python run_scripts/sweep_robust_hdp.py --dataset=mnist --data_dir=~/.keras/datasets
    python run_scripts/sweep_robust_hdp.py --figures=3,4 --list
    python run_scripts/sweep_robust_hdp.py --plot_only --results_dir=results

Every run is one `run_robust_hdp.py --algorithm=all` (all rules on the same
clients, batch sizes, initial model and DP-SGD noise; `--algorithms` names
fewer), written to
`<results_dir>/sweep_robust_hdp/<dataset>/<distribution>_n<clients>_seed<s>/`.
With `--per_rule` each rule of a run is a run of its own, in
`<distribution>_n<clients>_seed<s>_<rule>/`: a sweep of long runs (the
papers' scale: 30 to 80 minutes a rule) then resumes rule by rule, across
machines and sessions (copy a finished `results.json` in, and its rule is
skipped); the figures merge the folders of one run.
The figures need:

  2  accuracy per algorithm and distribution, mean +- std over --seeds
     (n = 20, --distributions);
  3  accuracy over rounds (Dist6, n = 20, the first seed);
  4  p sigma^_i^2 of Robust-HDP against the true sigma_i^2 of eqs. (7), (3)
     per client, clients sorted by epsilon (Dist8, n = 20, the first seed);
     sigma^_i^2 is averaged over the run's rounds and scaled by p, because
     eq. (7) is the variance of the whole update (`figure4_data`);
  5  left: accuracy against the privacy level, one point per distribution at
     its mean target epsilon (the runs of Figure 2); right: accuracy against
     n = 20, 40, 60 at Dist6 (paper 003 leaves the left panel's x-axis
     unstated; this is our reading). minimum epsilon is left out, as in the
     paper.

Figure 2's numbers are also printed and written to `figure2.md` beside the
figures' folder (mean +- std per rule and distribution, and whether Robust-HDP
is at least every private baseline and within 2 points of the Oracle), then
per run each rule's mean, lowest and highest accuracy over its last 10
evaluations: a cell is the last round's alone.

Every run draws its mechanism's key (noise, batches) in secret;
`--reproducible` gives each run `--mechanism_seed=<its --seed>` instead, so
the sweep can be regenerated cell for cell, and the claim lines then say
that epsilon is not a guarantee for those outputs (`make demo` does this).
A run whose `results.json` exists is skipped; an interrupted one resumes from
its checkpoint. `--parallel=k` runs k at a time; `--runs_only` runs and
draws nothing, for a sweep whose runs are started by several calls (`make
demo` runs seeds 0 and 1 as a process each and seed 2 as one a rule,
`--per_rule`, then draws with `--plot_only`). Flags after `--` go to every
run (e.g. `-- --rounds=30 --model=fc`). The figures are PNGs in
`<results_dir>/sweep_robust_hdp/<dataset>/figures/`, drawn from whatever runs
have finished.
"""

import os
import sys

# pylint: disable=g-import-not-at-top,wrong-import-position
import functools
import json
from typing import NamedTuple, Sequence

from absl import app
from absl import flags
import numpy as np

from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import subprocess_jobs
from tff_hdp import claims
from tff_hdp.robust_hdp import privacy_preferences
from tff_hdp.robust_hdp import rule_registry
from tff_hdp.robust_hdp import table_rows
import tff_hdp.robust_hdp.rules  # pylint: disable=unused-import  # Registered.

RUN_ROBUST_HDP = os.path.join(cli.REPO_ROOT, 'run_scripts',
                              'run_robust_hdp.py')
FIGURES = (2, 3, 4, 5)
DISTRIBUTIONS = tuple(f'dist{i}' for i in range(1, 10))
PNG_METADATA = {'Software': None}

_FIGURES = flags.DEFINE_list('figures', ['2', '3', '4', '5'],
                             'Which of Figures 2, 3, 4, 5 to run and draw.')
_DATASET = flags.DEFINE_string('dataset', 'mnist5k',
                               'Passed to run_robust_hdp.py --dataset.')
_DATA_DIR = flags.DEFINE_string('data_dir', None,
                                'Passed to run_robust_hdp.py --data_dir.')
_DISTRIBUTIONS = flags.DEFINE_list('distributions', list(DISTRIBUTIONS),
                                   'Figures 2 and 5 (left): dist1 ... dist9.')
_SEEDS = flags.DEFINE_list('seeds', ['0', '1', '2'], 'Figure 2: seeds.')
_CLIENT_COUNTS = flags.DEFINE_list('client_counts', ['20', '40', '60'],
                                   'Figure 5 (right): n.')
_RESULTS_DIR = flags.DEFINE_string('results_dir', 'results',
                                   'Root of the results tree.')
_PARALLEL = flags.DEFINE_integer('parallel', 1, 'Runs at a time.')
_ALGORITHMS = flags.DEFINE_list(
    'algorithms', ['all'], 'The rules of every run (run_robust_hdp.py '
    '--algorithm): all, or registered rule names.')
_PER_RULE = flags.DEFINE_bool(
    'per_rule', False, 'Run each rule of a run on its own, in a folder of its '
    'own (<run>_<rule>), each skipped once finished: long sweeps resume rule '
    'by rule.')
_REPRODUCIBLE = flags.DEFINE_bool(
    'reproducible', False,
    'Give each run --mechanism_seed=<its --seed>, so that its noise and '
    'sampling can be regenerated from the published seed (what make demo '
    'does to reproduce the README cell for cell): epsilon is then the '
    'mechanism\'s, not a guarantee, and the claim lines say so. Default: '
    'every run draws a secret key.')
_LIST = flags.DEFINE_bool('list', False, 'Print the runs and stop.')
_PLOT_ONLY = flags.DEFINE_bool('plot_only', False,
                               'Draw the figures from finished runs only.')
_RUNS_ONLY = flags.DEFINE_bool(
    'runs_only', False, 'Run the missing runs and stop, drawing nothing: a '
    'later call draws the figures and the table from every finished run '
    '(make demo runs each seed so, beside its other runs).')


class Run(NamedTuple):
  distribution: str
  num_clients: int
  seed: int

  @property
  def name(self) -> str:
    return f'{self.distribution}_n{self.num_clients}_seed{self.seed}'

  def run_flags(self, reproducible: bool = False) -> list[str]:
    """The run's flags; with `reproducible`, its mechanism's seed is its
    public seed (distinct runs, distinct noise)."""
    return [f'--privacy_distribution={self.distribution}',
            f'--num_clients={self.num_clients}', f'--seed={self.seed}'] + (
                [f'--mechanism_seed={self.seed}'] if reproducible else [])


def runs_for(figures: Sequence[int], distributions: Sequence[str],
             seeds: Sequence[int], client_counts: Sequence[int]) -> list[Run]:
  """The runs the figures need, each once, in a stable order."""
  runs = []
  if 2 in figures or 5 in figures:
    runs += [Run(d, 20, s) for d in distributions for s in seeds]
  if 3 in figures:
    runs.append(Run('dist6', 20, seeds[0]))
  if 4 in figures:
    runs.append(Run('dist8', 20, seeds[0]))
  if 5 in figures:
    runs += [Run('dist6', n, seeds[0]) for n in client_counts]
  return list(dict.fromkeys(runs))


def run_one(run: Run, output_dir: str, extra: Sequence[str],
            algorithms: Sequence[str] = ('all',)) -> int:
  """One run of `algorithms` to completion (resuming if interrupted);
  returns its rc."""
  command = [sys.executable, RUN_ROBUST_HDP,
             f'--algorithm={",".join(algorithms)}',
             *run.run_flags(_REPRODUCIBLE.value),
             f'--dataset={_DATASET.value}', f'--output_dir={output_dir}',
             '--noprogress']
  if _DATA_DIR.value:
    command.append(f'--data_dir={_DATA_DIR.value}')
  return subprocess_jobs.run_logged(command + list(extra), output_dir,
                        subprocess_jobs.threads_per_job(_PARALLEL.value))


def load_runs(sweep_dir: str) -> dict[Run, dict[str, dict]]:
  """{Run: {algorithm: record}} of every finished run under `sweep_dir`.

  Directories holding the same (distribution, n, seed) are merged, rule by
  rule, so the rules of one run may be run in parallel into separate
  directories (`run_robust_hdp.py --algorithm=<some rules>`); a rule in
  both keeps the later directory's record (in name order).
  """
  out = {}
  if not os.path.isdir(sweep_dir):
    return out
  for name in sorted(os.listdir(sweep_dir)):
    path = os.path.join(sweep_dir, name, 'results.json')
    if not os.path.isfile(path):
      continue
    with open(path) as f:
      records = json.load(f)['runs']
    c = records[0]['config']
    run = Run(c['distribution'], len(c['epsilons']), c['seed'])
    out.setdefault(run, {}).update(
        {r['config']['algorithm']: r for r in records})
  return out


def _accuracy(records, algorithm):
  return records[algorithm]['metrics']['accuracy']


def figure2_data(runs, distributions, seeds):
  """{algorithm: (means, stds)} over `distributions` of every rule run;
  NaN where missing, and a std of NaN over one seed (no spread to show)."""
  data = {}
  run_rules = {a for records in runs.values() for a in records}
  for algorithm in [a for a in rule_registry.names() if a in run_rules]:
    means, stds = [], []
    for d in distributions:
      values = [_accuracy(runs[Run(d, 20, s)], algorithm) for s in seeds
                if algorithm in runs.get(Run(d, 20, s), {})]
      means.append(np.mean(values) if values else np.nan)
      stds.append(np.std(values) if len(values) > 1 else np.nan)
    data[algorithm] = (means, stds)
  return data


def figure2_table(runs, distributions, seeds) -> str:
  """Figure 2 as a Markdown table (mean +- std over the seeds found, per
  rule and distribution; a cell over fewer seeds than its column says how
  many), then each distribution's claim line (`tff_hdp.claims.robust_hdp`
  on the means, with `claims.mechanism_caveat` when a run's mechanism seed
  was published); rules not run are left out."""
  data = figure2_data(runs, distributions, seeds)
  found = {d: [s for s in seeds if Run(d, 20, s) in runs]
           for d in distributions}
  rules = [a for a in data if not np.all(np.isnan(data[a][0]))]
  header = ['rule'] + [f'{d} ({len(found[d])} seeds)' for d in distributions]
  lines = ['| ' + ' | '.join(header) + ' |', '|---' * len(header) + '|']
  for a in rules:
    means, stds = data[a]
    cells = []
    for d, m, sd in zip(distributions, means, stds):
      count = sum(a in runs[Run(d, 20, seed)] for seed in found[d])
      cells.append('-' if np.isnan(m) else f'{m:.1f}' + (
          '' if np.isnan(sd) else f' ± {sd:.1f}') + (
          f' ({count} seed{"s" * (count > 1)})' if count < len(found[d])
          else ''))
    lines.append(f'| {_label(a)} | ' + ' | '.join(cells)
                 + ' |')
  lines.append('')
  for i, d in enumerate(distributions):
    means = {_label(a): data[a][0][i] for a in rules
             if not np.isnan(data[a][0][i])}
    records = [r for s in found[d] for r in runs[Run(d, 20, s)].values()]
    if means:
      lines.append(f'- {d}: {claims.robust_hdp(means, table_rows.roles())}'
                   f'{claims.mechanism_caveat(records)}')
  return '\n'.join(lines)


LATE_EVALUATIONS = 10


def late_evaluations(runs, distributions, seeds,
                     last: int = LATE_EVALUATIONS) -> str:
  """Per run of Figure 2, each rule's mean local test accuracy over its
  last `last` evaluations (all of them if it has fewer), with their lowest
  and highest: how far a cell, the accuracy of the last round alone, could
  have landed elsewhere. A rule evaluated at other rounds than the run's
  first rule says which."""
  lines = []
  for d in distributions:
    for s in seeds:
      records = runs.get(Run(d, 20, s), {})
      cells, span, count = [], None, None
      for a in [a for a in rule_registry.names() if a in records]:
        points = [(h['round'], h['accuracy'])
                  for h in records[a]['history']
                  if h.get('accuracy') is not None][-last:]
        if not points:
          continue
        values = [v for _, v in points]
        own = (points[0][0], points[-1][0])
        span, count = span or own, count or len(points)
        cells.append(f'{_label(a)} {np.mean(values):.1f} '
                     f'({min(values):.1f} to {max(values):.1f})' + (
                         '' if own == span else
                         f' [rounds {own[0]} to {own[1]}]'))
      if cells:
        lines.append(f'- {d}, seed {s}, mean (lowest to highest) of the '
                     f'last {count} evaluations (rounds {span[0]} to '
                     f'{span[1]}): ' + '; '.join(cells))
  return '\n'.join(lines)


def figure4_data(record):
  """(epsilons, true sigma_i^2, p x mean sigma^_i^2) of a Robust-HDP run's
  clients, sorted by epsilon.

  sigma_i^2 of eq. (7) is the variance of the whole update (summed over its
  p coordinates); sigma^_i^2 = ||S_{:,i}||^2 / p is per coordinate, so the
  estimate is scaled by p to compare like with like (the weights, being
  normalised, do not depend on the scale).
  """
  eps = np.array([c['target_epsilon'] for c in record['clients']])
  true = np.array([c['true_sigma2'] for c in record['clients']])
  estimates = np.array([h['sigma_hat2'] for h in record['history']])
  estimates = estimates.mean(axis=0) * record['model_parameters']
  order = np.argsort(eps, kind='stable')
  return eps[order], true[order], estimates[order]


def figure4_summary(record) -> str:
  """One line: how close p sigma^_i^2 is to sigma_i^2 over the clients."""
  _, true, estimate = figure4_data(record)
  ratio = estimate / true
  ranks = [np.argsort(np.argsort(v, kind='stable')) for v in (true, estimate)]
  rho = float(np.corrcoef(*ranks)[0, 1])
  return (f'figure 4 ({record["config"]["distribution"]}, seed '
          f'{record["config"]["seed"]}, {len(record["history"])} rounds): '
          f'p sigma^_i^2 / sigma_i^2 from {ratio.min():.3f} to '
          f'{ratio.max():.3f} (mean {ratio.mean():.3f}) over {len(true)} '
          f'clients; rank correlation {rho:.3f}')


def _label(algorithm) -> str:
  return rule_registry.get(algorithm).label


def _style(algorithm) -> dict:
  """One colour per rule in every figure (by its role: an oracle dashed,
  as it often lies exactly on Robust-HDP; the proposed rule's points
  round)."""
  role = rule_registry.get(algorithm).role
  style = {'color': f'C{rule_registry.names().index(algorithm) % 10}',
           'label': _label(algorithm)}
  if role == 'oracle':
    style.update(linestyle='--', marker='x')
  else:
    style.update(marker='o' if role == 'proposed' else '.')
  return style


def _proposed() -> str:
  """The rule whose noise estimates Figure 4 shows: the proposed one (the
  registry's rule of role 'proposed', Robust-HDP)."""
  return rule_registry.with_role('proposed')[0].name


def _save(fig, path):
  fig.tight_layout()
  fig.savefig(path, format='png', dpi=100, metadata=PNG_METADATA)


def draw(plt, runs, figure_dir, dataset, distributions, seeds, client_counts,
         figures) -> list[str]:
  """Writes the figures whose runs exist; returns the files written."""
  os.makedirs(figure_dir, exist_ok=True)
  written = []
  if 2 in figures and any(Run(d, 20, s) in runs for d in distributions
                          for s in seeds):
    data = figure2_data(runs, distributions, seeds)
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(data)
    x = np.arange(len(distributions))
    for k, (algorithm, (means, stds)) in enumerate(data.items()):
      ax.bar(x + (k - len(data) / 2 + 0.5) * width, means, width, yerr=stds,
             label=_label(algorithm), color=_style(algorithm)['color'],
             capsize=2)
    ax.set_xticks(x, [d.replace('dist', 'Dist') for d in distributions])
    ax.set_ylabel('mean local test accuracy (%)')
    ax.set_title(f'Figure 2: {dataset}, n = 20, '
                 f'{len(seeds)} seed(s)')
    ax.legend(fontsize=8, ncol=4)
    written.append(os.path.join(figure_dir, 'figure2_accuracy.png'))
    _save(fig, written[-1])
  run = Run('dist6', 20, seeds[0])
  if 3 in figures and run in runs:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for algorithm, record in runs[run].items():
      points = [(h['round'], h['accuracy']) for h in record['history']
                if h.get('accuracy') is not None]
      ax.plot(*zip(*points), **_style(algorithm))
    ax.set_xlabel('round')
    ax.set_ylabel('mean local test accuracy (%)')
    ax.set_title(f'Figure 3: {dataset}, Dist6')
    ax.legend(fontsize=8)
    written.append(os.path.join(figure_dir, 'figure3_convergence.png'))
    _save(fig, written[-1])
  run = Run('dist8', 20, seeds[0])
  if 4 in figures and run in runs and _proposed() in runs[run]:
    eps, true, estimate = figure4_data(runs[run][_proposed()])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    x = np.arange(len(eps))
    ax.semilogy(x, true, 'o-', label=r'$\sigma_i^2$ (eqs. 7, 3)')
    ax.semilogy(x, estimate, 'x--', label=r'$p\,\hat\sigma_i^2$ (RPCA)')
    ax.set_xticks(x, [f'{e:g}' for e in eps], rotation=90, fontsize=7)
    ax.set_xlabel(r'clients sorted by $\epsilon_i$')
    ax.set_title(f'Figure 4: {dataset}, Dist8')
    ax.legend()
    written.append(os.path.join(figure_dir, 'figure4_noise_estimates.png'))
    _save(fig, written[-1])
  if 5 in figures:
    # As the paper's Figure 5, without minimum epsilon.
    shown = [a for a in figure2_data(runs, distributions, seeds)
             if a != 'min_epsilon']
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    level = {d: float(np.mean(privacy_preferences.load_distribution(d, 20)[0]))
             for d in distributions}
    ordered = sorted(distributions, key=level.get)
    data = figure2_data(runs, ordered, seeds)
    counts = [n for n in client_counts if Run('dist6', n, seeds[0]) in runs]
    for algorithm in shown:
      left.plot([level[d] for d in ordered], data[algorithm][0],
                **_style(algorithm))
      ran = [n for n in counts if algorithm in runs[Run('dist6', n, seeds[0])]]
      right.plot(ran, [_accuracy(runs[Run('dist6', n, seeds[0])], algorithm)
                       for n in ran], **_style(algorithm))
    left.set_xlabel(r'mean target $\epsilon$ of the distribution')
    right.set_xlabel('number of clients n (Dist6)')
    for ax in (left, right):
      ax.set_ylabel('mean local test accuracy (%)')
    left.legend(fontsize=8)
    fig.suptitle(f'Figure 5: {dataset}')
    written.append(os.path.join(figure_dir, 'figure5_privacy_and_clients.png'))
    _save(fig, written[-1])
  return written


def _check_same_mechanism(run: Run, output_dir: str) -> None:
  """Refuses to reuse a finished run whose mechanism key was not the kind
  asked for (secret, or this run's published seed with --reproducible), so
  that a table never mixes reproducible and secret runs unseen."""
  with open(os.path.join(output_dir, 'results.json')) as f:
    found = json.load(f)['runs'][0]['config'].get('mechanism_seed')
  wanted = run.seed if _REPRODUCIBLE.value else None
  cli.check(found == wanted,
            f'{output_dir} holds a run with mechanism_seed={found}, this '
            f'sweep asks for {wanted} (--reproducible: its --seed; else a '
            'secret key): use another --results_dir')


def _algorithms(values: Sequence[str]) -> list[str]:
  """--algorithms, checked: 'all' or registered rules."""
  names = rule_registry.names()
  if list(values) == ['all']:
    return list(names)
  bad = [v for v in values if v not in names]
  cli.check(bool(values) and not bad,
            f'--algorithms: {",".join(bad) or "none given"}; allowed: all, '
            f'{", ".join(names)}')
  return list(values)


def _jobs(run: Run, algorithms: Sequence[str], per_rule: bool):
  """[(folder name, rules)] of `run`: one folder for all its rules, or
  with `per_rule` one per rule."""
  if per_rule:
    return [(f'{run.name}_{rule}', [rule]) for rule in algorithms]
  everything = list(algorithms) == list(rule_registry.names())
  return [(run.name, ['all'] if everything else list(algorithms))]


def _integers(values, flag):
  try:
    return [int(v) for v in values]
  except ValueError:
    raise cli.UsageError(f'--{flag} takes integers, got '
                         f'{",".join(values)}') from None


def main(argv):
  extra = argv[1:]  # Everything after `--`.
  figures = _integers(_FIGURES.value, 'figures')
  bad = [f for f in figures if f not in FIGURES]
  cli.check(not bad, f'--figures: {bad} not among 2, 3, 4, 5')
  bad = [d for d in _DISTRIBUTIONS.value if d not in DISTRIBUTIONS]
  cli.check(not bad, f'--distributions: {",".join(bad)} unknown; allowed: '
            f'{",".join(DISTRIBUTIONS)}')
  seeds = _integers(_SEEDS.value, 'seeds')
  cli.check(bool(seeds), '--seeds needs at least one seed')
  counts = _integers(_CLIENT_COUNTS.value, 'client_counts')
  bad = [n for n in counts if n not in (20, 40, 60)]
  cli.check(not bad, f'--client_counts: {bad}; allowed: 20, 40, 60 (the '
            'authors\' distributions)')
  cli.check(_PARALLEL.value >= 1,
            f'--parallel must be >= 1, got {_PARALLEL.value}')
  cli.check(not (_PLOT_ONLY.value and _RUNS_ONLY.value),
            '--plot_only draws without running, --runs_only runs without '
            'drawing: pass at most one')
  cli.check(not (_REPRODUCIBLE.value and any(
      a.startswith('--mechanism_seed') for a in extra)),
            '--reproducible sets each run\'s --mechanism_seed to its --seed; '
            'do not also pass --mechanism_seed after --')
  algorithms = _algorithms(_ALGORITHMS.value)
  cli.check(not (_PER_RULE.value and any(
      a.startswith('--algorithm') for a in extra)),
            '--per_rule runs the rules of --algorithms one by one; name them '
            'there, not with --algorithm after --')
  runs = runs_for(figures, _DISTRIBUTIONS.value, seeds, counts)
  sweep_dir = os.path.join(_RESULTS_DIR.value, 'sweep_robust_hdp',
                           _DATASET.value)
  if _LIST.value:
    for run in runs:
      for name, _ in _jobs(run, algorithms, _PER_RULE.value):
        print(f'{name}\t{" ".join(run.run_flags(_REPRODUCIBLE.value))}')
    return
  failed = []
  if not _PLOT_ONLY.value:
    todo = []
    for run in runs:
      for name, rules in _jobs(run, algorithms, _PER_RULE.value):
        output_dir = os.path.join(sweep_dir, name)
        if os.path.isfile(os.path.join(output_dir, 'results.json')):
          _check_same_mechanism(run, output_dir)
          print(f'skip {name}: results exist', flush=True)
        else:
          todo.append((name, functools.partial(run_one, run, output_dir,
                                               extra, rules)))
    failed = subprocess_jobs.run_jobs(todo, _PARALLEL.value)
  if _RUNS_ONLY.value:
    subprocess_jobs.exit_if_failed(failed, 'runs')
    return
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  finished = load_runs(sweep_dir)
  for path in draw(plt, finished,
                   os.path.join(sweep_dir, 'figures'), _DATASET.value,
                   _DISTRIBUTIONS.value, seeds, counts, figures):
    print(f'wrote {path}')
  figure4_run = Run('dist8', 20, seeds[0])
  if 4 in figures and _proposed() in finished.get(figure4_run, {}):
    print(figure4_summary(finished[figure4_run][_proposed()]))
  if 2 in figures and finished:
    table = figure2_table(finished, _DISTRIBUTIONS.value, seeds)
    late = late_evaluations(finished, _DISTRIBUTIONS.value, seeds)
    table += f'\n\n{late}' if late else ''
    with open(os.path.join(sweep_dir, 'figure2.md'), 'w') as f:
      f.write(table + '\n')
    print(table)
  subprocess_jobs.exit_if_failed(failed, 'runs')


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
