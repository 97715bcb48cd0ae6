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
"""Test-session set-up: quiet TensorFlow, our own TFF worker, no leftovers.

TFF's default C++ context starts a `worker_binary` that can outlive the test
process and hold its stdout open (CI would wait forever). The session fixture
installs `tff_hdp.runtime`'s context, whose worker logs to a file, dies with
its parent and is ended here; at the end of the session we check that no
`worker_binary` child of this process is left.
"""

import atexit
import gc
import os
from typing import Optional

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
# As `tff_hdp/__init__.py` asks, for tests that import TensorFlow first.
os.environ.setdefault('TF_ENABLE_ONEDNN_OPTS', '1')

import pytest  # pylint: disable=g-import-not-at-top,wrong-import-position


def poisson_cohort(mechanism_seed: int, num_clients: int, rate: float,
                   round_num: int):
  """The Poisson cohort (client ids) a driver draws in round `round_num` of
  a run under `mechanism_seed`, recomputed as the drivers draw it: the
  drivers publish no count."""
  from tff_hdp.data import sampling  # pylint: disable=g-import-not-at-top
  from tff_hdp.privacy import mechanism_key  # pylint: disable=g-import-not-at-top
  key = mechanism_key.cohort_key(mechanism_key.new_key(mechanism_seed))
  return sampling.sample_cohort(num_clients, 1,
                                mechanism_key.round_rng(key, round_num),
                                poisson=True, sampling_rate=rate)


def worker_children(parent: Optional[int] = None) -> list[int]:
  """Pids of live (not zombie) `worker_binary` processes whose parent is
  `parent` (default: this process)."""
  parent = str(os.getpid() if parent is None else parent)
  pids = []
  for entry in os.listdir('/proc'):
    if not entry.isdigit():
      continue
    try:
      with open(f'/proc/{entry}/stat') as f:
        stat = f.read()
    except OSError:
      continue
    # Format: pid (comm) state ppid ...
    comm = stat[stat.index('(') + 1:stat.rindex(')')]
    state, ppid = stat[stat.rindex(')') + 2:].split()[:2]
    if comm.startswith('worker_binary') and ppid == parent and state != 'Z':
      pids.append(int(entry))
  return pids


@pytest.fixture(scope='session', autouse=True)
def tff_context():
  """Installs our TFF context lazily and ends its worker after the session."""
  yield
  import sys  # pylint: disable=g-import-not-at-top
  if 'tff_hdp.runtime' in sys.modules:
    sys.modules['tff_hdp.runtime'].shutdown()
  leftover = worker_children()
  assert not leftover, f'worker_binary processes left running: {leftover}'


def pytest_unconfigure(config):
  """The session is over: at exit, every object is frozen first
  (gc.freeze), so Python's shutdown collections skip the millions of
  objects TensorFlow and TFF keep (a few seconds of a test process that
  loaded them all, which xdist's controller waits for at the end of the
  run). The session's checks (`tff_context`) have run."""
  del config
  atexit.register(gc.freeze)


@pytest.fixture
def tff_runtime():
  """Use in tests that run TFF computations: our context is installed."""
  from tff_hdp import runtime  # pylint: disable=g-import-not-at-top
  runtime.install_local_cpp_context()
  return runtime


@pytest.fixture(scope='session')
def two_workers(tff_context):
  """Two local TFF worker_binary processes for the tests of distributed
  rounds (`tff_hdp.distributed`); ended, and checked gone, after them (and
  before `tff_context` checks that no worker is left)."""
  del tff_context  # Requested for the order of teardown.
  from tff_hdp import distributed  # pylint: disable=g-import-not-at-top
  started = distributed.start_local_workers(2)
  yield started
  for worker in started:
    worker.stop()
  assert all(w.process.poll() is not None for w in started)


# The files of a few long end-to-end tests, longest first (seconds of a
# file's tests and their number, from a quiet `.ci/run` at 4f9a4d2 on the
# 2-core Intel Xeon, matmul peak 186.5 GFLOP/s). Under `make test`
# (pytest-xdist, --dist=loadfile) xdist hands out files by their number of
# tests, most first, so these would come last and one worker would run them
# while the other idles; started first, the many short files fill the end
# and the two workers finish together. A scheduling hint only: a file that
# is no longer long, or no longer exists, costs nothing.
LONG_FILES_FIRST = (
    'tests/test_round_conformance.py',  # 47 s, 12 tests
    'tests/test_secret_randomness.py',  # 44 s, 4 tests
    'tests/test_tutorial.py',  # 39 s, 1 test
    'tests/test_api_first_week.py',  # 37 s, 14 tests
    'tests/fedhdp/test_sweep_fedhdp.py',  # 34 s, 1 test
    'tests/test_empty_cohorts.py',  # 25 s, 9 tests
    'tests/test_distributed_binaries.py',  # 25 s, 8 tests
    'tests/test_algorithm_objects.py',  # 23 s, 8 tests
    'tests/test_round_executors.py',  # 22 s, 6 tests
    'tests/test_mnist_full.py',  # 19 s, 9 tests
    'tests/robust_hdp/test_distributed.py',  # 13 s, 3 tests
    'tests/test_api_evaluation.py',  # 11 s, 4 tests
    'tests/test_bench_parallel.py',  # 9 s, 3 tests
)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
  """xdist's per-file scheduling, `LONG_FILES_FIRST` first; None (xdist's
  own) under any other --dist."""
  if config.getoption('dist') != 'loadfile':
    return None
  from xdist.scheduler import LoadFileScheduling  # pylint: disable=g-import-not-at-top

  class LongFilesFirst(LoadFileScheduling):

    def _assign_work_unit(self, node):
      # The queue of files (an OrderedDict), filled before the first call.
      for name in reversed(LONG_FILES_FIRST):
        if name in self.workqueue:
          self.workqueue.move_to_end(name, last=False)
      super()._assign_work_unit(node)

  return LongFilesFirst(config, log)
