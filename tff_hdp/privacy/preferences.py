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
"""What each client asks of a heterogeneous-DP process: one declared type.

The three systems take their clients' choices in one `Preferences`, entry i
being client i of the process (a ClientData's `client_ids` order, or a
`FederatedData`'s):

    fedhdp.build_fedhdp_process(model, Preferences(levels=(0, None, 1)))
    robust_hdp.build_robust_hdp_process(
        model, Preferences(epsilons=(1.0, 5.0), batch_sizes=(16, 64),
                           num_examples=(600, 600)))
    udp.build_udp_process(model, Preferences(num_examples=(600, 450)))

Each system reads what its mechanism honours and refuses, in one line, a
choice it cannot honour (FedHDP's clients choose a level of its noise
multipliers, not an epsilon; UDP-Alg gives every user one user-level
epsilon). TensorFlow-free.
"""

import dataclasses
from typing import Optional, Sequence

import numpy as np

# What each system reads (required) and honours (the others are refused).
_FIELDS = ('num_examples', 'levels', 'epsilons', 'batch_sizes')


@dataclasses.dataclass(frozen=True)
class Preferences:
  """Per client, in the process's client order (module doc).

  Attributes:
    levels: FedHDP: its privacy level, an index into the config's
      `noise_multiplier` (0: the strictest), or None to opt out of privacy.
    epsilons: Robust-HDP: its target epsilon_i, or None for no privacy.
    batch_sizes: Robust-HDP: its DP-SGD batch size b_i.
    num_examples: Its training examples N_i (Robust-HDP's calibration and
      weights; UDP-Alg's user weights w_u).
  """
  levels: Optional[tuple[Optional[int], ...]] = None
  epsilons: Optional[tuple[Optional[float], ...]] = None
  batch_sizes: Optional[tuple[int, ...]] = None
  num_examples: Optional[tuple[int, ...]] = None

  def __post_init__(self):
    lengths = {}
    for name in _FIELDS:
      values = getattr(self, name)
      if values is None:
        continue
      if isinstance(values, (str, bytes)) or not isinstance(
          values, (Sequence, np.ndarray)):
        raise TypeError(f'Preferences.{name} must be a sequence with one '
                        f'entry per client, got {type(values).__name__}')
      values = tuple(None if v is None else _number(v) for v in values)
      object.__setattr__(self, name, values)
      lengths[name] = len(values)
    if len(set(lengths.values())) > 1:
      raise ValueError('Preferences must give every client one entry in each '
                       f'field, got lengths {lengths}')
    for name in ('batch_sizes', 'num_examples'):
      values = getattr(self, name)
      if values is not None and not all(
          isinstance(v, int) and v >= 0 for v in values):
        raise ValueError(f'Preferences.{name} must be integers >= 0, got '
                         f'{list(values)}')

  @property
  def num_clients(self) -> Optional[int]:
    """The clients (None if no field is given)."""
    for name in _FIELDS:
      if getattr(self, name) is not None:
        return len(getattr(self, name))
    return None

  def checked(self, system: str, required: Sequence[str],
              honoured: Sequence[str] = ()) -> 'Preferences':
    """Itself, or a one-line error: a `required` field missing, or a field
    given that `system` does not honour (neither required nor `honoured`).
    """
    for name in required:
      if getattr(self, name) is None:
        raise ValueError(f'{system} needs preferences.{name} (one entry per '
                         'client)')
    for name in _FIELDS:
      if (getattr(self, name) is not None and name not in required and
          name not in honoured):
        raise ValueError(f'{system} cannot honour preferences.{name}: it '
                         f'reads {", ".join(tuple(required) + tuple(honoured))}'
                         f'{_WHY.get((system, name), "")}')
    return self


def as_preferences(preferences) -> Preferences:
  """`preferences` if a `Preferences`, else a one-line TypeError (a config
  passed where the preferences go names the keyword it belongs to)."""
  if isinstance(preferences, Preferences):
    return preferences
  hint = (' (pass the config as config=)'
          if type(preferences).__name__.endswith('Config') else '')
  raise TypeError('preferences must be a tff_hdp.privacy.Preferences, got '
                  f'{type(preferences).__name__}{hint}')


def _number(value):
  """A plain Python int or float of a numpy or Python number."""
  if isinstance(value, (bool, np.bool_)):
    raise TypeError(f'a preference must be a number or None, got {value!r}')
  if isinstance(value, (int, np.integer)):
    return int(value)
  if isinstance(value, (float, np.floating)):
    return float(value)
  raise TypeError(f'a preference must be a number or None, got {value!r}')


_WHY = {
    ('FedHDP', 'epsilons'): ' (its clients choose a level of '
                            'FedHdpConfig.noise_multiplier, or None to opt '
                            'out)',
    ('UDP-Alg', 'epsilons'): ' (every user has one user-level epsilon, '
                             'from UdpConfig.noise_multiplier)',
    ('UDP-Alg', 'levels'): ' (every user has one user-level epsilon, '
                           'from UdpConfig.noise_multiplier)',
    ('Robust-HDP', 'levels'): ' (its clients choose an epsilon, '
                              'preferences.epsilons)',
}
