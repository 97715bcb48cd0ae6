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
"""The configuration of one UDP-Alg run (paper 004). TensorFlow-free.

Paper 004 gives S in {0.05, 0.1, 0.2}, z in {5, 10}, q in {0.05, 0.1, 0.2},
delta = 1e-5, a hypernetwork learning rate of 0.01 and a local one of 0.001.
It does not give the sample cap w_hat, the local steps K, the rounds T, the
batch size or the embedding learning rate zeta: the defaults below are ours
(K, batch and zeta from pFedHN's code: 50 steps, batch 64, zeta = lambda;
w_hat the median user's training size, `default_sample_cap`), each a flag of
`run_scripts/run_udp.py`.
"""

import dataclasses
from typing import Optional, Sequence

import numpy as np

from tff_hdp import run_config
from tff_hdp.udp import algorithm as algorithm_lib
from tff_hdp.udp import algorithm_registry
from tff_hdp.udp import presets
import tff_hdp.udp.algorithms  # pylint: disable=unused-import  # Registered.

# The package's variants (`tff_hdp.udp.algorithms`, in their order); the
# registry holds these and any of yours.
ALGORITHMS = algorithm_registry.names()
BACKENDS = run_config.BACKENDS
# The defaults: paper 004's settings, with CIFAR-10's q (its grid's middle).
_PAPER = presets.PRESETS['cifar10']


def default_sample_cap(num_examples: Sequence[float]) -> float:
  """w_hat when a run does not give one (ours): the median user's training
  size |D_u|."""
  return float(np.median(num_examples))


