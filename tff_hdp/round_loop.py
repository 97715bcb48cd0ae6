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
"""The round loop every system's driver runs (shared).

    record = round_loop.train(lambda: prepare(config, data), results_record)
    run = round_loop.run_rounds(experiment, observers=[...], options=...)

The loop owns what is the same in the three papers' drivers: where the run
starts (fresh or from a checkpoint, `checkpoint.start_run`) and under which
mechanism key (secret, from the operating system, unless `config` has a
`mechanism_seed`: `tff_hdp.privacy.mechanism_key`), each round's
privacy-ledger step, evaluation every k rounds and after the last, the
history entry, TensorBoard, checkpoints (deleted once the run has finished,
unless kept: they hold its key), the progress bar and the caller's
callback. A system supplies only what is its own (`System`): its initial
state under the run's key, one round (sampling included) and its
evaluation. Observers (`Observer`: audits, the profiler) see each round's
state before and after and its entry, without the loop or the system
knowing what they do. A driver's `prepare` returns an `Experiment` (its
pieces, which an audit may replace before the rounds), `run_rounds` runs it
and `train` is the three steps every driver's `train` takes.

An entry is published (results.json, TensorBoard), so a system puts in it
only what the mechanism released or what the guarantee does not depend on:
no realised count of a round's participants.
"""

import abc
import dataclasses
import time
from typing import Any, Callable, Optional, Sequence

import numpy as np

from tff_hdp import checkpoint
from tff_hdp.privacy import privacy_ledger


class System(abc.ABC):
  """What a system's driver gives the loop."""

  @abc.abstractmethod
  def start(self, key: np.ndarray):
    """The initial state of a run whose mechanism key is `key` (int64 [2]);
    the system draws its noise and private samples from it. Called once per
    run, resumed runs included (then its result is the template of the saved
    state)."""

  @abc.abstractmethod
  def run_round(self, state, round_num: int) -> tuple[Any, dict]:
    """Round `round_num` (from 0) from `state`: (new state, its entry's
    measurements)."""

  @abc.abstractmethod
  def account(self, ledger: privacy_ledger.PrivacyLedger,
              round_num: int) -> None:
    """Records round `round_num`'s mechanisms in `ledger`."""

  @abc.abstractmethod
  def evaluate(self, state, ledger: privacy_ledger.PrivacyLedger) -> dict:
    """The entry's evaluation of `state` (every `eval_every` rounds)."""


class Observer:
  """Sees every round; does nothing unless overridden."""

  def before_round(self, round_num: int, state) -> None:
    """Called before round `round_num` (from 0) runs from `state`."""

  def after_round(self, round_num: int, state, entry: dict) -> None:
    """Called with the round's new state and entry (the observer may add
    to the entry before it is recorded)."""


@dataclasses.dataclass(frozen=True)
class Options:
  """How a run is kept and shown; every driver's `train` takes these.

  Attributes:
    checkpoint_dir: If given, progress is saved there every
      `checkpoint_every` rounds and after the last, and a run finding a
      checkpoint of the same configuration there resumes from it, exactly.
    checkpoint_every: See `checkpoint_dir`.
    keep_checkpoints: Keep the checkpoint once the run has finished. By
      default it is deleted then (`checkpoint.Run.retire`): it holds the
      run's secret key, and a finished run has nothing to resume. A run
      that stops early (killed, or an error) keeps it, to resume.
    progress: Show a progress bar over rounds (tqdm, on stderr).
    summary_writer: A TensorBoard `tf.summary.SummaryWriter` of every
      round's entry.
    on_round: Called as on_round(round, history_entry) after each round.
  """
  checkpoint_dir: Optional[str] = None
  checkpoint_every: int = 10
  keep_checkpoints: bool = False
  progress: bool = False
  summary_writer: Any = None
  on_round: Optional[Callable[[int, dict], None]] = None


def run(system: System, config, *, total_rounds: int, eval_every: int,
        ledger: Optional[privacy_ledger.PrivacyLedger] = None,
        observers: Sequence[Observer] = (), store: Optional[Any] = None,
        options: Options = Options()) -> checkpoint.Run:
  """Runs the rounds left of `config`'s run; returns the finished `Run`
  (its final state, ledger and history).

  Args:
    system: The system's rounds.
    config: The run's dataclass configuration (checkpoints of another are
      refused); its `mechanism_seed` (None: a secret key) gives the key.
    total_rounds: T.
    eval_every: Evaluate every k rounds and after the last.
    ledger: The empty ledger a new run starts from.
    observers: Called around every round, in order.
    store: As `checkpoint.start_run`'s (FedHDP's Ditto models).
    options: Checkpoints, progress, TensorBoard, the callback.
  """
  if eval_every < 1:
    raise ValueError(f'eval_every must be >= 1, got {eval_every}')
  run = checkpoint.start_run(config, system.start, total_rounds=total_rounds,
                             options=options, store=store, ledger=ledger)
  for round_num in run.rounds:
    for observer in observers:
      observer.before_round(round_num, run.state)
    run.state, measurements = system.run_round(run.state, round_num)
    system.account(run.ledger, round_num)
    entry = {'round': round_num + 1}
    entry.update(measurements)
    if (round_num + 1) % eval_every == 0 or round_num + 1 == total_rounds:
      entry.update(system.evaluate(run.state, run.ledger))
    for observer in observers:
      observer.after_round(round_num, run.state, entry)
    run.end_round(round_num + 1, entry)
  if not options.keep_checkpoints:
    run.retire()
  return run


class Experiment(abc.ABC):
  """A run's pieces before its rounds, as a system's `prepare` makes them.

  Attributes:
    config: The run's dataclass configuration: its `rounds` (T),
      `eval_every` and `mechanism_seed` (see `run`).
  """
  config: Any

  @abc.abstractmethod
  def system(self) -> System:
    """The run's rounds, from the pieces as they are when the run starts."""

  @abc.abstractmethod
  def new_ledger(self) -> privacy_ledger.PrivacyLedger:
    """The empty ledger a new run starts from."""

  def client_store(self) -> Optional[Any]:
    """Per-client state the checkpoints keep (`checkpoint.start_run`'s
    `store`: FedHDP's Ditto models); None by default."""
    return None


def run_rounds(experiment: Experiment, *,
               observers: Sequence[Observer] = (),
               options: Options = Options()) -> checkpoint.Run:
  """The T rounds of `experiment` in the loop (`run`), from its initial
  state or a checkpoint of the same configuration, with `observers` around
  every round."""
  config = experiment.config
  return run(experiment.system(), config, total_rounds=config.rounds,
             eval_every=config.eval_every, ledger=experiment.new_ledger(),
             observers=observers, store=experiment.client_store(),
             options=options)


def train(prepare: Callable[[], Experiment],
          results_record: Callable[[Experiment, checkpoint.Run, float], Any],
          **options) -> Any:
  """A driver's `train`: `prepare()`, its rounds (`run_rounds`) and
  `results_record(experiment, run, wall-clock seconds from the start)`.

  Args:
    prepare: Makes the run's experiment.
    results_record: The run's record.
    **options: `Options`' checkpoint_dir, checkpoint_every,
      keep_checkpoints, progress, summary_writer and on_round.
  """
  start = time.time()
  options = Options(**options)
  experiment = prepare()
  finished = run_rounds(experiment, options=options)
  return results_record(experiment, finished, time.time() - start)
