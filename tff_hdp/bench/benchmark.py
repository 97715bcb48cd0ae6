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
"""HDP-Bench: every method on the same clients and the same preferences.

    results = benchmark.run(setting, [preferences...], methods, seeds=[0, 1])
    boards = leaderboard.leaderboards(results, {m.name: m for m in methods})

For each preference distribution and method, the method calibrates once to
the preferences (`Method.calibrate`); the benchmark checks with its own
accountant that every client's calibrated mechanism spends at most its
epsilon_i over the setting's rounds (a method that promises more is a bug:
it stops the benchmark; a reference without a guarantee is not checked),
then runs it once per seed (with `jobs` > 1, several runs at once, each in
a worker process: `parallel`) and records the accuracy and the epsilon each
client's ledger spent. A method that does not fit the setting's population
(`Method.refuses_population`) or refuses a distribution (`Method.refuses`)
is recorded as refused, with its reason. Runs already in `done` (a resumed
benchmark) are skipped. `run` runs one population (`population`),
`run_populations` several, on the same worker processes.

Every run's noise and sampling come from a fresh secret key unless a
`mechanism_seed` is given: then seed s runs with mechanism seed
mechanism_seed + s, reproducible, and its epsilon is not a guarantee for its
outputs (the leaderboard's caption says so).
"""

import dataclasses
import functools
import os
import sys
import time
from typing import Callable, Iterable, Optional, Sequence

from tff_hdp.bench import leaderboard
from tff_hdp.bench import method as method_lib


class CalibrationError(RuntimeError):
  """A method's calibration spends more than some client asked for."""


def check_calibration(m: method_lib.Method, setting: method_lib.Setting,
                      preferences: method_lib.Preferences,
                      calibration: method_lib.Calibration
                      ) -> tuple[float, ...]:
  """The calibration's planned epsilons, if within every epsilon_i.

  Raises:
    CalibrationError: Some client's planned epsilon exceeds its epsilon_i,
      or the calibration has another number of clients.
  """
  if len(calibration.clients) != preferences.num_clients:
    raise CalibrationError(
        f'{m.name} calibrated {len(calibration.clients)} clients for '
        f'{preferences.num_clients} preferences')
  planned = method_lib.planned_epsilons(calibration, setting.delta,
                                        setting.accountant)
  for i, (p, a) in enumerate(zip(planned, preferences.epsilons)):
    if not method_lib.budgets_met([p], [a]):
      raise CalibrationError(
          f'{m.name} on {preferences.name}: client {i} would spend epsilon '
          f'{p:.6g} over {setting.rounds} rounds, more than its {a:g}')
  return planned


def _check_workers_find(methods: Sequence[method_lib.Method],
                        method_files: Sequence[str]) -> None:
  """Raises ValueError naming a method that a worker process could not
  find: one neither of the package nor registered by `method_files` (a
  method made from something registered elsewhere, e.g. a Robust-HDP rule,
  names that module as its `source_module`)."""
  files = {os.path.abspath(f) for f in method_files}
  for m in methods:
    module = getattr(m, 'source_module', None) or type(m).__module__
    path = getattr(sys.modules.get(module), '__file__', None)
    if not (module.startswith('tff_hdp.') or
            (path is not None and os.path.abspath(path) in files)):
      raise ValueError(
          f'method {m.name!r} was registered by {module}, which the worker '
          'processes of jobs > 1 do not import: give its file in '
          'method_files (--extra_methods), or run with jobs=1')


def _to_calibrate(setting, distributions, methods, seeds, *, finished,
                  refused: Callable[[leaderboard.RunResult], None]):
  """[(preferences, method, its seeds to run)] of one population: a run in
  `finished` ((population, method, preferences, seed)) is left out, and a
  refused one goes to `refused` (nothing of it is calibrated)."""
  todo_all = []
  for preferences in distributions:
    if preferences.num_clients != setting.num_clients:
      raise ValueError(f'preferences {preferences.name!r} give '
                       f'{preferences.num_clients} clients, the data has '
                       f'{setting.num_clients}')
    for m in methods:
      todo = [s for s in seeds if (setting.population, m.name,
                                   preferences.name, s) not in finished]
      if not todo:
        continue
      # A population the method does not fit, then preferences it cannot
      # serve: refused, with the reason, and nothing is calibrated.
      reason = m.refuses_population(setting) or m.refuses(preferences)
      if reason is not None:
        for s in todo:
          refused(leaderboard.RunResult(
              m.name, preferences.name, s, None, refused=reason,
              population=setting.population))
        continue
      todo_all.append((preferences, m, todo))
  return todo_all


