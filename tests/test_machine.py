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
"""What every results.json records of where it ran (`tff_hdp.machine`)."""

import os
import re
import subprocess

from tff_hdp import machine

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_commit_is_gits_head_and_says_when_the_tree_differs(tmp_path):
  head = subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=REPO,
                        capture_output=True, text=True, check=True)
  dirty = subprocess.run(['git', 'diff', '--quiet', 'HEAD'],
                         cwd=REPO).returncode != 0
  assert machine.commit(REPO) == head.stdout.strip() + (
      '-dirty' if dirty else '')
  assert re.fullmatch(r'[0-9a-f]{40}(-dirty)?', machine.commit())
  assert machine.commit(str(tmp_path)) is None  # Not a checkout.


def test_provenance_times_the_peak_only_for_a_long_run():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  short = machine.provenance(tf, seconds=1.0)
  assert set(short) == {'commit', 'cpu', 'cores'}
  assert short['cores'] == len(os.sched_getaffinity(0))
  with open('/proc/cpuinfo') as f:
    assert f'model name\t: {short["cpu"]}' in f.read()
  long = machine.provenance(tf, seconds=machine.PEAK_AFTER_SECONDS)
  assert long['matmul_peak_gflops'] > 1.0
