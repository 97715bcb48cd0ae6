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
"""What every run shares, whichever system it runs (TensorFlow-free).

`RunConfig` holds the fields the three systems' configurations have in
common (the rounds, the evaluation cadence, the public seed, the mechanism
key, the reported epsilon's delta and accountant, and where the rounds run)
and checks them once (`validate_run`). Each system's config inherits it,

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class UdpConfig(run_config.RunConfig):
      rounds: int = 500  # The system's own default.
      ...

and adds only its algorithm's settings. The driver's options (output and
checkpoint directories, progress) are not part of a run's configuration:
they change where it is written, not what it computes
(`tff_hdp.round_loop.Options`).
"""

import dataclasses
from typing import Optional

import numpy as np

from tff_hdp import round_executor
from tff_hdp.privacy import accounting
from tff_hdp.privacy import mechanism_key

# How rounds run: 'tff' (TFF's runtime, optionally spread over TFF workers)
# or 'direct' (the same round in plain TensorFlow, without TFF's runtime).
BACKENDS = ('tff', 'direct')


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunConfig:
  """The fields every system's configuration shares, checked once.

  Recorded with each run's results (`dataclasses.asdict` of the system's
  config, these fields among its own). `rounds`, `eval_every`, `delta` and
  `backend` have no default here: each system's config gives its own (its
  paper's), redeclaring the field.

  Attributes:
    rounds: T (paper 003's E), the rounds of the run; the horizon the
      privacy budgets are accounted (or calibrated) for.
    eval_every: Evaluate every k rounds (and after the last).
    seed: The public seed (the initial model, the public draws such as
      FedHDP's opt-outs): published with the results, and no privacy
      guarantee rests on it.
    mechanism_seed: None (the default): every noise draw, cohort and
      DP-SGD batch comes from a secret key drawn at the start of the run
      (`tff_hdp.privacy.mechanism_key`). An integer >= 0 makes them
      reproducible from it; the run's epsilon is then the mechanism's, not
      a guarantee for its outputs.
    delta: The delta in (0, 1) of the reported (or calibrated) epsilon.
    accountant: 'rdp' (the papers') or 'pld' (dp_accounting's PLD
      accountant, the tightest): the accountant of the reported epsilon.
    backend: One of `BACKENDS`: 'tff' (TFF's runtime) or 'direct' (the
      same round in plain TensorFlow, faster); each system's config says
      how close their results are.
    tff_workers: 'host:port' of running TFF workers (backend 'tff'): each
      round's clients are spread over them (`tff_hdp.distributed`). Where
      a run's rounds execute is not what it computes: a run resumes on
      other workers (`tff_hdp.checkpoint.identity` leaves this field out).
  """

  rounds: int
  eval_every: int
  seed: int = 0
  mechanism_seed: Optional[int] = None
  delta: float
  accountant: str = 'rdp'
  backend: str
  tff_workers: tuple[str, ...] = ()

  def run_fields(self) -> dict:
    """The shared fields' values, by name (the `RunConfig` part of a
    system's config: `RunConfig(**config.run_fields())`)."""
    return {f.name: getattr(self, f.name)
            for f in dataclasses.fields(RunConfig)}

  @property
  def round_backend(self) -> str:
    """The round executor's backend (`round_executor.BACKENDS`) this run's
    rounds execute on: DIRECT for backend 'direct', DISTRIBUTED for 'tff'
    with `tff_workers`, else TFF."""
    if self.backend == 'direct':
      return round_executor.DIRECT
    return (round_executor.DISTRIBUTED if self.tff_workers else
            round_executor.TFF)

  def validate_run(self) -> None:
    """Raises a one-line ValueError naming the first bad shared field and
    what is allowed; each system's `validate` calls it first."""
    mechanism_key.check_mechanism_seed(self.mechanism_seed)
    checks = (
        (self.rounds >= 1, f'rounds must be >= 1, got {self.rounds}'),
        (self.eval_every >= 1,
         f'eval_every must be >= 1, got {self.eval_every}'),
        (_is_int(self.seed) and self.seed >= 0,
         f'seed must be an integer >= 0, got {self.seed!r}'),
        (0.0 < self.delta < 1.0, f'delta must be in (0, 1), got {self.delta}'),
        (self.accountant in accounting.ACCOUNTANTS,
         f'accountant must be one of {", ".join(accounting.ACCOUNTANTS)}, '
         f'got {self.accountant!r}'),
        (self.backend in BACKENDS,
         f'backend must be one of {", ".join(BACKENDS)}, got '
         f'{self.backend!r}'),
        (not self.tff_workers or self.backend == 'tff',
         'tff_workers needs backend tff (TFF workers run TFF computations), '
         f'got backend {self.backend!r}'),
    )
    for ok, message in checks:
      if not ok:
        raise ValueError(message)


def _is_int(value) -> bool:
  """An integer, not a bool (True is not a seed)."""
  return (isinstance(value, (int, np.integer)) and
          not isinstance(value, (bool, np.bool_)))
