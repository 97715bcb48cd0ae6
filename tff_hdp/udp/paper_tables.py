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
"""Paper 004's quoted numbers beside ours (UDP-Alg's Figures 2-3).

Paper 004 prints no table (the module has the name of its counterparts in
FedHDP and Robust-HDP, which hold their papers' tables); its text quotes six
numbers (accuracy at an epsilon, or the gap to Noiseless), transcribed with
their words in `tff_hdp/udp/reference/paper004_quoted.csv` (package data,
read with `importlib.resources`). A quote that names (S, sigma) is compared
with that curve of ours at the largest evaluated epsilon not above
the quoted one (or its last point when the quote gives no epsilon); one that
does not is compared with the best of our curves at that epsilon. A run's
curve is its (epsilon, accuracy) at every evaluation (`training.train`'s
history). TensorFlow-free.
"""

import csv
from importlib import resources
from typing import Optional

from tff_hdp.udp import algorithm_registry
import tff_hdp.udp.algorithms  # pylint: disable=unused-import  # Registered.

# Package data (setup.py's package_data), found wherever tff_hdp is installed.
REFERENCE_CSV = (resources.files('tff_hdp.udp') / 'reference' /
                 'paper004_quoted.csv')


def proposed() -> str:
  """The registered variant the sweeps run on the (S, sigma) grid: the
  proposed one (UDP-Alg)."""
  return next(n for n in algorithm_registry.names()
              if algorithm_registry.get(n).role == 'proposed')


def ceiling() -> str:
  """The registered variant the sweeps draw as the ceiling: the one whose
  round neither clips nor adds noise, on Poisson cohorts (Noiseless)."""
  return next(n for n in algorithm_registry.names() if not any(
      getattr(algorithm_registry.get(n), a)
      for a in ('clips', 'private', 'one_user_per_step')))


def run_name(pair: Optional[tuple[float, float]]) -> str:
  """A sweep run's name: S<S>_sigma<sigma>, or the ceiling's (`ceiling`)."""
  return ceiling() if pair is None else f'S{pair[0]:g}_sigma{pair[1]:g}'


def curve(record) -> tuple[list[float], list[float]]:
  """(epsilons, accuracies) at the run's evaluations."""
  points = [(h['epsilon'], h['accuracy']) for h in record['history']
            if 'accuracy' in h and 'epsilon' in h]
  return [p[0] for p in points], [p[1] for p in points]


def accuracy_at(record, epsilon: Optional[float]) -> Optional[float]:
  """Accuracy at the largest evaluated epsilon <= `epsilon` (last if None)."""
  eps, acc = curve(record)
  if epsilon is None:
    return acc[-1] if acc else None
  below = [a for e, a in zip(eps, acc) if e <= epsilon]
  return below[-1] if below else None


def reference_rows(dataset: str) -> list[dict]:
  with REFERENCE_CSV.open(newline='', encoding='utf-8') as f:
    return [r for r in csv.DictReader(f) if r['dataset'] == dataset]


def _number(text: str) -> Optional[float]:
  return float(text) if text else None


def comparison(runs: dict[str, dict], dataset: str) -> list[list[str]]:
  """The paper's quoted numbers beside ours (one row per quote)."""
  noiseless = runs.get(ceiling())
  base = (noiseless['metrics']['accuracy_mean'] if noiseless else None)
  rows = []
  for ref in reference_rows(dataset):
    epsilon = _number(ref['epsilon'])
    if ref['clip']:
      pair = (float(ref['clip']), float(ref['noise_stddev']))
      candidates = [runs.get(run_name(pair))]
    else:
      candidates = [r for name, r in runs.items() if name != ceiling()]
    values = [accuracy_at(r, epsilon) for r in candidates if r is not None]
    values = [v for v in values if v is not None]
    ours = max(values) if values else None
    if ref['quantity'] == 'gap_to_noiseless' and ours is not None:
      ours = None if base is None else base - ours
    rows.append([
        ref['quantity'], ref['epsilon'] or '—',
        f'{ref["clip"] or "any"} / {ref["noise_stddev"] or "any"}',
        ref['value'], '—' if ours is None else f'{ours:.2f}'])
  return rows


