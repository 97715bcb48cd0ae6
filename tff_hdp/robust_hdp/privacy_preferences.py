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
"""Clients' privacy preferences (epsilon_i, b_i) and their noise multipliers.

Paper 003's Dist1-Dist9 (its appendix Table 4) are not in the main text; the
realised epsilon_i and batch sizes b_i of each distribution for 20, 40 and 60
clients, as the authors ran them, are transcribed in
`tff_hdp/robust_hdp/reference/robust_hdp_privacy_preferences.csv` (package
data; columns distribution, num_clients, client, epsilon, batch_size).

Each client calibrates its own noise multiplier z_i from its target epsilon_i
with the project's accountant (`tff_hdp.privacy.accounting`, RDP of the
Poisson-subsampled Gaussian): rate q_i = b_i / N_i over E x E_i steps,
E_i = K_i ceil(N_i / b_i) (paper 003, Algorithm 1 line 6 and Theorem 1).
TensorFlow-free.
"""

import concurrent.futures
import csv
import dataclasses
import functools
from importlib import resources
import json
import math
import os
import subprocess
import sys
from typing import Optional, Sequence, Union

from tff_hdp.privacy import accounting

# Package data (setup.py's package_data), found wherever tff_hdp is installed.
REFERENCE_CSV = (resources.files('tff_hdp.robust_hdp') / 'reference' /
                 'robust_hdp_privacy_preferences.csv')

# RDP orders of the DP-SGD accounting: dp_accounting's default grid with the
# fractional orders every 0.5 instead of every 0.1 (1.5, 2, ..., 10.5, then
# 11 ... 63, 128, 256, 512, 1024). The fractional orders dominate the cost
# (docs/performance.md, "Accounting and the audit"), and a client's
# calibration evaluates epsilon some 20 times; epsilon over a subset of the
# orders is never smaller, so the noise calibrated on it is never too small
# (tests check it is within 2% of the default grid's).
ORDERS = (tuple(1 + x / 2 for x in range(1, 20)) + tuple(range(11, 64)) +
          (128, 256, 512, 1024))
# Opacus's default RDP orders (opacus.accountants.rdp.RDPAccountant), the
# grid of the classic conversion when paper 003's numbers are reproduced.
OPACUS_ORDERS = (tuple(1 + x / 10.0 for x in range(1, 100)) +
                 tuple(range(12, 64)))

DISTRIBUTIONS = tuple(f'dist{i}' for i in range(1, 10))
CLIENT_COUNTS = (20, 40, 60)


@dataclasses.dataclass(frozen=True)
class ClientPrivacy:
  """One client's privacy parameters and DP-SGD calibration.

  Attributes:
    epsilon: Target epsilon_i (None for a non-private client).
    batch_size: b_i as used (capped to N_i).
    num_examples: N_i.
    steps: E x E_i, the DP-SGD steps of the whole run.
    noise_multiplier: z_i (None for a non-private client).
  """
  epsilon: Optional[float]
  batch_size: int
  num_examples: int
  steps: int
  noise_multiplier: Optional[float]

  @property
  def sampling_rate(self) -> float:
    return self.batch_size / self.num_examples


def load_distribution(name: str, num_clients: int,
                      path: str = REFERENCE_CSV
                     ) -> tuple[list[float], list[int]]:
  """(epsilons, batch_sizes) of distribution `name` for `num_clients`.

  Raises:
    ValueError: Unknown distribution or client count.
  """
  if name not in DISTRIBUTIONS:
    raise ValueError(f'unknown privacy distribution {name!r}; allowed: '
                     f'{", ".join(DISTRIBUTIONS)}')
  if num_clients not in CLIENT_COUNTS:
    raise ValueError(f'distribution {name} is given for '
                     f'{", ".join(map(str, CLIENT_COUNTS))} clients, not '
                     f'{num_clients}')
  rows = []
  with open(path, newline='', encoding='utf-8') as f:
    for row in csv.DictReader(f):
      if row['distribution'] == name and int(row['num_clients']) == num_clients:
        rows.append((int(row['client']), float(row['epsilon']),
                     int(row['batch_size'])))
  rows.sort()
  if [r[0] for r in rows] != list(range(num_clients)):
    raise ValueError(f'{path}: distribution {name} with {num_clients} clients '
                     'is incomplete')
  return [r[1] for r in rows], [r[2] for r in rows]


