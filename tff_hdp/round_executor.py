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
"""One round of one system on one backend (shared by the three systems).

    executor = <system>.executors.build_executor(config.backend, ...)
    state = executor.initialize(key)
    output = executor.next(state, cohort)   # RoundOutput(state, ...)

Every system's round runs on three backends, each in a file of its own under
the system's folder: TFF's runtime (`tff_backend.py`, the system's
`LearningProcess` from `process.py`), plain TensorFlow without TFF
(`direct_backend.py`) and TFF spread over workers (`distributed.py`). Each
implements `RoundExecutor`: `initialize(key)` gives the round's state under
the run's mechanism key, and `next(state, cohort)` runs one round on the
cohort the driver drew. A cohort is the system's own named tuple (its
clients' data and what the round needs of them), the same type on every
backend, so the three backends of a system are interchangeable and are held
to one contract (tests/test_round_executors.py): the same measurement keys,
agreement to float round-off, and an empty cohort.

What a round returns is split by what may be published:
`RoundOutput.measurements` goes into the run's history (only what the
mechanism released, or what the guarantee does not depend on), while
`RoundOutput.clients` is per-client state the driver keeps and never
publishes (FedHDP's Ditto models).
"""

import abc
from typing import Any, NamedTuple, Sequence

import numpy as np

# The backends every system's round runs on.
TFF = 'tff'
DIRECT = 'direct'
DISTRIBUTED = 'distributed'
BACKENDS = (TFF, DIRECT, DISTRIBUTED)


def check_backend(backend: str, workers: Sequence[str] = ()) -> None:
  """Raises a one-line ValueError unless `backend` is one of `BACKENDS`
  with workers ('host:port' of each TFF worker) exactly when DISTRIBUTED;
  every system's `build_executor` checks its arguments so."""
  if backend not in BACKENDS:
    raise ValueError(f'backend must be one of {", ".join(BACKENDS)}, got '
                     f'{backend!r}')
  if workers and backend != DISTRIBUTED:
    raise ValueError(f'workers are for backend {DISTRIBUTED!r} only, got '
                     f'backend {backend!r}')
  if not workers and backend == DISTRIBUTED:
    raise ValueError(f'backend {DISTRIBUTED!r} needs workers (host:port of '
                     'each TFF worker), got none')


class RoundOutput(NamedTuple):
  """A round's result.

  Attributes:
    state: The new state (NumPy structures), as `initialize` makes it.
    measurements: The round's published measurements, {name: float}.
    clients: Per-client results the driver keeps and never publishes, in
      the cohort's client order (FedHDP: the trained Ditto models), or None.
  """
  state: Any
  measurements: dict
  clients: Any = None


class RoundExecutor(abc.ABC):
  """A system's round on one backend.

  Attributes:
    backend: Which backend this is (one of `BACKENDS`).
  """

  backend: str

  @abc.abstractmethod
  def initialize(self, key: np.ndarray) -> Any:
    """The state a run whose mechanism key is `key` (int64 [2]) starts from;
    the round draws its noise from the key."""

  @abc.abstractmethod
  def next(self, state: Any, cohort: Any) -> RoundOutput:
    """One round from `state` on `cohort` (the system's cohort type; its
    clients may be none: the round still releases what the mechanism
    releases then)."""
