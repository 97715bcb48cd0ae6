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
left out of setup.py's `package_data`, fails here. The checkout's
`datasets/` and `run_scripts/` folders are installed as `tff_hdp.datasets`
and `tff_hdp.run_scripts` (never as top-level `datasets`, Hugging Face's
name, or `run_scripts`): the loaders load the offline digits from the install,
and an installed binary runs from another directory. `benchmarks/` is not
installed (the benchmarks run from the checkout).

The checkout's own (editable) install maps the two folders the same way, so
`python run_scripts/<binary>.py` runs from any directory with no `sys.path`
edit; no binary edits `sys.path`, and no source imports the folders by their
top-level names (the tests run with the repository root on `sys.path`, where
such an import would still work and hide the mistake).

pip builds a local directory in place (setuptools writes `build/` and
`tff_hdp.egg-info/` into it, and `build/lib` keeps modules deleted since), so
the install is of a copy of the checkout, without its results, virtual
environment and caches.
"""

import json
import os
import re
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
from tff_hdp import datasets
from tff_hdp.datasets import mnist_5k
from tff_hdp.fedhdp import paper_tables as fedhdp_tables
from tff_hdp.robust_hdp import paper_tables as robust_hdp_tables
from tff_hdp.robust_hdp import privacy_preferences
from tff_hdp.udp import paper_tables as udp_tables
from tff_hdp.run_scripts import cli

rows = fedhdp_tables.load_reference()
row = fedhdp_tables.find_row(rows, dataset='mnist', algorithm='hdp_fedavg',
                             r=None, lambda_p=0.005, lambda_np=0.005, table=2)
epsilons, batch_sizes = privacy_preferences.load_distribution('dist1', 20)
digits = datasets.load_fedhdp_data('digits', num_clients=20, seed=0)
print(json.dumps({
    'files': [m.__file__ for m in (tff_hdp, tff_hdp.fedhdp, tff_hdp.privacy,
                                   tff_hdp.robust_hdp, tff_hdp.udp, datasets,
                                   mnist_5k, cli)],
    'one_error_class': mnist_5k.DataFileError is datasets.DataFileError,
    'digits_clients': digits.num_clients,
    'tables': [str(t) for t in (fedhdp_tables.REFERENCE_CSV,
                                robust_hdp_tables.REFERENCE_CSV,
                                privacy_preferences.REFERENCE_CSV,
                                udp_tables.REFERENCE_CSV)],
    'paper001_rows': len(rows),
    'paper001_table2_mnist_hdp_fedavg_acc_g': row.values['acc_g'],
    'paper003_table2_min_epsilon_dist6':
        robust_hdp_tables.load_reference()['min_epsilon']['dist6'],
    'paper003_dist1_client0': [epsilons[0], batch_sizes[0]],
    'paper004_femnist': [(r['quantity'], r['value'])
                         for r in udp_tables.reference_rows('femnist')],
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
  # Only the top-level name tff_hdp: the checkout's `datasets/` and
  # `run_scripts/` are its subpackages (see setup.py).
  assert not (target / 'datasets').exists()
  assert not (target / 'run_scripts').exists()
  # Nor the benchmarks (benchmarks/, run from the checkout).
  assert not (target / 'benchmarks').exists()
  assert not (target / 'tff_hdp' / 'run_scripts' / 'timing.py').exists()
  assert (target / 'tff_hdp' / 'datasets' / 'mnist_5k.py').is_file()
  assert (target / 'tff_hdp' / 'run_scripts' / 'run_fedhdp.py').is_file()

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
  assert found['one_error_class']
  assert found['digits_clients'] == 20

  # An installed binary, by its path, from another directory (TF-free).
  binary = target / 'tff_hdp' / 'run_scripts' / 'privacy_report.py'
  report = subprocess.run([sys.executable, str(binary), '--preset=mnist'],
                          cwd=elsewhere, env=env, capture_output=True,
                          text=True, timeout=300)
  assert report.returncode == 0, report.stderr[-3000:]
  assert 'epsilon=3.6' in report.stdout, report.stdout


def test_checkout_folders_import_by_installed_names(tmp_path):
  """This environment's install of tff_hdp (`make install`: editable) maps
  `datasets/` and `run_scripts/` too, and a binary runs from elsewhere, even
  with another top-level `datasets` (as Hugging Face's) first on the path."""
  other = tmp_path / 'other' / 'datasets'
  other.mkdir(parents=True)
  (other / '__init__.py').write_text('IS_OURS = False\n')
  env = dict(os.environ, PYTHONPATH=str(other.parent))
  run = subprocess.run(
      [sys.executable, '-c',
       'import json, tff_hdp; from tff_hdp import datasets; '
       'from tff_hdp.run_scripts import cli; import datasets as other; '
       'assert not other.IS_OURS; '
       'assert datasets.load_fedhdp_data("digits", num_clients=20)'
       '.num_clients == 20; '
       'print(json.dumps([m.__file__ for m in (tff_hdp, datasets, cli)]))'],
      cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
  assert run.returncode == 0, (
      'tff_hdp.datasets or tff_hdp.run_scripts does not import from outside '
      'the checkout, or is not ours beside another `datasets`; is the '
      'install older than setup.py? Run make install.\n'
      + run.stderr[-3000:])
  package, loaders, cli = json.loads(run.stdout.strip().splitlines()[-1])
  root = os.path.dirname(os.path.dirname(package))
  # From the checkout (editable) or from one installed copy, never mixed.
  if os.path.samefile(root, REPO):
    assert os.path.samefile(loaders, os.path.join(REPO, 'datasets',
                                                  '__init__.py'))
    assert os.path.samefile(cli, os.path.join(REPO, 'run_scripts', 'cli.py'))
  else:
    assert loaders.startswith(os.path.dirname(package) + os.sep), loaders
    assert cli.startswith(os.path.dirname(package) + os.sep), cli

  report = subprocess.run(
      [sys.executable, os.path.join(REPO, 'run_scripts', 'privacy_report.py'),
       '--preset=mnist'], cwd=tmp_path, env=env, capture_output=True,
      text=True, timeout=300)
  assert report.returncode == 0, report.stderr[-3000:]
  assert 'epsilon=3.6' in report.stdout, report.stdout


# An import of the folders by their top-level names, in Python source or in a
# notebook's or a document's code (`from sklearn import datasets` is not one).
_TOP_LEVEL_IMPORT = re.compile(
    r'^[ \t]*"?[ \t]*(?:import[ \t]+(?:datasets|run_scripts)\b|'
    r'from[ \t]+(?:datasets|run_scripts)[ \t.])', re.M)


def _sources(*suffixes):
  for root, dirs, files in os.walk(REPO):
    dirs[:] = [d for d in dirs if d not in _NOT_SOURCE and d != '__pycache__'
               and not d.endswith('.egg-info')]
    for name in files:
      if name.endswith(suffixes):
        yield os.path.join(root, name)


def test_no_binary_edits_sys_path():
  # Nor do the benchmarks (not installed): run as scripts, they import their
  # shared `timing` from their own folder, first on sys.path.
  editing = []
  for folder in ('run_scripts', 'benchmarks'):
    for name in sorted(os.listdir(os.path.join(REPO, folder))):
      if name.endswith('.py'):
        with open(os.path.join(REPO, folder, name)) as f:
          if 'sys.path' in f.read():
            editing.append(f'{folder}/{name}')
  assert not editing, f'binaries that edit sys.path: {editing}'


def test_nothing_imports_the_folders_by_top_level_names():
  found = []
  for path in _sources('.py', '.ipynb', '.md'):
    with open(path, encoding='utf-8') as f:
      for match in _TOP_LEVEL_IMPORT.finditer(f.read()):
        found.append(f'{os.path.relpath(path, REPO)}: {match.group(0).strip()}')
  assert not found, ('import them as tff_hdp.datasets and tff_hdp.run_scripts '
                     '(see setup.py):\n' + '\n'.join(found))