def calibration_accountant(name: str = 'rdp',
                           conversion: str = 'improved'
                           ) -> accounting.Accountant:
  """How a calibration accounts epsilon: the accountant `name` with RDP's
  `conversion` on that conversion's orders.

  Args:
    name: 'rdp' or 'pld' (`dp_accounting`'s PLD accountant, the tightest:
      less noise for the same epsilon; the conversion does not apply).
    conversion: 'improved' (ours: `dp_accounting`'s conversion on `ORDERS`)
      or 'classic' (the authors' Opacus accounting: the classic RDP
      conversion on Opacus's default orders, which reproduces paper 003's
      Table 2; more noise for the same epsilon).
  """
  return accounting.Accountant(name, orders=_orders(conversion),
                               conversion=conversion)


def calibrate(epsilons: Sequence[Optional[float]],
              batch_sizes: Sequence[int],
              num_examples: Sequence[int],
              *,
              rounds: int,
              local_epochs: int,
              delta: float,
              epsilon_floor: Optional[float] = None,
              accountant: Union[str, accounting.Accountant] = 'rdp'
              ) -> list[ClientPrivacy]:
  """Every client's z_i for its target epsilon_i (see module doc).

  Args:
    epsilons: epsilon_i > 0, or None for a non-private client.
    batch_sizes: b_i >= 1; capped to N_i (documented in docs/privacy.md).
    num_examples: N_i >= 1.
    rounds: E.
    local_epochs: K (the same for every client).
    delta: delta of every client.
    epsilon_floor: If given, every client runs at min(epsilon_i, floor)
      (the "minimum epsilon" baseline passes min_i epsilon_i).
    accountant: How epsilon is accounted, an `accounting.Accountant`
      (`calibration_accountant('rdp', 'classic')`: the authors' Opacus
      accounting), or a name, 'rdp' or 'pld', for
      `calibration_accountant(name)` (the improved conversion on `ORDERS`).
  """
  if isinstance(accountant, str):
    accountant = calibration_accountant(accountant)
  accountant_terms = (accountant.name, accountant.orders, accountant.conversion)
  if not len(epsilons) == len(batch_sizes) == len(num_examples):
    raise ValueError('epsilons, batch_sizes and num_examples differ in length')
  clients = []
  for eps, b, n in zip(epsilons, batch_sizes, num_examples):
    if b < 1 or n < 1:
      raise ValueError(f'batch sizes and dataset sizes must be >= 1, got b={b} '
                       f'N={n}')
    b = min(int(b), int(n))
    steps = rounds * local_epochs * math.ceil(n / b)
    target = (None if eps is None else
              min(eps, epsilon_floor) if epsilon_floor is not None else eps)
    clients.append((target, b, int(n), steps))
  zs = iter(noise_multipliers([(t, b / n, steps, delta, *accountant_terms)
                               for t, b, n, steps in clients if t is not None]))
  return [
      ClientPrivacy(None if t is None else float(t), b, n, steps,
                    None if t is None else next(zs))
      for t, b, n, steps in clients
  ]


# (epsilon, rate, steps, delta, accountant, orders, conversion) -> z, for
# every calibration of this process: every rule of a comparison calibrates
# the same clients.
_NOISE_MULTIPLIERS = {}

# The fewest calibrations a worker process of `_calibrate_elsewhere` takes:
# a new Python spends about 0.7 s importing the accountant, about what one
# calibration takes, so fewer than this many a worker run sooner, and with
# less processor time, one after another in this process.
MIN_CALIBRATIONS_PER_WORKER = 4


