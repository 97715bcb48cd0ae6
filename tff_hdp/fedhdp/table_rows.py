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
"""Result rows in the layout of paper 001's Tables 2, 3 and 8-11.

Columns: Algorithm | hyperparam. | Acc_g% | Acc_g,p% | Acc_g,np% | Delta_g% |
Acc_l,p% | Acc_l,np% | Delta_l%, with the variance across clients (100 x the
variance of the per-client accuracy as a fraction) in parentheses, and '-'
where a column does not apply. Format them with `tff_hdp.tables`; `table`
is `run_scripts/run_fedhdp.py`'s whole table, with the line saying what its
epsilons are and the claim line of `tff_hdp.claims.fedhdp`.
TensorFlow-free.
"""

import dataclasses
import types
from typing import Any, Mapping, Optional, Sequence

from tff_hdp import claims
from tff_hdp import tables
from tff_hdp.fedhdp import algorithm as algorithm_lib
from tff_hdp.fedhdp import algorithm_registry
from tff_hdp.fedhdp import presets
import tff_hdp.fedhdp.algorithms  # pylint: disable=unused-import  # Registered.

HEADER = ('Algorithm', 'hyperparam.', 'Acc_g%', 'Acc_g,p%', 'Acc_g,np%',
          'Delta_g%', 'Acc_l,p%', 'Acc_l,np%', 'Delta_l%', 'epsilon')



def recorded_algorithm(config: Mapping[str, Any]
                       ) -> Optional[algorithm_lib.Algorithm]:
  """The registered algorithm a recorded config (a results.json's, or a
  `FedHdpConfig`) ran, with its settings; None for a name not registered
  here."""
  if not isinstance(config, Mapping):
    config = dataclasses.asdict(config)
  if config['algorithm'] not in algorithm_registry.names():
    return None
  return algorithm_registry.get(config['algorithm']).configured(
      types.SimpleNamespace(**config))


def algorithm_label(name: str) -> str:
  """The table row's name of the algorithm called `name` (its label)."""
  if name not in algorithm_registry.names():
    return name
  return algorithm_registry.get(name).label


def _cell(mean: Optional[float], var: Optional[float] = None) -> str:
  if mean is None:
    return '-'
  return f'{mean:.2f}' if var is None else f'{mean:.2f}({var:.2f})'


# Training settings a row names when they are not its dataset's preset's
# (paper 001's Table 7): (config key, label).
_TRAINING_SETTINGS = (('local_epochs', 'E'), ('batch_size', 'B'),
                      ('learning_rate', 'eta'),
                      ('personal_learning_rate', 'eta_p'))


# The adaptive clip's settings, named the same way on a private row.
_CLIP_SETTINGS = (('initial_clip', 'S0'), ('clip_learning_rate', 'eta_b'),
                  ('target_quantile', 'kappa'))


def _other(config, preset, settings) -> list[str]:
  """'label=value' for each (key, label) of `settings` whose value in
  `config` is not `preset`'s."""
  return [f'{label}={config[key]:g}' for key, label in settings
          if config.get(key) is not None and config[key] != getattr(preset, key)]


def _departures(record: Mapping[str, Any]) -> list[str]:
  """What makes a run an ablation, so that it never sits unlabelled beside
  the paper's cell: the noise off or another z_eff, a held clip, training
  settings other than the preset's, other draws of the clients' images,
  Ditto models started from theta^0."""
  config = record['config']
  preset = presets.PRESETS.get(record.get('dataset'))
  labels = []
  algorithm = recorded_algorithm(config)
  if algorithm is None or algorithm.noised:
    z = config.get('noise_multiplier')
    if z == 0:
      labels.append('noise off')
    elif preset is not None and z is not None and z != preset.noise_multiplier:
      labels.append(f'z_eff={z:g}')
    if config.get('clip_learning_rate') == 0:
      labels.append(f"clip fixed at {config['initial_clip']:g}")
    elif preset is not None:
      labels.extend(_other(config, preset, _CLIP_SETTINGS))
  if preset is not None:
    labels.extend(_other(config, preset, _TRAINING_SETTINGS))
    decay = config.get('lr_decay_factor')
    if decay is not None and decay != preset.lr_decay_factor:
      labels.append('no decay' if decay == 1 else f'decay={decay:g}')
  if record.get('client_draw'):
    count = record.get('examples_per_client')
    labels.append(f"{record['client_draw']} draws" +
                  ('' if count is None else f' of {count}'))
  if config.get('ditto') and config.get('ditto_init') == 'initial':
    labels.append('Ditto from theta^0')
  return labels


def run_row(record: Mapping[str, Any]) -> list[str]:
  """One table row from a results record of `tff_hdp.fedhdp.training.train`."""
  config, m = record['config'], record['metrics']
  name = algorithm_label(config['algorithm'])
  if config.get('ditto'):
    name += '+Ditto'
  algorithm = recorded_algorithm(config)
  hyper = algorithm.table_settings() if algorithm else []
  if config.get('ditto'):
    hyper.append(f"lp={config['lambda_p']},lnp={config['lambda_np']}")
  hyper.extend(_departures(record))
  eps = record.get('epsilon') or {}
  mark = '~' if is_approximation(record) else ''
  return [
      name, ' '.join(hyper) or '-',
      _cell(m['acc_g']),
      _cell(m['acc_g_p'], m['acc_g_p_var']),
      _cell(m['acc_g_np'], m['acc_g_np_var']),
      _cell(m['delta_g']),
      _cell(m['acc_l_p'], m['acc_l_p_var']),
      _cell(m['acc_l_np'], m['acc_l_np_var']),
      _cell(m['delta_l']),
      ','.join(f'{mark}{v:.2f}' for v in eps.values()) or '-',
  ]


