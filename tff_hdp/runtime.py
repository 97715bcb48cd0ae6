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
"""A TFF C++ execution context whose worker process we own and end.

TFF's default context (`tff.backends.native.set_sync_local_cpp_execution_context`)
starts a `worker_binary` child that inherits the parent's stdout and stderr and
is ended only when its executor factory is garbage-collected; often it outlives
Python and whoever reads the parent's output (a CI log, a pipe) waits forever.
So we start the same binary ourselves, through TFF's public executor API
(`tff.framework.RemoteExecutor` over `RemoteExecutorGrpcStub`, the pieces
TFF's own local factory is made of), with its output sent to a log file, a
parent-death signal so it cannot outlive us even after SIGKILL, and an
explicit `stop()` (also run at interpreter exit).

Importing this module (`tff_hdp.templates`, so every builder, does) swaps
TFF's default local C++ context, if it is the current one, for a managed one
(`ManagedContext`) that runs every computation TFF's would, on a worker of
ours started on first use and ended at exit: a user's own TFF code in the
same script runs as before, with no context manager, and no `worker_binary`
outlives the script. A context the user installed is never touched.

Use:

    with runtime.local_cpp_context():
      ...  # call TFF computations

(`runtime.on_demand_context()` for a block that seldom calls one)

or `runtime.install_local_cpp_context()` once per process; with
`asynchronous=True` either gives the async context that TFF's program logic
(`tff.learning.programs`) awaits.
"""

import atexit
import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from typing import Optional

import grpc
import portpicker
import tensorflow_federated as tff

# No message-size limit: model updates of a whole cohort travel in one call.
GRPC_OPTIONS = [('grpc.max_message_length', -1),
                 ('grpc.max_receive_message_length', -1),
                 ('grpc.max_send_message_length', -1)]


# The channel to a worker we start: its first connection is tried before
# the worker listens (some 40 ms after it starts) and is refused; gRPC then
# waits its initial reconnect backoff, 1 s by default, before the next try,
# so a worker answered 1 s after it started. Locally, retrying after 50 ms
# (then 80, 128, ...: gRPC's multiplier 1.6) costs nothing.
_LOCAL_OPTIONS = [('grpc.initial_reconnect_backoff_ms', 50)]


def worker_binary_path() -> str:
  """The `worker_binary` shipped in the TFF wheel."""
  return os.path.join(os.path.dirname(tff.__file__), 'data', 'worker_binary')


def _die_with_parent_command() -> list[str]:
  """A command prefix that makes the worker get SIGTERM when we die.

  util-linux's `setpriv --pdeathsig` sets the parent-death signal and execs
  the worker, so no Python code runs between fork and exec: `subprocess`
  then spawns with vfork, and gRPC's fork handlers (which deadlock a child
  forked while gRPC's threads run, as a `preexec_fn` would need) never run.
  Without setpriv (not Linux), a worker relies on `stop()` and atexit.
  """
  setpriv = shutil.which('setpriv')
  return [setpriv, '--pdeathsig', 'TERM', '--'] if setpriv else []


