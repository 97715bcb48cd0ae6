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
"""FedHDP's speed benchmark: stock TFF's DP-FedAvg against our rounds.

One setting (a model, its clients per round and E) times, in one process,
on the same synthetic data, one DP-FedAvg round of each variant
(`fedhdp_rounds`): `stock_tff`, `api`, `tff`, `direct` and, with Ditto,
`tff+ditto` and `direct+ditto`. Variants run interleaved round by round
after one warm-up round each; a row gives the medians: seconds per round
(wall and CPU, the TFF worker process included), client-steps per second,
and client-training FLOP/s against this machine's float32 matmul peak (the
best rate of a 2048x2048 matmul timed between rounds). Client-training FLOPs
are 3 x 2 x (multiply-adds of one example's forward pass) per example and
epoch, twice with Ditto; for the direct backend the fraction uses its
client-work time alone, for the TFF runtimes the whole round.
`benchmark_fedhdp.py` runs it (its module docstring gives the settings).
"""

import collections
import math
import time
from typing import NamedTuple

import fedhdp_rounds
# benchmarks/timing.py: Python searches a script's own folder first.
import timing

# The targets, all at the FC NN with E = 10.
TARGETS = {'speedup': 10.0, 'peak_fraction': 0.6, 'tff_vs_stock': 1.1,
           'api_vs_stock': 1.2}


class Setting(NamedTuple):
  """One row group of the table: `clients` of `spec`, `epochs` each round."""
  name: str
  spec: object
  clients: int
  epochs: int


def build_runners(setting, data, variants):
  """{variant: its runner after a warm-up round}, {variant: build seconds}."""
  runners = {}
  build_seconds = {}
  for variant in variants:
    start = time.perf_counter()
    if variant == 'stock_tff':
      runners[variant] = fedhdp_rounds.StockTff(setting.spec, data,
                                                setting.epochs)
    elif variant == 'api':
      runners[variant] = fedhdp_rounds.ApiProcess(setting.spec, data,
                                                  setting.epochs)
    else:
      backend, _, ditto = variant.partition('+')
      runners[variant] = fedhdp_rounds.OurRound(
          backend, setting.spec, data, setting.epochs, bool(ditto))
    runners[variant].round()  # Warm-up: traces and compiles.
    build_seconds[variant] = time.perf_counter() - start
  return runners, build_seconds


def time_rounds(tf, worker_pid, runners, rounds):
  """`rounds` interleaved rounds of `runners`, a matmul peak before each.

  Returns {variant: [wall s]}, {variant: [CPU s]}, {variant: [the round's
  parts]} (for the runners that give them) and [(wall, CPU) peak FLOP/s].
  """
  walls = collections.defaultdict(list)
  cpus = collections.defaultdict(list)
  parts = collections.defaultdict(list)
  peaks = []
  for _ in range(rounds):
    peaks.append(timing.matmul_peak(tf, repeats=2))
    for variant, runner in runners.items():
      fedhdp_rounds.settle(worker_pid)
      with timing.Clock(worker_pid) as clock:
        runner.round()
      walls[variant].append(clock.wall)
      cpus[variant].append(clock.cpu)
      if runner.last_round_seconds:
        parts[variant].append(runner.last_round_seconds)
  return walls, cpus, parts, peaks


def time_setting(tf, worker_pid, setting, samples, rounds, variants):
  """Interleaved rounds of `variants`; medians and rates per variant.

  `samples` examples per client, synthetic; one row per variant.
  """
  import numpy as np
  data = fedhdp_rounds.synthetic_clients(setting.spec, setting.clients,
                                         samples, seed=0)
  runners, build_seconds = build_runners(setting, data, variants)
  walls, cpus, parts, peaks = time_rounds(tf, worker_pid, runners, rounds)
  # The machine's peak: the best matmul rate seen during the setting (other
  # processes may slow any single measurement down, never speed it up).
  peak_wall = max(p[0] for p in peaks)
  peak_cpu = max(p[1] for p in peaks)
  steps = setting.clients * math.ceil(
      samples / fedhdp_rounds.BATCH_SIZE) * setting.epochs
  flops_per_pass = 6.0 * timing.forward_multiply_adds(
      setting.spec) * setting.clients * (samples * setting.epochs)
  rows = []
  for variant in variants:
    wall = float(np.median(walls[variant]))
    cpu = float(np.median(cpus[variant]))
    flops = flops_per_pass * (2 if variant.endswith('+ditto') else 1)
    train_wall = wall
    breakdown = {}
    if parts[variant]:
      breakdown = {k: float(np.median([p[k] for p in parts[variant]]))
                   for k in parts[variant][0]}
      train_wall = breakdown['client_work']
    rows.append(dict(
        setting=setting.name, variant=variant, clients=setting.clients,
        epochs=setting.epochs, seconds_per_round=wall,
        cpu_seconds_per_round=cpu,
        client_steps_per_second=steps / wall,
        client_training_seconds=train_wall,
        client_gflops=flops / train_wall / 1e9,
        peak_gflops=peak_wall / 1e9,
        peak_fraction=flops / train_wall / peak_wall,
        peak_fraction_cpu=(flops / cpu / peak_cpu),
        build_and_warmup_seconds=build_seconds[variant],
        breakdown=breakdown, rounds=rounds))
  return rows


