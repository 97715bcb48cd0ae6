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
"""Every library module, binary and test has a Bazel target in its BUILD.

As in TFF, each package directory has a BUILD file with one target per
source file; deps name targets that exist. (Bazel itself is not needed to run
this check.)
"""

import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP_DIRS = {'.git', '.venv', '.ci', '__pycache__', 'build', 'dist', 'results',
             'figures', '.pytest_cache'}

_RULE = re.compile(r'(py_library|py_binary|py_test)\(\s*(.*?)\n\)', re.S)
_NAME = re.compile(r'name\s*=\s*"([^"]+)"')
_SRCS = re.compile(r'srcs\s*=\s*\[([^\]]*)\]')
_DEPS = re.compile(r'deps\s*=\s*\[([^\]]*)\]')
_STRING = re.compile(r'"([^"]+)"')


def _python_dirs():
  """Package directories (relative) holding .py files, root excluded."""
  out = {}
  for root, dirs, files in os.walk(REPO):
    dirs[:] = [d for d in dirs
               if d not in SKIP_DIRS and not d.endswith('.egg-info')]
    rel = os.path.relpath(root, REPO)
    py = sorted(f for f in files if f.endswith('.py'))
    if py and rel != '.':
      out[rel] = py
  return out


def _targets(package):
  """{name: (rule, srcs, deps)} of `package`/BUILD."""
  with open(os.path.join(REPO, package, 'BUILD')) as f:
    text = f.read()
  targets = {}
  for rule, body in _RULE.findall(text):
    name = _NAME.search(body).group(1)
    srcs = _STRING.findall(_SRCS.search(body).group(1)) if _SRCS.search(
        body) else []
    deps = _STRING.findall(_DEPS.search(body).group(1)) if _DEPS.search(
        body) else []
    assert name not in targets, f'{package}/BUILD: duplicate target {name}'
    targets[name] = (rule, srcs, deps)
  return targets


PACKAGES = _python_dirs()


def test_packages_found():
  assert {'tff_hdp', 'datasets', 'run_scripts', 'benchmarks', 'tests'} <= set(
      PACKAGES)


@pytest.mark.parametrize('package', sorted(PACKAGES))
def test_every_file_has_a_target(package):
  assert os.path.isfile(os.path.join(REPO, package, 'BUILD')), (
      f'{package}/ has Python files but no BUILD file')
  targets = _targets(package)
  covered = {s for _, srcs, _ in targets.values() for s in srcs}
  missing = [f for f in PACKAGES[package] if f not in covered]
  assert not missing, f'{package}/BUILD has no target for {missing}'
  for name, (rule, srcs, _) in targets.items():
    for src in srcs:
      assert src in PACKAGES[package], f'{package}/BUILD:{name}: no {src}'
    is_test = any(re.match(r'(test_.*|.*_test)\.py$', s) for s in srcs)
    assert is_test == (rule == 'py_test'), (
        f'{package}/BUILD:{name}: tests must be py_test targets and only tests')


@pytest.mark.parametrize('package', sorted(PACKAGES))
def test_every_dep_exists(package):
  for name, (_, _, deps) in _targets(package).items():
    for label in deps:
      if label.startswith(':'):
        dep_package, dep_name = package, label[1:]
      else:
        assert label.startswith('//'), f'{package}:{name}: bad label {label}'
        dep_package, _, dep_name = label[2:].partition(':')
        dep_name = dep_name or os.path.basename(dep_package)
      assert dep_name in _targets(dep_package), (
          f'{package}:{name}: dep {label} does not exist')


def test_build_files_are_generated_from_the_imports():
  """Every BUILD file is what tools/generate_build_files.py writes from the
  imports today: a new file's target comes from running it, never by hand."""
  import sys  # pylint: disable=g-import-not-at-top
  sys.path.insert(0, os.path.join(REPO, 'tools'))
  try:
    import generate_build_files  # pylint: disable=g-import-not-at-top
  finally:
    sys.path.pop(0)
  stale = [path for path, text in generate_build_files.generate().items()
           if open(os.path.join(REPO, path), encoding='utf-8').read() != text]
  assert not stale, (f'stale BUILD files {stale}: run python '
                     'tools/generate_build_files.py')