def _calibrated(setting, preferences, m, todo, mechanism_seed):
  """The runs of method `m` on `preferences` for the seeds `todo`, its
  calibration checked: ((method name, calibration, seed, mechanism seed),
  (preferences, planned epsilons, calibration seconds per seed)) each."""
  start = time.perf_counter()
  calibration = m.calibrate(setting, preferences)
  calibration_share = (time.perf_counter() - start) / len(todo)
  planned = (method_lib.planned_epsilons(calibration, setting.delta,
                                         setting.accountant)
             if m.guarantee.kind == 'none' else  # A reference.
             check_calibration(m, setting, preferences, calibration))
  return [((m.name, calibration, s,
            None if mechanism_seed is None else mechanism_seed + s),
           (preferences, planned, calibration_share)) for s in todo]


def _result(setting, task, about, outcome, seconds) -> leaderboard.RunResult:
  (name, _, seed, _), (preferences, planned, calibration_share) = task, about
  return leaderboard.RunResult(
      name, preferences.name, seed, float(outcome.accuracy),
      spent=tuple(float(e) for e in outcome.epsilons),
      asked=tuple(float(e) for e in preferences.epsilons),
      planned=tuple(float(e) for e in planned),
      seconds=seconds + calibration_share, population=setting.population)


@dataclasses.dataclass(frozen=True)
class Progress:
  """A benchmark's results so far and where its new ones go.

  Attributes:
    done: Results of an earlier, interrupted benchmark: skipped.
    on_result: Called with each new result (e.g. to save it), as it ends.
  """
  done: Iterable[leaderboard.RunResult] = ()
  on_result: Optional[Callable[[leaderboard.RunResult], None]] = None


def run(setting: method_lib.Setting,
        distributions: Sequence[method_lib.Preferences],
        methods: Sequence[method_lib.Method], seeds: Sequence[int], *,
        mechanism_seed: Optional[int] = None,
        progress: Progress = Progress(),
        jobs: int = 1, method_files: Sequence[str] = ()
        ) -> list[leaderboard.RunResult]:
  """Every method on every distribution, once per seed (module doc).

  Args:
    setting: The population and what every method shares.
    distributions: The privacy preferences (one entry per client each).
    methods: The methods to run.
    seeds: The public seeds.
    mechanism_seed: None (secret keys) or the base of reproducible ones.
    progress: An earlier, interrupted benchmark's results (skipped) and
      the callback of each new result (`Progress`).
    jobs: Runs at once, each in a worker process of its share of the cores
      (`parallel`); 1 runs them one after another in this process. Each
      run is the same either way; only the order results come in (and each
      run's wall time, on fewer threads) differs.
    method_files: The files that register methods from outside the package
      (imported by each worker when jobs > 1).

  Returns:
    `progress.done`'s results and the new ones.
  """
  (results,) = run_populations(
      [(setting, distributions)], methods, seeds,
      mechanism_seed=mechanism_seed, done=[list(progress.done)],
      on_result=progress.on_result, jobs=jobs, method_files=method_files)
  return results


