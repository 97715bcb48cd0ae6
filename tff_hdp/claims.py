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
"""Whether each paper's headline claim holds in a run, as one line.

Every binary prints one such line under its comparison table, computed only
from the numbers in that table, so a reader never has to infer it and a
regression shows as a "no". The claims are the papers' own:

- FedHDP (paper 001, Tables 2-3, 8-11): at the same epsilon, FedHDP's global
  model is more accurate than DP-FedAvg's and HDP-FedAvg's.
- Robust-HDP (paper 003, Figure 2): Robust-HDP is at least as accurate as
  every private baseline run beside it (every rule whose role is
  'baseline': WeiAvg, PFA, DPFedAvg, minimum epsilon, and any registered
  later), and close to the Oracle, which knows every client's noise.
- UDP-Alg (paper 004, Section 5): user-level DP at a moderate epsilon keeps
  most of Noiseless's accuracy; the clip-only run (z = 0) splits the cost
  into what clipping costs and what the noise costs.

TensorFlow-free.
"""

from typing import Any, Mapping, Optional, Sequence

_YES = {True: 'yes', False: 'no'}


def _best(accuracies: Mapping[str, float]) -> tuple[str, float]:
  name = max(accuracies, key=accuracies.get)
  return name, accuracies[name]


def fedhdp(accuracies: Mapping[str, float],
           epsilons: Mapping[str, Optional[float]],
           is_bound: bool = True,
           roles: Optional[Mapping[str, str]] = None) -> str:
  """FedHDP's claim from the global accuracies (%) and each run's epsilon.

  Args:
    accuracies: Global-model accuracy by table name, e.g. 'FedHDP+Ditto',
      'DP-FedAvg+Ditto', 'HDP-FedAvg+Ditto'.
    epsilons: The private group's epsilon by the same names (None if none).
    is_bound: False when the epsilons are only the Poisson approximation
      (`PrivacyLedger.is_bound`): the line then says so.
    roles: Each name's role (`tff_hdp.fedhdp.algorithm.Algorithm.role`):
      the 'proposed' one against every 'baseline' (others are ignored). By
      default read from the names: FedHDP proposed, DP-FedAvg and
      HDP-FedAvg baselines.
  """
  if roles is None:
    roles = {n: 'proposed' if n.startswith('FedHDP') else 'baseline'
             for n in accuracies if n.startswith(('FedHDP', 'DP-FedAvg',
                                                  'HDP-FedAvg'))}
  ours = {n: a for n, a in accuracies.items() if roles.get(n) == 'proposed'}
  rivals = {n: a for n, a in accuracies.items()
            if roles.get(n) == 'baseline'}
  paper = all(n.startswith(('DP-FedAvg', 'HDP-FedAvg')) for n in rivals)
  claim = ('FedHDP above ' + ('DP-FedAvg and HDP-FedAvg' if paper else
                              'every private baseline') +
           ' at the same epsilon')
  if len(ours) != 1 or not rivals:
    return (f'{claim}: not checked (needs FedHDP and at least one of them in '
            'the table)')
  (name, acc), = ours.items()
  rival, rival_acc = _best(rivals)
  same = len({epsilons.get(n) for n in [name, *rivals]}) == 1
  holds = acc > rival_acc and same
  eps = epsilons.get(name)
  at = f' at epsilon {eps:.2f}' if same and eps is not None else (
      '' if same else ' (epsilons differ)')
  if same and eps is not None and not is_bound:
    at = f' at epsilon ~{eps:.2f} (the Poisson approximation, not a bound)'
  return (f'{claim}: {_YES[holds]} ({acc:.2f} vs {rival_acc:.2f}, '
          f'{rival}){at}')


def mechanism_caveat(records: Sequence[Mapping]) -> str:
  """What a claim line adds when a run's noise and sampling were
  reproducible from a published `mechanism_seed` (results records'
  `config`): '' when every run's mechanism key was secret."""
  seeds = sorted({r['config'].get('mechanism_seed') for r in records} -
                 {None})
  if not seeds:
    return ''
  return ('; epsilon is the mechanism\'s, NOT a guarantee for these '
          'outputs: their noise and sampling can be regenerated from the '
          f'published mechanism_seed={",".join(str(s) for s in seeds)}')


def robust_hdp(accuracies: Mapping[str, float], roles: Mapping[str, str],
               oracle_points: float = 2.0) -> str:
  """Robust-HDP's claim from the mean accuracies (%) by table name.

  `roles` gives each name's role (`tff_hdp.robust_hdp.rule.Rule.role`,
  from the registry): the proposed rule is compared with every 'baseline'
  run and the 'oracle'; the others ('ours', 'reference') are left out.
  """
  proposed = [n for n in accuracies if roles.get(n) == 'proposed']
  if not proposed:
    return 'Robust-HDP >= every private baseline: not checked (not run)'
  ours = accuracies[proposed[0]]
  baselines = {n: a for n, a in accuracies.items()
               if roles.get(n) == 'baseline'}
  parts = []
  if baselines:
    rival, rival_acc = _best(baselines)
    parts.append(f'Robust-HDP >= every private baseline run '
                 f'({", ".join(baselines)}): {_YES[ours >= rival_acc]} '
                 f'({ours:.2f} vs {rival_acc:.2f}, {rival})')
  else:
    parts.append('Robust-HDP >= every private baseline: not checked (none '
                 'run)')
  oracles = [n for n in accuracies if roles.get(n) == 'oracle']
  if oracles:
    bound = accuracies[oracles[0]]
    parts.append(f'within {oracle_points:g} points of the Oracle: '
                 f'{_YES[ours >= bound - oracle_points]} ({ours:.2f} vs '
                 f'{bound:.2f})')
  return '; '.join(parts)


def udp(runs: Mapping[str, tuple[float, Optional[float]]],
        variants: Mapping[str, Any], max_epsilon: float = 8.0,
        min_accuracy: float = 60.0) -> str:
  """UDP-Alg's claim from {algorithm: (mean accuracy %, epsilon or None)}.

  `variants` gives each name's variant (`tff_hdp.udp.algorithm.Algorithm`,
  from the registry), read by what its round does: the claim is the
  proposed private variant's, epsilon <= `max_epsilon` with accuracy >=
  `min_accuracy`; a variant that clips without noise (clip only) and one
  that neither clips nor adds noise on the same cohorts (noiseless) split
  its cost; one user a step (pFedHN) is left out.
  """
  def named(kind):
    return next((n for n in runs if n in variants and kind(variants[n])),
                None)

  ours = named(lambda v: v.private and v.role == 'proposed')
  clip_only = named(lambda v: v.clips and not v.private)
  noiseless = named(
      lambda v: not (v.clips or v.private or v.one_user_per_step))
  if ours is None:
    return 'UDP-Alg: not checked (not run)'
  acc, eps = runs[ours]
  holds = eps is not None and eps <= max_epsilon and acc >= min_accuracy
  line = (f'UDP-Alg at epsilon <= {max_epsilon:g} with accuracy >= '
          f'{min_accuracy:g}%: {_YES[holds]} (epsilon '
          f'{"none" if eps is None else f"{eps:.2f}"}, {acc:.2f}%')
  if noiseless is not None:
    ceiling = runs[noiseless][0]
    line += f', {100 * acc / ceiling:.0f}% of Noiseless\'s {ceiling:.2f}'
  line += ')'
  if clip_only is not None and noiseless is not None:
    clipped = runs[clip_only][0]
    line += (f'; clipping costs {ceiling - clipped:.2f} points '
             f'(clip only {clipped:.2f}), the noise {clipped - acc:.2f} '
             'more')
  return line
