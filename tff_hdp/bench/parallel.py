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
"""HDP-Bench's runs on several processes at once (`benchmark.run(jobs=k)`).

The benchmark's runs are independent and mostly one-threaded (small models,
small batches), so on a machine of c cores k processes of c/k threads each
finish the benchmark sooner than one process of c threads. Each worker is a
fresh Python running this module: it imports TensorFlow once, receives each
population's setting once, then runs one (method, preferences, seed) after
another, each exactly as `Method.run` runs it in the benchmark's own
process; the parent hands out the runs as workers free up (reading them
from the benchmark as it calibrates them: the workers start meanwhile) and
records each result as it comes.

Not `multiprocessing`: its start methods that are safe beside TensorFlow's
threads (spawn, forkserver) re-import the caller's `__main__` in every child
(see `tff_hdp.robust_hdp.privacy_preferences`). A worker finds a method by
name among the package's and those of `method_files` (the binary's
--extra_methods), which it imports itself; a method registered in the
parent's process only cannot run here, and the parent says so.

Protocol: pickles on the worker's stdin and on a copy of its stdout (the
worker's own stdout goes to its stderr, so that nothing a method prints
corrupts a result). TensorFlow-free in the parent.
"""

import atexit
import gc
import os
import pickle
import queue
import subprocess
import sys
import threading
import time
import traceback
from typing import (Iterable, Iterator, Mapping, NamedTuple, Optional,
                    Sequence)


def available_cores() -> int:
  """The cores this process may run on."""
  try:
    return len(os.sched_getaffinity(0))
  except AttributeError:  # Not Linux.
    return os.cpu_count() or 1


def worker_environment() -> dict[str, str]:
  """A worker's environment: this one's, with the package first on its
  path, TensorFlow's C++ notices off, and, since the workers run at once,
  each taking GPU memory as it needs it rather than all of it
  (TF_FORCE_GPU_ALLOW_GROWTH); the last two unless already set."""
  package_root = os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))))
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      p for p in (package_root, os.environ.get('PYTHONPATH')) if p))
  env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  env.setdefault('TF_FORCE_GPU_ALLOW_GROWTH', 'true')
  return env


class WorkerError(RuntimeError):
  """A run failed in a worker: the message names the run and the error."""


