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
"""tff_hdp.runtime: our worker ends with its parent, even after SIGKILL; the
async context of TFF's programs runs on it."""

import os
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PARENT = '''
import sys, time
sys.path.insert(0, {repo!r})
from tff_hdp import runtime
worker = runtime.Worker()
worker.wait_ready()
print(worker.process.pid, flush=True)
time.sleep(600)
'''


def _alive(pid: int) -> bool:
  try:
    with open(f'/proc/{pid}/stat') as f:
      return f.read().split()[2] != 'Z'
  except FileNotFoundError:
    return False


def test_worker_ends_when_its_parent_is_killed():
  parent = subprocess.Popen([sys.executable, '-c', _PARENT.format(repo=REPO)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, text=True)
  try:
    worker_pid = int(parent.stdout.readline())
    assert _alive(worker_pid)
    with open(f'/proc/{worker_pid}/comm') as f:
      assert f.read().startswith('worker_binary')  # setpriv exec'd it.
  finally:
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    parent.stdout.close()
  deadline = time.monotonic() + 30
  while _alive(worker_pid) and time.monotonic() < deadline:
    time.sleep(0.1)
  outlived = _alive(worker_pid)
  if outlived:  # Ours: end it before failing.
    os.kill(worker_pid, signal.SIGKILL)
  assert not outlived, f'worker {worker_pid} outlived its parent'


def test_async_context_is_a_federated_context_for_tffs_programs(tff_runtime):
  # TFF's program logic (`tff.learning.programs`) needs the current context
  # to be a `tff.program.FederatedContext` whose calls it awaits; ours runs
  # them on our worker, and the sync context comes back on the same worker.
  import asyncio  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top

  @tff.tensorflow.computation(np.float32)
  def double(x):
    return x * 2.0

  @tff.federated_computation(tff.FederatedType(np.float32, tff.SERVER))
  def on_server(x):
    return tff.federated_map(double, x)

  worker = tff_runtime.install_local_cpp_context(asynchronous=True)
  try:
    context = tff.framework.get_context_stack().current
    assert isinstance(context, tff.program.FederatedContext)

    async def run():
      return await tff.program.materialize_value(on_server(3.0))

    assert asyncio.run(run()) == 6.0
  finally:
    assert tff_runtime.install_local_cpp_context() is worker  # Sync again.
  assert on_server(4.0) == 8.0