@dataclasses.dataclass(frozen=True, kw_only=True)
class UdpConfig(run_config.RunConfig):
  """A UDP-Alg run's configuration: every hyperparameter of one run.

  Recorded with the run's results (`dataclasses.asdict`). The defaults are
  paper 004's values where it gives them (S, z, q, delta and the two learning
  rates) and ours where it does not (w_hat, K, T, batch size, zeta; see the
  module docstring). `run_scripts/run_udp.py` fills every field but
  `embedding_dim` from its flags.

  `validate()` checks the shared fields
  (`run_config.RunConfig.validate_run`) and every other field's range; it
  raises a one-line ValueError naming the first bad field.

  The fields every system shares (`rounds`, `eval_every`, `seed`,
  `mechanism_seed`, `delta`, `accountant`, `backend`, `tff_workers`) are
  `run_config.RunConfig`'s; here `rounds` is T (for pfedhn: steps, one user
  each), `build_udp_process`'s horizon (the users' budget is the epsilon of
  T rounds); `seed` gives phi^0 and the embeddings; `backend` defaults to
  'direct' (the round as one tf.function), and 'tff' (the
  `process.build_udp_process` LearningProcess on TFF's runtime, with or
  without `tff_workers`) gives the same results up to float32 round-off,
  slower.

  Attributes:
    algorithm: 'udp' (Algorithm 1), 'clip_only' (Algorithm 1 with z = 0:
      clipped and weighted, no noise, so what clipping alone costs),
      'noiseless' (the same without clipping or noise) or 'pfedhn' (one
      user per step, unweighted, as pFedHN's code).
    target: The target network (`tff_hdp.models` name): 'lenet' (paper
      004's), or 'fc' (the offline MNIST images' default, and the 8 x 8
      digits, too small for LeNet).
    sampling_rate: q, each user's Poisson sampling probability per round.
    clip: S, the clip norm of each user's hypernetwork gradient.
    noise_multiplier: z (the noise stddev is z max_w S / (q W)).
    sample_cap: w_hat; w_u = min(|D_u| / w_hat, 1). None (the default):
      the median user's training size (`default_sample_cap`), filled in
      when the users are known (`for_users`).
    local_steps: K local SGD steps per sampled user.
    batch_size: Examples per local step.
    local_learning_rate: eta.
    hyper_learning_rate: lambda.
    embedding_learning_rate: zeta.
    embedding_dim: The embeddings' dimension; None for pFedHN's
      floor(1 + N/4).
    hidden, hidden_layers: The hypernetwork's width and hidden blocks
      (pFedHN's 100 and 3).
  """

  # The shared fields whose defaults are this system's (paper 004's).
  rounds: int = _PAPER.rounds
  eval_every: int = _PAPER.eval_every
  delta: float = presets.DELTA
  backend: str = 'direct'
  # The algorithm's own.
  algorithm: str = 'udp'
  target: str = _PAPER.target
  sampling_rate: float = _PAPER.sampling_rate
  clip: float = _PAPER.clip
  noise_multiplier: float = _PAPER.noise_multiplier
  sample_cap: Optional[float] = None
  local_steps: int = _PAPER.local_steps
  batch_size: int = _PAPER.batch_size
  local_learning_rate: float = _PAPER.local_learning_rate
  hyper_learning_rate: float = _PAPER.hyper_learning_rate
  embedding_learning_rate: float = _PAPER.embedding_learning_rate
  embedding_dim: Optional[int] = None
  hidden: int = 100
  hidden_layers: int = 3

  @property
  def variant(self) -> algorithm_lib.Algorithm:
    """The registered variant `algorithm` names (`tff_hdp.udp.algorithm`)."""
    return algorithm_registry.get(self.algorithm)

  @property
  def private(self) -> bool:
    """Whether the run adds noise and is accounted (UDP-Alg only)."""
    return self.variant.private

  @property
  def clips(self) -> bool:
    """Whether the users' hypernetwork gradients are clipped and weighted
    through the estimator (UDP-Alg and its clip-only ablation)."""
    return self.variant.clips

  @property
  def mechanism_noise_multiplier(self) -> float:
    """The z the round uses: the config's for UDP-Alg, else 0."""
    return self.noise_multiplier if self.private else 0.0

  def for_users(self, num_examples: Sequence[float]) -> 'UdpConfig':
    """This config for users of these training sizes |D_u|: w_hat, if
    None, is `default_sample_cap(num_examples)`."""
    if self.sample_cap is not None:
      return self
    return dataclasses.replace(
        self, sample_cap=default_sample_cap(num_examples))

  def validate(self) -> None:
    """Raises ValueError naming the first bad field and what is allowed."""
    self.validate_run()
    checks = (
        (self.algorithm in algorithm_registry.names(),
         f'algorithm must be one of '
         f'{", ".join(algorithm_registry.names())}, got '
         f'{self.algorithm!r}'),
        (0 < self.sampling_rate <= 1,
         f'sampling_rate must be in (0, 1], got {self.sampling_rate}'),
        (self.clip > 0, f'clip must be > 0, got {self.clip}'),
        (self.noise_multiplier >= 0,
         f'noise_multiplier must be >= 0, got {self.noise_multiplier}'),
        (self.sample_cap is None or self.sample_cap > 0,
         'sample_cap must be > 0, or None (the median user\'s training '
         f'size), got {self.sample_cap}'),
        (self.local_steps >= 1,
         f'local_steps must be >= 1, got {self.local_steps}'),
        (self.batch_size >= 1,
         f'batch_size must be >= 1, got {self.batch_size}'),
        (self.local_learning_rate > 0,
         f'local_learning_rate must be > 0, got {self.local_learning_rate}'),
        (self.hyper_learning_rate > 0,
         f'hyper_learning_rate must be > 0, got {self.hyper_learning_rate}'),
        (self.embedding_learning_rate >= 0,
         'embedding_learning_rate must be >= 0, got '
         f'{self.embedding_learning_rate}'),
        (self.embedding_dim is None or self.embedding_dim >= 1,
         f'embedding_dim must be >= 1, got {self.embedding_dim}'),
        (self.hidden >= 1, f'hidden must be >= 1, got {self.hidden}'),
        (self.hidden_layers >= 0,
         f'hidden_layers must be >= 0, got {self.hidden_layers}'),
    )
    for ok, message in checks:
      if not ok:
        raise ValueError(message)
