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
then runs it once per seed and records the
accuracy and the epsilon each client's ledger spent. A method that refuses
a distribution (`Method.refuses`) is recorded as such. Runs already in
`done` (a resumed benchmark) are skipped.

Every run's noise and sampling come from a fresh secret key unless a
`mechanism_seed` is given: then seed s runs with mechanism seed
mechanism_seed + s, reproducible, and its epsilon is not a guarantee for its
outputs (the leaderboard's caption says so).
"""

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


def run(setting: method_lib.Setting,
        distributions: Sequence[method_lib.Preferences],
        methods: Sequence[method_lib.Method], seeds: Sequence[int], *,
        mechanism_seed: Optional[int] = None,
        done: Iterable[leaderboard.RunResult] = (),
        on_result: Optional[Callable[[leaderboard.RunResult], None]] = None
        ) -> list[leaderboard.RunResult]:
  """Every method on every distribution, once per seed (module doc).

  Args:
    setting: The population and what every method shares.
    distributions: The privacy preferences (one entry per client each).
    methods: The methods to run.
    seeds: The public seeds.
    mechanism_seed: None (secret keys) or the base of reproducible ones.
    done: Results of an earlier, interrupted benchmark: skipped.
    on_result: Called with each new result (e.g. to save it).

  Returns:
    `done`'s results and the new ones.
  """
  # The methods train on TensorFlow and TFF: retire TFF's default context,
  # whose worker_binary can outlive Python (tff_hdp.runtime), before any does.
  from tff_hdp import runtime  # pylint: disable=g-import-not-at-top,unused-import
  results = list(done)
  finished = {(r.method, r.preferences, r.seed) for r in results}
  for preferences in distributions:
    if preferences.num_clients != setting.num_clients:
      raise ValueError(f'preferences {preferences.name!r} give '
                       f'{preferences.num_clients} clients, the data has '
                       f'{setting.num_clients}')
    for m in methods:
      todo = [s for s in seeds
              if (m.name, preferences.name, s) not in finished]
      if not todo:
        continue
      reason = m.refuses(preferences)
      if reason is not None:
        new = [leaderboard.RunResult(m.name, preferences.name, s, None,
                                     refused=reason) for s in todo]
      else:
        start = time.perf_counter()
        calibration = m.calibrate(setting, preferences)
        calibration_share = (time.perf_counter() - start) / len(todo)
        planned = (method_lib.planned_epsilons(calibration, setting.delta,
                                               setting.accountant)
                   if m.guarantee.kind == 'none' else  # A reference.
                   check_calibration(m, setting, preferences, calibration))
        new = []
        for s in todo:
          start = time.perf_counter()
          outcome = m.run(setting, calibration, seed=s,
                          mechanism_seed=None if mechanism_seed is None else
                          mechanism_seed + s)
          new.append(leaderboard.RunResult(
              m.name, preferences.name, s, float(outcome.accuracy),
              spent=tuple(float(e) for e in outcome.epsilons),
              asked=tuple(float(e) for e in preferences.epsilons),
              planned=tuple(float(e) for e in planned),
              seconds=time.perf_counter() - start + calibration_share))
      for result in new:
        results.append(result)
        if on_result is not None:
          on_result(result)
  return results