def run_populations(
    populations: Sequence[tuple[method_lib.Setting,
                                Sequence[method_lib.Preferences]]],
    methods: Sequence[method_lib.Method], seeds: Sequence[int], *,
    mechanism_seed: Optional[int] = None,
    done: Optional[Sequence[Iterable[leaderboard.RunResult]]] = None,
    on_result: Optional[Callable[[leaderboard.RunResult], None]] = None,
    jobs: int = 1, method_files: Sequence[str] = ()
) -> list[list[leaderboard.RunResult]]:
  """`run` of several populations at once: per population (setting, its
  preferences), its results (`done[i]`'s, population i's results of an
  earlier benchmark, and the new ones); `on_result` as `Progress`'s, the
  other arguments `run`'s.

  With jobs > 1 every population's runs share one set of workers, which
  start at once: the runs are calibrated (and checked) one method and
  preferences after another while the workers run those already
  calibrated, so no core waits for all calibrations, nor between
  populations. They go out method by method, in the order of `methods`
  (the registry's puts first the sample-level rules, whose runs train every
  client every round and take longest), then population by population:
  the long runs start first, the short ones fill the end, and while the
  workers run the first rules' runs the other methods calibrate.
  """
  if jobs < 1:
    raise ValueError(f'jobs must be >= 1, got {jobs}')
  if jobs > 1:
    _check_workers_find(methods, method_files)
  # The methods train on TensorFlow and TFF: retire TFF's default context,
  # whose worker_binary can outlive Python (tff_hdp.runtime), before any does.
  from tff_hdp import runtime  # pylint: disable=g-import-not-at-top,unused-import
  results = [list(d) for d in (done or [()] * len(populations))]
  if len(results) != len(populations):
    raise ValueError(f'done: {len(results)} lists for {len(populations)} '
                     'populations')
  by_name = {m.name: m for m in methods}

  def record(i, result):
    results[i].append(result)
    if on_result is not None:
      on_result(result)

  # Every refusal first: it needs no calibration.
  plans = [
      [(i, *entry) for entry in _to_calibrate(
          setting, distributions, methods, seeds,
          finished={(r.population, r.method, r.preferences, r.seed)
                    for r in results[i]},
          refused=functools.partial(record, i))]
      for i, (setting, distributions) in enumerate(populations)]
  settings = [setting for setting, _ in populations]
  if jobs == 1:
    _run_here(plans, settings, by_name, mechanism_seed, record)
  else:
    _run_on_workers(plans, settings, methods, mechanism_seed, record,
                    jobs=jobs, method_files=method_files)
  return results


def _run_here(plans, settings, by_name, mechanism_seed, record) -> None:
  """`run_populations`' runs one after another in this process, population
  by population; each result to `record(population, result)`."""
  for plan in plans:
    # Every run of the population calibrated and checked before any runs.
    tasks = [(i, task) for i, preferences, m, todo in plan
             for task in _calibrated(settings[i], preferences, m, todo,
                                     mechanism_seed)]
    for i, (task, about) in tasks:
      name, calibration, seed, mechanism = task
      start = time.perf_counter()
      outcome = by_name[name].run(settings[i], calibration, seed=seed,
                                  mechanism_seed=mechanism)
      record(i, _result(settings[i], task, about, outcome,
                        time.perf_counter() - start))


def _run_on_workers(plans, settings, methods, mechanism_seed, record, *,
                    jobs: int, method_files: Sequence[str]) -> None:
  """`run_populations`' runs on `jobs` workers (`parallel.run_all`), method
  by method in the order of `methods`, then population by population,
  calibrated as the workers take them; each result to
  `record(population, result)`."""
  position = {m.name: k for k, m in enumerate(methods)}
  entries = sorted((entry for plan in plans for entry in plan),
                   key=lambda entry: (position[entry[2].name], entry[0]))
  runs = sum(len(todo) for *_, todo in entries)
  if not runs:
    return
  handed_out = []  # Per task handed to the workers: (population, task, about).

  def calibrated_tasks():
    for i, preferences, m, todo in entries:
      for task, about in _calibrated(settings[i], preferences, m, todo,
                                     mechanism_seed):
        handed_out.append((i, task, about))
        yield i, task

  from tff_hdp.bench import parallel  # pylint: disable=g-import-not-at-top
  for index, outcome, seconds in parallel.run_all(
      dict(enumerate(settings)), calibrated_tasks(), min(jobs, runs),
      method_files):
    i, task, about = handed_out[index]
    record(i, _result(settings[i], task, about, outcome, seconds))
