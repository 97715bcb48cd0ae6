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
"""Runs a command and prints its wall time with the machine it ran on.

    python run_scripts/timed.py --name='make demo' -- make demo-runs

`make demo` and `make bench-quick` end with this line, so that their time
is a figure of its own (issue 64): the seconds, the commit, the CPU and its
cores, and the same-run 2048^2 float32 matmul peak (`tff_hdp.machine.peak`,
timed once the command has ended, so that it takes nothing from it). The
line says that the time is a speed figure only if nothing else ran. Exits
with the command's status; the line is printed whatever that status.
"""

import os
import subprocess
import sys
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
from absl import app
from absl import flags

from tff_hdp import machine
from tff_hdp.run_scripts import cli

_NAME = flags.DEFINE_string('name', None, 'What the line calls the command '
                            '(default: the command itself).')


def summary(name: str, seconds: float, commit, peak: float) -> str:
  """The printed line."""
  return (f'{name}: {seconds:.0f} s wall at {commit or "an unknown commit"} '
          f'on {machine.cpu_name()} x {os.cpu_count()} cores; same-run '
          f'2048^2 float32 matmul peak {peak / 1e9:.1f} GFLOP/s (timed '
          'after it); a speed figure only if nothing else ran')


def main(argv):
  command = list(argv[1:])
  cli.check(bool(command), 'no command to time: give it after --, e.g. '
            "timed.py --name='make demo' -- make demo-runs")
  start = time.perf_counter()
  status = subprocess.run(command, check=False).returncode
  seconds = time.perf_counter() - start
  import tensorflow as tf
  print(summary(_NAME.value or ' '.join(command), seconds,
                machine.commit(os.path.dirname(os.path.abspath(__file__))),
                machine.peak(tf)), flush=True)
  sys.stderr.flush()
  # Not sys.exit: TensorFlow's objects, torn down with the interpreter,
  # print 'Exception ignored in ... __del__' after the line. Nothing is
  # left to write.
  os._exit(status)  # pylint: disable=protected-access


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
