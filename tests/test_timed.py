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
"""run_scripts/timed.py, the line `make demo` and `make bench-quick` end
with: the command's status kept, its time with the machine and a same-run
peak, and no command refused in one line."""

import re
import sys

from tests import binaries


def test_it_keeps_the_commands_status_and_names_the_machine():
  result = binaries.run('timed.py', [
      '--name=probe', '--', sys.executable, '-c',
      'import sys, time; time.sleep(1.2); sys.exit(3)'])
  assert result.returncode == 3, result.stderr
  line = result.stdout.strip().splitlines()[-1]
  match = re.fullmatch(
      r'probe: (\d+) s wall at (\S+) on (.+) x (\d+) cores; same-run 2048\^2 '
      r'float32 matmul peak ([\d.]+) GFLOP/s \(timed after it\); a speed '
      r'figure only if nothing else ran', line)
  assert match, line
  seconds, _, cpu, cores, peak = match.groups()
  assert int(seconds) >= 1 and cpu and int(cores) >= 1 and float(peak) > 0


def test_no_command_is_refused_in_one_line():
  result = binaries.run_before_tensorflow('timed.py', ['--name=x'])
  assert result.returncode == 2, result.stderr
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1 and 'no command to time' in lines[0], lines
