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
"""The populations HDP-Bench runs every method on: a few clients with much
data each, and many clients with little.

- `cross_silo`: paper 003's split (`datasets.load_robust_hdp_data`): 20
  clients of 250 of the 5,000 MNIST images, 10 label-sorted shards each,
  the authors' cnn5, 20 rounds; the client-level methods sample half the
  clients a round. Its preferences: paper 003's Dist1-Dist9.
- `cross_device`: paper 001's non-IID MNIST (`datasets.load_fedhdp_data`,
  one digit per client): the full MNIST's 2,000 clients of 30 images,
  cohorts of q = 0.05 (paper 001's Table 5), the FC NN, 200 rounds; with
  `quick`, the 200 clients of the 5,000 images at q = 0.2 for 100 rounds,
  `make demo`'s FedHDP setting. Its preferences: a mixture (paper 001's
  levels), since Dist1-Dist9 hold 20, 40 or 60 clients only.

Client-level DP needs many clients a round: a level's mean over k clients
carries z S / k of noise a coordinate, so at 20 clients (k about 5) it
drowns the updates, and at a cohort of 40 or 100 it does not. Every method
of a population shares its clients, rounds, delta and local training.
TensorFlow-free.
"""

import dataclasses
from typing import Optional

from tff_hdp.bench import method


@dataclasses.dataclass(frozen=True)
class Population:
  """How to build one population's `method.Setting`.

  Attributes:
    name: Its name in the leaderboard.
    split: 'shards' (paper 003's, `load_robust_hdp_data`) or 'one_label'
      (paper 001's non-IID split, `load_fedhdp_data`).
    dataset: The loader's dataset name.
    num_clients: n.
    model, rounds, sampling_rate, local_epochs, learning_rate, batch_size:
      The setting's (`method.Setting`).
    distributions: Its default preferences among Dist1-Dist9.
    mixtures: Its default preferences among `preferences.MIXTURES`.
  """
  name: str
  split: str
  dataset: str
  num_clients: int
  model: str
  rounds: int
  sampling_rate: float
  local_epochs: int
  learning_rate: float
  batch_size: int
  distributions: tuple[str, ...] = ()
  mixtures: tuple[str, ...] = ()

  def words(self) -> str:
    """One line for a caption."""
    return (f'{self.name}: dataset={self.dataset} clients={self.num_clients} '
            f'rounds={self.rounds} q={self.sampling_rate:g} '
            f'model={self.model} E={self.local_epochs} '
            f'lr={self.learning_rate:g} b={self.batch_size}')

  def load(self, data_dir: Optional[str] = None):
    """The clients (`FederatedData`), split with the public seed 0.

    Raises:
      ValueError: An unknown dataset or an impossible number of clients.
      tff_hdp.datasets.DataFileError: A file is missing or unusable.
    """
    from tff_hdp import datasets  # pylint: disable=g-import-not-at-top
    if self.split == 'shards':
      return datasets.load_robust_hdp_data(
          self.dataset, num_clients=self.num_clients, data_dir=data_dir)
    return datasets.load_fedhdp_data(self.dataset, data_dir=data_dir,
                                     num_clients=self.num_clients)

  def setting(self, data, *, delta: float,
              accountant: str) -> method.Setting:
    """The `method.Setting` of `data` (`load`'s)."""
    return method.Setting(
        data=data, rounds=self.rounds, delta=delta, model=self.model,
        local_epochs=self.local_epochs, learning_rate=self.learning_rate,
        batch_size=self.batch_size, accountant=accountant,
        sampling_rate=self.sampling_rate, population=self.name)


_CROSS_SILO = Population(
    name='cross_silo', split='shards', dataset='mnist5k', num_clients=20,
    model='cnn5', rounds=20, sampling_rate=0.5, local_epochs=1,
    learning_rate=0.1, batch_size=32,
    distributions=tuple(f'dist{i}' for i in range(1, 10)))

# make demo's FedHDP setting (tff_hdp.fedhdp.presets 'mnist5k'): batch 10,
# two local epochs at learning rate 0.2, cohorts of q = 0.2 for 100 rounds.
_CROSS_DEVICE_QUICK = Population(
    name='cross_device', split='one_label', dataset='mnist5k',
    num_clients=200, model='fc', rounds=100, sampling_rate=0.2,
    local_epochs=2, learning_rate=0.2, batch_size=10,
    mixtures=('paper001',))

POPULATIONS = {
    'cross_silo': _CROSS_SILO,
    # Paper 001's 2,000 clients and q = 0.05 (Table 5), a cohort of 100;
    # the local training of the quick population, 200 rounds.
    'cross_device': dataclasses.replace(
        _CROSS_DEVICE_QUICK, dataset='mnist', num_clients=2000,
        sampling_rate=0.05, rounds=200),
}
QUICK = {
    'cross_silo': dataclasses.replace(
        _CROSS_SILO, distributions=('dist1', 'dist5', 'dist9')),
    'cross_device': _CROSS_DEVICE_QUICK,
}


def get(name: str, *, quick: bool = False) -> Population:
  """The population `name` (its `quick` form), or a one-line ValueError
  naming the populations."""
  found = (QUICK if quick else POPULATIONS).get(name)
  if found is None:
    raise ValueError(f'unknown population {name!r}; allowed: '
                     f'{", ".join(POPULATIONS)}')
  return found
