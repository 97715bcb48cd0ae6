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
"""The modules that must import without TensorFlow (the binaries' flag
checks and the accountant run before TensorFlow loads), each checked in a
fresh Python."""

import os
import subprocess
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAVY = ('tensorflow', 'tensorflow_privacy', 'tensorflow_federated', 'jax')


def heavy_imports(module: str) -> subprocess.CompletedProcess:
  """Imports `module` in a fresh Python; its exit status is 1, and its
  stdout the heavy modules it pulled in, if any of `HEAVY` came with it."""
  code = (f'import sys; import {module}; '
          'bad = [m for m in sys.modules if m.split(".")[0] in '
          f'{HEAVY!r}]; print(bad); sys.exit(1 if bad else 0)')
  return subprocess.run([sys.executable, '-c', code], cwd=REPO_ROOT,
                        capture_output=True, text=True, timeout=120,
                        check=False)


@pytest.mark.parametrize('module', [
    'tff_hdp.privacy.accounting',
    'tff_hdp.privacy.rdp_search',
    'tff_hdp.privacy.privacy_ledger',
    # The binaries compare a finished run's configuration before TensorFlow.
    'tff_hdp.checkpoint',
    'tff_hdp.run_config',  # The three systems' configs share it.
    'tff_hdp.registry',  # Every system's algorithms and rules register in it.
    'tff_hdp.fedhdp.clip_noise',
    'tff_hdp.fedhdp.audit',
    # HDP-Bench's flag checks import every registered method.
    'tff_hdp.bench.registry',
    'tff_hdp.bench.methods',  # Every method's file (e.g. idp_scale's).
    'tff_hdp.bench.preferences',
    'tff_hdp.bench.population',
    'tff_hdp.bench.leaderboard',
])
def test_does_not_import_tensorflow(module):
  result = heavy_imports(module)
  assert result.returncode == 0, result.stdout + result.stderr
