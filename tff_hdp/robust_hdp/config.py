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
"""A Robust-HDP run's configuration (TF-free).

Kept free of TensorFlow so that binaries check their flags, and refuse bad
input, before importing it. Its rule is found by name in `rule_registry`.
"""

import dataclasses
from typing import Optional

from tff_hdp import run_config
from tff_hdp.robust_hdp import presets
from tff_hdp.robust_hdp import rule_registry
import tff_hdp.robust_hdp.rules  # pylint: disable=unused-import  # Registered.

BACKENDS = run_config.BACKENDS
RPCA_METHODS = presets.RPCA_METHODS


@dataclasses.dataclass(frozen=True, kw_only=True)
class RobustHdpConfig(run_config.RunConfig):
  """A Robust-HDP run's configuration: every hyperparameter of one run.

  Recorded with the run's results (`dataclasses.asdict`). The defaults are
  paper 003's settings as its authors' code runs them (`presets.PAPER`: cnn5,
  200 rounds, one epoch, eta_l = 0.1, c = 3, delta = 1e-4;
  docs/robust_hdp.md), and the rule Robust-HDP; `epsilons` and
  `batch_sizes` have none (`build_robust_hdp_process` takes them from its
  preferences).
  `run_scripts/run_robust_hdp.py` fills every field from its flags.

  `validate()` checks the shared fields
  (`run_config.RunConfig.validate_run`), every other field's range and that
  the fields agree with each other (one epsilon and one batch size per
  client); it raises a one-line ValueError naming the first bad field.

  The fields every system shares (`rounds`, `eval_every`, `seed`,
  `mechanism_seed`, `delta`, `accountant`, `backend`, `tff_workers`) are
  `run_config.RunConfig`'s; here `rounds` is E, the rounds each client's
  z_i is calibrated for (unless `calibration_rounds`), `delta` is every
  client's, `accountant` also calibrates each z_i, `seed` gives the initial
  model, and backend 'direct' gives bit-identical results
  (`direct_backend.DirectRound`).

  Attributes:
    algorithm: The name of a registered rule (`rule_registry.names()`).
    epsilons: Target epsilon_i of each client; None for a non-private
      client (plain SGD, no noise; not with a rule that
      `needs_every_epsilon`).
    batch_sizes: b_i of each client (capped to N_i).
    distribution: Name of the privacy distribution (recorded only).
    model: A `tff_hdp.models` name ('cnn5': paper 003's CNN).
    calibration_rounds: The rounds each client's noise z_i is calibrated
      for, if not `rounds` (>= rounds): a run of the first rounds of a
      longer one, with its noise, e.g. paper 003's Table 2 noise power
      (calibrated for E = 200) measured over a few rounds. Its epsilons are
      what ran (fewer rounds: below epsilon_i).
    local_epochs: K.
    learning_rate: eta_l.
    clip: c.
    poisson: Poisson-sampled batches (else fixed-size shuffled).
    first_round_only: A rule whose weights come from the updates
      (Robust-HDP's): weights from the first round only.
    block_rows: RPCA on blocks of p' rows.
    rpca_max_iterations: Bound on RPCA's iterations.
    rpca_method: RPCA's solver: 'ialm' (Lin et al.'s growing mu, solved to
      the tolerance) or 'admm' (Candes et al.'s fixed mu, as the authors'
      code, which its iteration bound stops first); see `rpca`.
    pfa_rank: PFA's k.
    clip_only: A measurement, not a private run: every client clips as
      DP-SGD does and adds no noise, and the rule weighs the clients as the
      calibrated run would (epsilon_i, N_i, the Oracle's sigma_i^2 of the
      calibrated z_i; a rule whose weights come from the updates weighs the
      noised updates the clients would have sent, which they compute from
      the same model and batches: backend 'direct' only). Beside the noisy
      run it separates what clipping and the weights cost from what the
      noise costs. Its epsilons are the calibrated mechanism's, which it did
      not run: not a bound. Not with a rule whose clients do not clip.
  """
  # The shared fields whose defaults are this system's (paper 003's).
  rounds: int = presets.PAPER.rounds
  eval_every: int = presets.PAPER.eval_every
  delta: float = presets.PAPER.delta
  backend: str = 'tff'
  # The algorithm's own.
  algorithm: str = 'robust_hdp'
  epsilons: tuple[Optional[float], ...] = ()
  batch_sizes: tuple[int, ...] = ()
  distribution: str = ''
  model: str = presets.PAPER.model
  calibration_rounds: Optional[int] = None
  local_epochs: int = presets.PAPER.local_epochs
  learning_rate: float = presets.PAPER.learning_rate
  clip: float = presets.PAPER.clip
  poisson: bool = presets.PAPER.poisson_sampling
  first_round_only: bool = not presets.PAPER.rpca_every_round
  block_rows: Optional[int] = None
  rpca_max_iterations: int = presets.PAPER.rpca_max_iterations
  rpca_method: str = presets.PAPER.rpca_method
  pfa_rank: int = presets.PAPER.pfa_rank
  clip_only: bool = False

  def validate(self, rule=None) -> None:
    """Raises ValueError naming the first bad field and what is allowed.

    Args:
      rule: The run's rule object (`tff_hdp.robust_hdp.rule.Rule`), if it
        is given rather than named by `algorithm` (registered or not).
    """
    self.validate_run()
    if rule is None and self.algorithm not in rule_registry.names():
      raise ValueError(f'algorithm must be one of '
                       f'{", ".join(rule_registry.names())}, got '
                       f'{self.algorithm!r}')
    rule = rule or rule_registry.get(self.algorithm)
    if self.clip_only and not rule.private:
      raise ValueError(f'clip_only needs a rule whose clients clip, got '
                       f'{self.algorithm}: its clients run plain SGD')
    if (self.clip_only and rule.estimates_from_updates and
        self.backend != 'direct'):
      raise ValueError(f'clip_only with rule {self.algorithm}, whose weights '
                       'come from the noised updates, needs backend direct '
                       '(its clients run twice: noised for the weights, '
                       f'clip only for the model), got {self.backend!r}')
    if len(self.epsilons) != len(self.batch_sizes) or not self.epsilons:
      raise ValueError('epsilons and batch_sizes must have one entry per '
                       f'client, got {len(self.epsilons)} and '
                       f'{len(self.batch_sizes)}')
    if any(e is not None and not e > 0 for e in self.epsilons):
      raise ValueError('every epsilon must be > 0 (or None for a '
                       f'non-private client), got {list(self.epsilons)}')
    if all(e is None for e in self.epsilons) and rule.private:
      raise ValueError('epsilons must give at least one client a finite '
                       'epsilon (None: a non-private client)')
    if (rule.needs_every_epsilon and
        any(e is None for e in self.epsilons)):
      client = [e is None for e in self.epsilons].index(True)
      raise ValueError(f'rule {self.algorithm} needs every client\'s '
                       f'epsilon (it weighs by them); client {client} is '
                       'non-private (None)')
    if any(b < 1 for b in self.batch_sizes):
      raise ValueError(
          f'every batch size must be >= 1, got {list(self.batch_sizes)}')
    for name in ('local_epochs', 'pfa_rank', 'rpca_max_iterations'):
      if getattr(self, name) < 1:
        raise ValueError(f'{name} must be >= 1, got {getattr(self, name)}')
    if self.calibration_rounds is not None and (
        self.calibration_rounds < self.rounds):
      raise ValueError(f'calibration_rounds must be >= rounds '
                       f'({self.rounds}) or None, got '
                       f'{self.calibration_rounds}')
    for name in ('learning_rate', 'clip'):
      if not getattr(self, name) > 0:
        raise ValueError(f'{name} must be > 0, got {getattr(self, name)}')
    if self.rpca_method not in RPCA_METHODS:
      raise ValueError(f'rpca_method must be one of {", ".join(RPCA_METHODS)}'
                       f', got {self.rpca_method!r}')
    if self.block_rows is not None and self.block_rows < 1:
      raise ValueError(f'block_rows must be >= 1, got {self.block_rows}')


