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
"""A non-editable install of `tff_hdp` works away from the checkout.

`pip install --target` puts the package in a temporary directory; a fresh
Python whose working directory is another temporary directory, with only that
install on its PYTHONPATH, imports the three systems and the privacy package
from it and reads each system's paper tables (package data found through
`importlib.resources`). A table read by a path relative to the checkout, or
left out of setup.py's `package_data`, fails here.

pip builds a local directory in place (setuptools writes `build/` and
`tff_hdp.egg-info/` into it, and `build/lib` keeps modules deleted since), so
the install is of a copy of the checkout, without its results, virtual
environment and caches.
"""

import json
import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Top-level directories of the checkout that are no part of a source tree.
_NOT_SOURCE = {'.git', '.venv', '.ci', 'results', 'figures', 'outputs',
               'build', 'dist'}

# Run by the installed package: what it imported from where, and a known value
# of each system's paper tables.
_CHECK = r'''
import json

import tff_hdp
import tff_hdp.fedhdp
import tff_hdp.privacy
import tff_hdp.robust_hdp
import tff_hdp.udp
from tff_hdp.fedhdp import paper_tables
from tff_hdp.robust_hdp import noise_power
from tff_hdp.robust_hdp import privacy_preferences
from tff_hdp.udp import paper_numbers

rows = paper_tables.load_reference()
row = paper_tables.find_row(rows, dataset='mnist', algorithm='hdp_fedavg',
                            r=None, lambda_p=0.005, lambda_np=0.005, table=2)
epsilons, batch_sizes = privacy_preferences.load_distribution('dist1', 20)
print(json.dumps({
    'files': [m.__file__ for m in (tff_hdp, tff_hdp.fedhdp, tff_hdp.privacy,
                                   tff_hdp.robust_hdp, tff_hdp.udp)],
    'tables': [str(t) for t in (paper_tables.REFERENCE_CSV,
                                noise_power.REFERENCE_CSV,
                                privacy_preferences.REFERENCE_CSV,
                                paper_numbers.REFERENCE)],
    'paper001_rows': len(rows),
    'paper001_table2_mnist_hdp_fedavg_acc_g': row.values['acc_g'],
    'paper003_table2_min_epsilon_dist6':
        noise_power.load_reference()['min_epsilon']['dist6'],
    'paper003_dist1_client0': [epsilons[0], batch_sizes[0]],
    'paper004_femnist': [(r['quantity'], r['value'])
                         for r in paper_numbers.reference_rows('femnist')],
}))
'''


def _ignore(directory, names):
  skip = {n for n in names if n in ('__pycache__', '.pytest_cache') or
          n.endswith('.egg-info')}
  if os.path.samefile(directory, REPO):
    skip |= _NOT_SOURCE & set(names)
  return skip


def test_non_editable_install_reads_its_tables(tmp_path):
  source = tmp_path / 'source'
  shutil.copytree(REPO, source, ignore=_ignore, symlinks=True)
  target = tmp_path / 'installed'
  install = subprocess.run(
      [sys.executable, '-m', 'pip', 'install', '--no-deps',
       '--no-build-isolation', '--no-index', '--no-cache-dir',
       '--disable-pip-version-check', '--quiet', '--target', str(target),
       str(source)], capture_output=True, text=True, timeout=300)
  assert install.returncode == 0, install.stdout + install.stderr[-3000:]
  # Only tff_hdp: `datasets/` stays in the checkout (see setup.py).
  assert not (target / 'datasets').exists()

  elsewhere = tmp_path / 'elsewhere'
  elsewhere.mkdir()
  env = dict(os.environ, PYTHONPATH=str(target), TF_CPP_MIN_LOG_LEVEL='2')
  run = subprocess.run([sys.executable, '-c', _CHECK], cwd=elsewhere, env=env,
                       capture_output=True, text=True, timeout=300)
  assert run.returncode == 0, run.stderr[-3000:]
  found = json.loads(run.stdout.strip().splitlines()[-1])

  installed = os.path.realpath(target) + os.sep
  for path in found['files'] + found['tables']:
    assert os.path.realpath(path).startswith(installed), path
  assert found['paper001_rows'] == 123
  assert found['paper001_table2_mnist_hdp_fedavg_acc_g'] == 87.71
  assert found['paper003_table2_min_epsilon_dist6'] == 1868.45
  assert found['paper003_dist1_client0'] == [2.81, 32]
  assert found['paper004_femnist'] == [['gap_to_noiseless', '5.31']]