def noise_multipliers(calibrations) -> list[float]:
  """z for each (epsilon, rate, steps, delta, accountant name, RDP orders,
  conversion), by `accounting.noise_multiplier_for_epsilon`.

  A calibration takes about a second (`dp_accounting`'s RDP, in Python, at
  each of ~80 orders, ~12 times), so the ones not yet known run in parallel,
  one Python process per core (`_calibrate_elsewhere`) when each gets at
  least `MIN_CALIBRATIONS_PER_WORKER` of them (else in this process), and
  every result is remembered for this process. Either way each z is
  `_calibrate`'s, bit for bit.
  """
  calibrations = [tuple(c) for c in calibrations]
  todo = [c for c in dict.fromkeys(calibrations) if c not in _NOISE_MULTIPLIERS]
  workers = min(len(todo) // MIN_CALIBRATIONS_PER_WORKER, os.cpu_count() or 1)
  if workers > 1:
    _NOISE_MULTIPLIERS.update(zip(todo, _calibrate_elsewhere(todo, workers)))
  else:
    _NOISE_MULTIPLIERS.update((c, _calibrate(c)) for c in todo)
  return [_NOISE_MULTIPLIERS[c] for c in calibrations]


# What each worker process runs: the calibrations as JSON on stdin, the z's
# as JSON on stdout (floats round-trip exactly through JSON).
_WORKER = ('import json, sys; '
           'from tff_hdp.robust_hdp import privacy_preferences as p; '
           'print(json.dumps([p._calibrate(tuple(c)) '
           'for c in json.load(sys.stdin)]))')


def _calibrate_elsewhere(todo, workers: int) -> list[float]:
  """`_calibrate` of each of `todo`, shared among `workers` new Pythons.

  Not `multiprocessing`: its start methods that are safe beside TensorFlow's
  threads (spawn, forkserver) re-import the caller's `__main__` in every
  child, so a script without an `if __name__ == '__main__':` guard re-runs
  itself there and the pool breaks (`BrokenProcessPool`). A fresh
  interpreter that runs only `_WORKER` imports nothing of the caller's.
  """
  chunks = [todo[i::workers] for i in range(workers)]
  package_root = os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))))
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      p for p in (package_root, os.environ.get('PYTHONPATH')) if p))

  def run(chunk):
    result = subprocess.run([sys.executable, '-c', _WORKER],
                            input=json.dumps(chunk), capture_output=True,
                            text=True, env=env, check=False)
    if result.returncode != 0:
      last = (result.stderr.strip().splitlines() or ['no output'])[-1]
      raise RuntimeError(f'a calibration worker failed: {last}')
    return json.loads(result.stdout)

  with concurrent.futures.ThreadPoolExecutor(workers) as pool:
    done = list(pool.map(run, chunks))
  by_calibration = {}
  for chunk, zs in zip(chunks, done):
    by_calibration.update(zip(chunk, zs))
  return [float(by_calibration[c]) for c in todo]


def _calibrate(calibration) -> float:
  epsilon, rate, steps, delta, accountant, orders, conversion = calibration
  return float(accounting.noise_multiplier_for_epsilon(
      epsilon, rate, steps, delta, accountant=accounting.Accountant(
          accountant, orders=orders, conversion=conversion)))


def _orders(conversion: str) -> tuple[float, ...]:
  return OPACUS_ORDERS if conversion == 'classic' else ORDERS


def achieved_epsilon(client: ClientPrivacy, delta: float,
                     conversion: str = 'improved',
                     accountant: str = 'rdp') -> Optional[float]:
  """epsilon of the client's run at its z_i (None if non-private)."""
  if client.noise_multiplier is None:
    return None
  return _epsilon(client.sampling_rate, client.noise_multiplier, client.steps,
                  delta, conversion, accountant)


@functools.lru_cache(maxsize=4096)
def _epsilon(rate: float, z: float, steps: int, delta: float,
             conversion: str, accountant: str) -> float:
  return accounting.compute_epsilon(rate, z, steps, delta,
                                    orders=_orders(conversion),
                                    conversion=conversion,
                                    accountant=accountant)
