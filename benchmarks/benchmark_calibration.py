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
"""Times idp_scale's calibration of many epsilons, together and one by one.

    python benchmarks/benchmark_calibration.py          # dist1, dist5, dist9
    python benchmarks/benchmark_calibration.py --distributions=dist1 \
        --nobefore

For each of Robust-HDP's privacy distributions (20 clients), in turn:
`individual_scale.individual_clips(epsilons, q, T, delta)` at HDP-Bench's
cross-silo setting (q = 0.5, T = 20, delta = 1e-5 by default), first one
epsilon at a time (before: each distinct epsilon by
`accounting.noise_multiplier_for_epsilon`, dp_accounting's calibrator),
then all together (after: `accounting.noise_multipliers_for_epsilons`, one
search and one dp_accounting composition per epsilon), every cache emptied
before each. Prints each one's wall and processor seconds, the ratio, and
the largest difference of their z (within the tolerance, 1e-6). The
processor seconds are the better guide on a busy machine; run it on a quiet
one.
"""

import contextlib
import time

from absl import app
from absl import flags

from tff_hdp.bench import method as method_lib
from tff_hdp.bench.methods import individual_scale
from tff_hdp.privacy import accounting
from tff_hdp.robust_hdp import privacy_preferences
from tff_hdp.run_scripts import cli

_DISTRIBUTIONS = flags.DEFINE_list(
    'distributions', ['dist1', 'dist5', 'dist9'],
    'Robust-HDP privacy distributions (20 clients each).')
_RATE = flags.DEFINE_float('sampling_rate', 0.5, 'q, in (0, 1].')
_ROUNDS = flags.DEFINE_integer('rounds', 20, 'T (>= 1).')
_DELTA = flags.DEFINE_float('delta', 1e-5, 'delta, in (0, 1).')
_BEFORE = flags.DEFINE_boolean(
    'before', True, 'Also time the one-by-one calibration (slow at q = 0.5).')


def _one_by_one(epsilons, sampling_rate, rounds, delta, accountant='rdp'):
  """What `individual_clips` calibrated before: each epsilon on its own."""
  return tuple(accounting.noise_multiplier_for_epsilon(
      e, sampling_rate, rounds, delta, accountant=accountant)
               for e in epsilons)


@contextlib.contextmanager
def _calibrating_one_by_one():
  together = method_lib.noise_multipliers_for_epsilons
  method_lib.noise_multipliers_for_epsilons = _one_by_one
  try:
    yield
  finally:
    method_lib.noise_multipliers_for_epsilons = together


def _timed(epsilons):
  """(individual_clips, wall seconds, processor seconds), caches empty."""
  method_lib._NOISE_MULTIPLIERS.clear()  # pylint: disable=protected-access
  accounting._rdp_epsilon.cache_clear()  # pylint: disable=protected-access
  wall, cpu = time.perf_counter(), time.process_time()
  clips = individual_scale.individual_clips(epsilons, _RATE.value,
                                            _ROUNDS.value, _DELTA.value)
  return clips, time.perf_counter() - wall, time.process_time() - cpu


def main(argv):
  cli.check_no_arguments(argv)
  cli.check_names(_DISTRIBUTIONS.value, privacy_preferences.DISTRIBUTIONS,
                  'distributions', 'distribution')
  print(f'individual_clips at q={_RATE.value}, T={_ROUNDS.value}, '
        f'delta={_DELTA.value}')
  for name in _DISTRIBUTIONS.value:
    epsilons, _ = privacy_preferences.load_distribution(name, 20)
    line = f'{name} ({len(set(epsilons))} distinct epsilons):'
    if _BEFORE.value:
      with _calibrating_one_by_one():
        before, wall0, cpu0 = _timed(epsilons)
      line += f' before {wall0:.1f} s wall, {cpu0:.1f} s processor;'
    after, wall, cpu = _timed(epsilons)
    line += f' after {wall:.1f} s wall, {cpu:.1f} s processor'
    if _BEFORE.value:
      diff = max(abs(a - b) for a, b in zip(after.noise_multipliers,
                                            before.noise_multipliers))
      line += (f'; before/after {wall0 / wall:.1f}x wall, '
               f'{cpu0 / cpu:.1f}x processor; max |z_before - z_after| '
               f'{diff:.4g}')
    print(line, flush=True)


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