def _run_label(record: Mapping[str, Any]) -> str:
  """A run as the lines under a table name it: its row's algorithm and
  hyperparameters, and its seed."""
  name, hyper = run_row(record)[:2]
  seed = record['config'].get('seed')
  return f'{name} {hyper}' + ('' if seed is None else f' seed={seed}')


def clip_norm_line(records: Sequence[Mapping[str, Any]]) -> str:
  """The adaptive clip norm S^t of each private run over its rounds (mean,
  largest, last), from its history: the noise of a round is z S^t, so a
  run's noise follows S^t. '' if no run is private or records S^t."""
  cells = []
  for record in records:
    norms = [h['clip_norm'] for h in record.get('history', ())
             if h.get('clip_norm') is not None]
    if norms and record.get('epsilon'):
      cells.append(f'{_run_label(record)}: {sum(norms) / len(norms):.3f}, '
                   f'{max(norms):.3f}, {norms[-1]:.3f}')
  return ('Clip norm S^t over the rounds (mean, largest, last): ' +
          '; '.join(cells)) if cells else ''


def personal_pool_line(records: Sequence[Mapping[str, Any]]) -> str:
  """Each run's Ditto models on their label's held-out images (Acc_l
  without the few test images a client has) and on their own training
  images, private / non-private, from `results.json`'s 'personal_models'
  (runs on a split of one label per client). '' if no run has them."""
  def pair(block, kind):
    return ' / '.join('-' if block.get(f'acc_l_{kind}_{g}') is None else
                      f"{block[f'acc_l_{kind}_{g}']:.2f}" for g in ('p', 'np'))

  cells = []
  for record in records:
    block = record.get('personal_models')
    if block:
      cells.append(f"{_run_label(record)}: {pair(block, 'pool')}; "
                   f"{pair(block, 'train')}")
  return ("Ditto models, % on every held-out image of their client's label; "
          'on their own training images (private / non-private): ' +
          '; '.join(cells)) if cells else ''


def is_approximation(record: Mapping[str, Any]) -> bool:
  """Whether a run's epsilon is only the Poisson approximation: Poisson
  cohorts with realised denominators."""
  config = record['config']
  return (config.get('poisson_sampling', True) and
          config.get('denominators') == 'realised')


def epsilon_line(records: Sequence[Mapping[str, Any]]) -> str:
  """One line saying what the table's epsilons are ('' if none has one).

  The runs of one table share their sampling, denominators, accountant and
  mechanism seed; the line is read off the first record with an epsilon.
  """
  private = [r for r in records if r.get('epsilon')]
  if not private:
    return ''
  privacy, config = private[0]['privacy'], private[0]['config']
  at = f"delta={config['delta']:g}, accountant {config['accountant']}"
  if is_approximation(private[0]):
    line = (f'~epsilon: the Poisson approximation ({at}), NOT a bound: with '
            'Poisson cohorts the realised denominators reveal who took part '
            '(--denominators=expected gives a bound)')
  elif privacy['sampling'] == 'fixed cohort':
    line = (f"epsilon: a bound under replace-one neighbours ({at}): a fixed "
            f"cohort of {config['clients_per_round']} drawn without "
            'replacement (not comparable to add/remove-one epsilons)')
  else:
    line = (f"epsilon: a bound under add/remove-one-client neighbours ({at}): "
            f"Poisson cohorts at q={config['sampling_rate']:g}, "
            f"{privacy['denominators']} denominators")
  return line + claims.mechanism_caveat(private)


def table(records: Sequence[Mapping[str, Any]]) -> str:
  """The comparison table as text: a row per run, then the epsilon line (if
  any run has an epsilon) and the claim line."""
  rows = [run_row(r) for r in records]
  text = tables.format_text(rows, HEADER)
  line = epsilon_line(records)
  text += '\n' + line if line else ''
  return text + '\n' + claims.fedhdp(
      {row[0]: r['metrics']['acc_g'] for row, r in zip(rows, records)},
      {row[0]: max(r['epsilon'].values()) if r['epsilon'] else None
       for row, r in zip(rows, records)},
      is_bound=not any(is_approximation(r) for r in records),
      roles={row[0]: _role(r['config']['algorithm'])
             for row, r in zip(rows, records)}
  ) + claims.mechanism_caveat(records)


def _role(name: str) -> Optional[str]:
  """The role of the algorithm called `name` (None if not registered)."""
  if name not in algorithm_registry.names():
    return None
  return algorithm_registry.get(name).role


def title(dataset: str, num_clients: int, config) -> str:
  """The table's title line: the data and `config`'s (a `FedHdpConfig`)
  sampling, rounds and delta."""
  cohort = (f'q={config.sampling_rate:g} (Poisson)'
            if config.poisson_sampling else
            f'clients_per_round={config.clients_per_round} (fixed)')
  return (f'dataset={dataset} clients={num_clients} '
          f'rounds={config.rounds} {cohort} '
          f'denominators={config.denominators} delta={config.delta}')


def run_name(config) -> str:
  """A run's name (its record's, its checkpoints' and summaries'
  directory): the algorithm, and FedHDP's r of each private level."""
  algorithm = recorded_algorithm(config)
  return config.algorithm + (algorithm.run_suffix() if algorithm else '')


def summary(record: Mapping[str, Any]) -> str:
  """The line printed when a run ends: its metrics and epsilons."""
  return ' '.join(
      f'{k}={v:.2f}' for k, v in record['metrics'].items()
      if v is not None and not k.endswith('_var')) + ' ' + ' '.join(
          f'epsilon[{g}]={e:.3f}' for g, e in record['epsilon'].items())