class _Worker:
  """One worker process (this module's `main`) that we started and end."""

  def __init__(self, method_files: Sequence[str], threads: int):
    self._process = subprocess.Popen(
        [sys.executable, '-m', 'tff_hdp.bench.parallel'],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        env=worker_environment())
    self._send((tuple(method_files), threads))
    self._settings = set()  # The keys of the settings it holds.

  def _send(self, obj):
    pickle.dump(obj, self._process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
    self._process.stdin.flush()

  def run(self, key, setting, task):
    """(outcome, seconds) of `task` = (method name, calibration, seed,
    mechanism seed) on `setting` (sent once per worker, under `key`), or
    WorkerError."""
    if key not in self._settings:
      self._send(('setting', key, setting))
      self._settings.add(key)
    self._send(('run', key, task))
    try:
      ok, value = pickle.load(self._process.stdout)
    except EOFError:
      raise WorkerError(f'{task[0]} seed {task[2]}: the worker ended '
                        f'(exit status {self._process.wait()})') from None
    if not ok:
      raise WorkerError(f'{task[0]} seed {task[2]}: {value}')
    return value

  def close(self, kill: bool = False):
    """Ends the worker: at the end of its input it returns (or, `kill`,
    at once)."""
    try:
      if kill:
        self._process.kill()
      self._process.stdin.close()
      self._process.wait(timeout=60)
    except (OSError, subprocess.TimeoutExpired):
      self._process.kill()
      self._process.wait()


_END = object()  # No run is left (one per worker, on the queue of runs).
_FED = object()  # Every run has been handed out (on the queue of results).


class _Queues(NamedTuple):
  """What the parent's threads share."""
  todo: queue.Queue  # (index, key, task) per run, then _END per worker.
  done: queue.Queue  # (index, (outcome, seconds), error) per run, and _FED.
  stop: threading.Event  # Set when the parent stops: no run starts.


def run_all(settings: Mapping, tasks: Iterable, jobs: int,
            method_files: Sequence[str] = (),
            threads: Optional[int] = None) -> Iterator:
  """Yields (index, outcome, seconds) for each of `tasks` as workers finish
  them, on `jobs` workers of `threads` threads each (default: the cores
  shared among the jobs); index counts the tasks from 0 in their order.

  The workers start at once and `tasks` is read as they take runs, so a
  generator that calibrates each run before it yields it (the benchmark's)
  calibrates while the workers import TensorFlow and run what it has
  yielded. A failed run raises WorkerError, and an error of `tasks` itself
  (e.g. a calibration's) is raised as it is, once the workers have
  stopped.

  Args:
    settings: The `Setting` of each key (each is sent to a worker once, before
      its first run on it).
    tasks: (setting key, (method name, calibration, seed, mechanism seed))
      each.
    jobs: Workers, >= 1.
    method_files: Files that register methods outside the package.
    threads: TensorFlow threads of each worker.
  """
  threads = threads or max(1, available_cores() // jobs)
  queues = _Queues(queue.Queue(), queue.Queue(), threading.Event())
  boxes = [[] for _ in range(jobs)]
  servers = [threading.Thread(target=_serve, daemon=True,
                              args=(b, settings, method_files, threads,
                                    queues))
             for b in boxes]
  for server in servers:
    server.start()
  # Daemon: a calibration cannot be interrupted, and an error elsewhere
  # must not wait for it.
  feeder = threading.Thread(target=_feed, args=(tasks, jobs, queues),
                            daemon=True)
  feeder.start()
  failure = None
  finished = False
  try:
    for index, result, error in _returned(queues.done):
      if error is not None:
        failure = error
        break
      outcome, seconds = result
      yield index, outcome, seconds
    finished = failure is None
  finally:
    # A failed run, or a caller that stopped reading (an exception in its
    # on_result, an interrupt), ends the workers now, not after the runs left.
    _stop(queues, servers, boxes, finished)
  if failure is not None:
    raise failure


def _feed(tasks: Iterable, jobs: int, queues: _Queues) -> None:
  """The feeder thread: `tasks` onto the queue of runs, numbered from 0,
  then one _END per worker and _FED with the count (or the error of
  `tasks`) on the queue of results."""
  count = 0
  try:
    for key, task in tasks:
      if queues.stop.is_set():
        return
      queues.todo.put((count, key, task))
      count += 1
  except Exception as e:  # pylint: disable=broad-except
    queues.done.put((None, None, e))
  finally:
    for _ in range(jobs):
      queues.todo.put(_END)
    queues.done.put((_FED, count, None))


def _serve(worker_box: list, settings: Mapping,
           method_files: Sequence[str], threads: int,
           queues: _Queues) -> None:
  """A server thread: starts a worker (into `worker_box`, for the parent
  to end) and runs on it what it takes from the queue of runs."""
  try:
    worker_box.append(_Worker(method_files, threads))
    while not queues.stop.is_set():
      item = queues.todo.get()
      if item is _END:
        return
      index, key, task = item
      queues.done.put(
          (index, worker_box[0].run(key, settings[key], task), None))
  except Exception as e:  # pylint: disable=broad-except
    queues.done.put((None, None, e))


def _returned(done: queue.Queue) -> Iterator:
  """(index, (outcome, seconds), error) of each run (or an error) as it
  comes back, until every run handed out has."""
  expected, received = None, 0
  while expected is None or received < expected:
    index, result, error = done.get()
    if index is _FED:
      expected = result
      continue
    received += 1
    yield index, result, error


def _stop(queues: _Queues, servers: Sequence[threading.Thread],
          boxes: Sequence[list], finished: bool) -> None:
  """Ends the workers: after their runs if `finished`, else at once (no
  other run starts)."""
  queues.stop.set()
  if not finished:
    _drain(queues.todo)
  for server in servers:
    if finished:
      server.join()
  for box in boxes:
    for worker in box:
      worker.close(kill=not finished)


def _drain(todo: queue.Queue) -> None:
  """Empties `todo`: no other run starts."""
  while True:
    try:
      todo.get_nowait()
    except queue.Empty:
      return


def main() -> None:
  """A worker: the setting, then runs until its input ends."""
  # Its parent waits for its exit (`_Worker.close`): at exit, every object
  # is frozen first, so Python's shutdown collections skip TensorFlow's
  # (some 1.3 s a process; see run_scripts/cli.py's run_main).
  atexit.register(gc.freeze)
  results = os.fdopen(os.dup(1), 'wb')
  os.dup2(2, 1)  # What methods print goes to stderr.
  sys.stdout = sys.stderr
  inputs = sys.stdin.buffer
  method_files, threads = pickle.load(inputs)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.config.threading.set_intra_op_parallelism_threads(threads)
  tf.config.threading.set_inter_op_parallelism_threads(threads)
  from tff_hdp import runtime  # pylint: disable=g-import-not-at-top
  from tff_hdp.bench import registry  # pylint: disable=g-import-not-at-top
  import tff_hdp.bench.methods  # pylint: disable=g-import-not-at-top,unused-import
  for path in method_files:
    registry.load_file(path)
  known = registry.registered()
  settings = {}
  with runtime.on_demand_context():  # As the binary's process.
    while True:
      try:
        kind, key, value = pickle.load(inputs)
      except EOFError:
        return
      if kind == 'setting':
        settings[key] = value
        continue
      setting = settings[key]
      name, calibration, seed, mechanism_seed = value
      try:
        if name not in known:
          raise LookupError(
              f'method {name!r} is not registered in a worker: register it '
              'in a file of its own and give the file (method_files, '
              '--extra_methods) to run it with jobs > 1')
        start = time.perf_counter()
        outcome = known[name].run(setting, calibration, seed=seed,
                                  mechanism_seed=mechanism_seed)
        reply = (True, (outcome, time.perf_counter() - start))
      except Exception as e:  # pylint: disable=broad-except
        last = traceback.format_exception_only(type(e), e)[-1].strip()
        traceback.print_exc()
        reply = (False, last)
      pickle.dump(reply, results, protocol=pickle.HIGHEST_PROTOCOL)
      results.flush()


if __name__ == '__main__':
  main()