def print_table(rows):
  """The rows of `time_setting`, as a Markdown table."""
  print('| setting | backend | clients | E | s/round | CPU s/round | '
        'client-steps/s | client GFLOP/s | fraction of matmul peak |')
  print('|---|---|---|---|---|---|---|---|---|')
  for r in rows:
    print(f"| {r['setting']} | {r['variant']} | {r['clients']} | "
          f"{r['epochs']} | {r['seconds_per_round']:.3f} | "
          f"{r['cpu_seconds_per_round']:.3f} | "
          f"{r['client_steps_per_second']:.0f} | {r['client_gflops']:.1f} | "
          f"{r['peak_fraction']:.2f} |")


def fc_e10(rows, variant):
  """The row of `variant` for the FC NN at E = 10 (the targets' setting)."""
  return next(r for r in rows if (r['setting'], r['epochs'], r['variant']) ==
              ('FC NN', 10, variant))


def checks(rows):
  """[(met, line)] of `TARGETS`, from the FC NN's rows at E = 10."""
  stock = fc_e10(rows, 'stock_tff')
  direct = fc_e10(rows, 'direct')
  speedup = stock['seconds_per_round'] / direct['seconds_per_round']
  fraction = direct['peak_fraction']
  tff_ratio = (fc_e10(rows, 'tff')['seconds_per_round'] /
               stock['seconds_per_round'])
  api_ratio = (fc_e10(rows, 'api')['seconds_per_round'] /
               stock['seconds_per_round'])
  return [
      (speedup >= TARGETS['speedup'],
       f"direct vs stock TFF, FC NN E=10: {speedup:.1f}x "
       f"(target >= {TARGETS['speedup']:g}x)"),
      (fraction >= TARGETS['peak_fraction'],
       f'direct client training: {fraction:.2f} of the matmul peak '
       f"(CPU-time basis {direct['peak_fraction_cpu']:.2f}; target >= "
       f"{TARGETS['peak_fraction']:g})"),
      (tff_ratio <= TARGETS['tff_vs_stock'],
       f'our TFF backend vs stock TFF, FC NN E=10, Ditto off: {tff_ratio:.2f}x '
       f"the time (target <= {TARGETS['tff_vs_stock']:g}x)"),
      (api_ratio <= TARGETS['api_vs_stock'],
       f'our public API (build_fedhdp_process) vs stock TFF, FC NN E=10: '
       f"{api_ratio:.2f}x the time (target <= {TARGETS['api_vs_stock']:g}x)"),
  ]


def speedup_and_fraction(rows):
  """The direct round's speedup over stock TFF and its fraction of the
  matmul peak, FC NN at E = 10 (the benchmark's last line)."""
  direct = fc_e10(rows, 'direct')
  return (fc_e10(rows, 'stock_tff')['seconds_per_round'] /
          direct['seconds_per_round'], direct['peak_fraction'])


def print_breakdown(rows):
  """Where the direct round's time goes, per setting (its parts' medians)."""
  print('\nwhere the direct round goes (median seconds):')
  for r in rows:
    if r['variant'].startswith('direct'):
      parts = ', '.join(f'{k} {v:.3f}' for k, v in r['breakdown'].items())
      print(f"  {r['setting']} E={r['epochs']} {r['variant']}: {parts}")
