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
"""Subprocess jobs of the sweeps: each logged to its folder, `parallel` at a
time, TensorFlow's threads shared among them.
"""

import concurrent.futures
import os
import subprocess
from typing import Callable, Optional, Sequence

from tff_hdp.run_scripts import cli


def run_logged(command: Sequence[str], output_dir: str,
               threads: Optional[int] = None) -> int:
  """Runs `command` with its output appended to `<output_dir>/log.txt`;
  returns its exit status (the sweeps' one run). `threads`: TensorFlow's
  intra- and inter-op threads in that process (None: its default, every
  core), given when runs share the machine (`threads_per_job`); they then
  share a GPU too, each taking its memory as it needs it rather than all of
  it (TF_FORCE_GPU_ALLOW_GROWTH, unless already set)."""
  os.makedirs(output_dir, exist_ok=True)
  env = None
  if threads is not None:
    env = dict(os.environ, TF_NUM_INTRAOP_THREADS=str(threads),
               TF_NUM_INTEROP_THREADS=str(threads))
    env.setdefault('TF_FORCE_GPU_ALLOW_GROWTH', 'true')
  with open(os.path.join(output_dir, 'log.txt'), 'ab') as log:
    return subprocess.run(list(command), stdout=log, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, env=env,
                          check=False).returncode


def threads_per_job(parallel: int) -> Optional[int]:
  """TensorFlow threads of each of `parallel` runs at a time: the cores
  shared among them (None for one run: TensorFlow's default). k runs of
  every core's threads each oversubscribe the cores, and TensorFlow's
  spinning thread pools then slow each other down."""
  if parallel <= 1:
    return None
  from tff_hdp.bench import parallel as bench_parallel  # pylint: disable=g-import-not-at-top
  return max(1, bench_parallel.available_cores() // parallel)


def run_jobs(jobs: Sequence[tuple[str, Callable[[], int]]],
             parallel: int) -> list[str]:
  """Runs named jobs (each returns an exit status), `parallel` at a time,
  printing `done <name>` or `FAILED (exit <rc>) <name>` as each ends;
  returns the names of the failed ones."""
  failed = []
  with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
    futures = {pool.submit(job): name for name, job in jobs}
    for future in concurrent.futures.as_completed(futures):
      name, rc = futures[future], future.result()
      print(f'{"done" if rc == 0 else f"FAILED (exit {rc})"} {name}',
            flush=True)
      if rc:
        failed.append(name)
  return failed


def exit_if_failed(failed: Sequence[str], jobs: str) -> None:
  """Ends a sweep whose `jobs` ('rows', 'runs') named `failed` failed: one
  line naming them and exit status 1; returns if none did."""
  if failed:
    cli.fail(f'{len(failed)} {jobs} failed (see their log.txt): '
         f'{", ".join(failed)}', cli.EXIT_RUNTIME)