class Worker:
  """One `worker_binary` process serving on localhost."""

  def __init__(self, port: Optional[int] = None, log_path: Optional[str] = None):
    self.port = port or portpicker.pick_unused_port()
    if log_path is None:
      log_path = os.path.join(tempfile.gettempdir(),
                              f'tff_hdp_worker_{os.getpid()}_{self.port}.log')
    self.log_path = log_path
    self.channel = grpc.insecure_channel(f'localhost:{self.port}',
                                         GRPC_OPTIONS + _LOCAL_OPTIONS)
    self.stub = tff.framework.RemoteExecutorGrpcStub(self.channel)
    self._log = open(log_path, 'ab')
    self.process = subprocess.Popen(
        _die_with_parent_command() + [
            worker_binary_path(), f'--port={self.port}',
            '--max_concurrent_computation_calls=-1'],
        stdin=subprocess.DEVNULL,
        stdout=self._log,
        stderr=subprocess.STDOUT)
    atexit.register(self.stop)

  def wait_ready(self, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not self.stub.is_ready:
      if self.process.poll() is not None:
        raise RuntimeError(f'worker_binary exited with {self.process.returncode}'
                           f'; see {self.log_path}')
      if time.monotonic() > deadline:
        raise TimeoutError(f'worker_binary not ready after {timeout}s')
      time.sleep(0.05)

  def stop(self) -> None:
    """Ends the process (SIGTERM, then SIGKILL after 5 s) and closes its log.

    SIGTERM, not SIGINT: a process started in the background by a
    non-interactive shell (`cmd &`, as CI scripts and nohup'd jobs run)
    ignores SIGINT, and so does every process it starts, the worker too; a
    SIGINT then ended it only by the SIGKILL 5 s later.
    """
    if self.process.poll() is None:
      self.process.terminate()
      try:
        self.process.wait(timeout=5)
      except subprocess.TimeoutExpired:
        self.process.kill()
        self.process.wait()
    self.channel.close()
    if not self._log.closed:
      self._log.close()


def executor_factory(stub, default_num_clients: int = 0):
  """TFF executors on the worker behind `stub` (a `RemoteExecutorGrpcStub`).

  The stack TFF's own local factory builds: a `tff.framework.RemoteExecutor`
  with the call's CLIENTS cardinality set.
  """

  def stack_fn(cardinalities):
    if cardinalities.get(tff.CLIENTS) is None:
      cardinalities[tff.CLIENTS] = default_num_clients
    executor = tff.framework.RemoteExecutor(stub)
    executor.set_cardinalities(cardinalities)
    return executor

  return tff.framework.ResourceManagingExecutorFactory(
      executor_stack_fn=stack_fn)


def _context(stub, default_num_clients: int = 0, asynchronous: bool = False):
  """A TFF execution context on the worker behind `stub`.

  Sync: calling a computation returns its value. Async: the federated
  context of TFF's program logic (`tff.program.NativeFederatedContext` over
  an async context: `tff.learning.programs` awaits its processes' calls and
  materializes their values); the executors below are the same.
  """
  context_class = (tff.framework.AsyncExecutionContext if asynchronous else
                   tff.framework.SyncExecutionContext)
  context = context_class(
      executor_fn=executor_factory(stub, default_num_clients),
      compiler_fn=tff.backends.native.desugar_and_transform_to_native,
      transform_args=tff.tensorflow.transform_args,
      transform_result=tff.tensorflow.transform_result)
  return tff.program.NativeFederatedContext(context) if asynchronous else (
      context)


def create_local_cpp_context(default_num_clients: int = 0, *,
                             asynchronous: bool = False):
  """Returns (context, worker): a TFF context backed by our own worker.

  `asynchronous`: an async context, for TFF's program logic (see
  `_context`).
  """
  worker = Worker()
  worker.wait_ready()
  return _context(worker.stub, default_num_clients, asynchronous), worker


class ManagedContext(tff.framework.SyncContext):
  """Stands in for TFF's default local C++ context, whose worker can outlive
  Python: the same synchronous execution of any computation, on a worker of
  ours (`Worker`: its output to a log file, dying with Python) started on
  the first call and ended by `stop()`, `shutdown()` or at exit."""

  def __init__(self):
    self._worker: Optional[Worker] = None
    self._context = None

  def invoke(self, comp, arg):
    if self._worker is None or self._worker.process.poll() is not None:
      self._worker = Worker()
      self._worker.wait_ready()
      self._context = _context(self._worker.stub)
    return self._context.invoke(comp, arg)

  def stop(self) -> None:
    """Ends the worker, if one was started (a later call starts another)."""
    if self._worker is not None:
      self._worker.stop()
      self._worker, self._context = None, None


_MANAGED = ManagedContext()


def _is_tffs_local_cpp_context(context) -> bool:
  """Whether `context` is TFF's own local C++ context (the default TFF
  installs when imported, or one of `tff.backends.native`'s
  `set_sync_local_cpp_execution_context`), whose worker can outlive Python.

  TFF has no public way to tell: this reads its executor factory's stack
  function (private attributes, read defensively: should TFF rename them, no
  context is taken for TFF's and every context is kept).
  """
  factory = getattr(context, '_executor_factory', None)
  stack_fn = getattr(factory, '_executor_stack_fn', None)
  return getattr(stack_fn, '__qualname__', '').startswith(
      'local_cpp_executor_factory.')


def retire_tffs_default_context() -> None:
  """Replaces TFF's own local C++ context, if it is the current one, by the
  managed one (`ManagedContext`, which runs the same computations); any
  other context (one of ours, or one the user installed) is kept."""
  if _is_tffs_local_cpp_context(tff.framework.get_context_stack().current):
    tff.framework.set_default_context(_MANAGED)


# Importing this module (`tff_hdp.templates`, which the three systems'
# builders import, does) retires TFF's default context: no code path starts
# TFF's own worker, the user's TFF code runs on ours, and TFF's executor
# factory is collected now, while the interpreter is whole (collected at
# exit, it prints a traceback).
retire_tffs_default_context()

_installed: Optional[Worker] = None
_installed_asynchronous: Optional[bool] = None


def install_local_cpp_context(*, asynchronous: bool = False) -> Worker:
  """Makes our context TFF's default for this process (idempotent).

  `asynchronous=True` installs the async context that TFF's program logic
  (`tff.learning.programs.train_model`, evaluation and checkpointing
  programs) needs; switching between the two keeps the same worker.
  """
  global _installed, _installed_asynchronous
  if _installed is None or _installed.process.poll() is not None:
    _installed = Worker()
    _installed.wait_ready()
    _installed_asynchronous = None
  if _installed_asynchronous is not asynchronous:
    context = _context(_installed.stub, asynchronous=asynchronous)
    context._tff_hdp_worker = True  # Ends with it (`local_cpp_context`).  # pylint: disable=protected-access
    tff.framework.set_default_context(context)
    _installed_asynchronous = asynchronous
  return _installed


def shutdown() -> None:
  """Ends the worker installed by `install_local_cpp_context`, if any (the
  default context is then the managed one again), and the managed
  context's."""
  global _installed, _installed_asynchronous
  if _installed is not None:
    tff.framework.set_default_context(_MANAGED)
    _installed.stop()
    _installed = None
    _installed_asynchronous = None
  _MANAGED.stop()


@contextlib.contextmanager
def local_cpp_context(*, asynchronous: bool = False):
  """Installs our context for the `with` block and ends its worker after;
  the context current before the block is current again after it.

  `asynchronous=True`: the async context of TFF's program logic, e.g.

      with runtime.local_cpp_context(asynchronous=True):
        asyncio.run(tff.learning.programs.train_model(...))
  """
  previous = tff.framework.get_context_stack().current
  install_local_cpp_context(asynchronous=asynchronous)
  try:
    yield
  finally:
    shutdown()
    if not getattr(previous, '_tff_hdp_worker', False):
      tff.framework.set_default_context(previous)  # The user's, as it was.


@contextlib.contextmanager
def on_demand_context():
  """For a block that may call TFF computations but need not (a run on the
  direct backend): no worker is started up front, as `local_cpp_context`
  starts one (a process of its own). A TFF call in the block
  runs on TFF's current context, in a process that installed none the
  managed one this module installs (`ManagedContext`: the same executors
  on a worker of ours, started on that first call); the block ends every
  worker of this module's (`shutdown`)."""
  try:
    yield
  finally:
    shutdown()
