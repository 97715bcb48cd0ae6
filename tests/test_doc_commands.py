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
"""Every command the docs show names a binary and flags that exist.

The fenced code blocks of README.md and docs/**/*.md, and the Makefile's
recipes, are read for invocations of `run_scripts/<name>.py` and
`benchmarks/<name>.py`; each binary must exist in the folder the command
names, and every `--flag` (or `--noflag`) given to it must be one its
`--helpfull` lists. A renamed binary or flag that a doc still shows fails
here, not in a reader's terminal.
"""

import functools
import glob
import os
import re
import shlex
import subprocess
import sys

import pytest

from tests import binaries

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A binary is named by its path from the repository root, without `.py`.
_SCRIPT = re.compile(r'((?:run_scripts|benchmarks)/\w+)\.py')
# Sweeps pass the flags after a bare `--` on to every run of this binary.
DELEGATES = {f'run_scripts/sweep_{system}': f'run_scripts/run_{system}'
             for system in ('fedhdp', 'robust_hdp', 'udp')}
# A wrapper runs the command after its `--`: that command is checked too.
WRAPPERS = {'run_scripts/timed'}


def _documents() -> list[str]:
  return [os.path.join(REPO, 'README.md')] + sorted(
      glob.glob(os.path.join(REPO, 'docs', '**', '*.md'), recursive=True))


def _fenced_blocks(text: str) -> list[str]:
  return re.findall(r'^```[^\n]*\n(.*?)^```', text, re.M | re.S)


def _commands(block: str) -> list[str]:
  """The block's lines, continuation lines (ending in \\) joined."""
  return [line.strip() for line in
          re.sub(r'\\\n\s*', ' ', block).splitlines() if line.strip()]


def parse_block(where: str, block: str) -> list[tuple[str, str, list[str]]]:
  """(where, binary name, its --flags) of each invocation in `block`."""
  found = []
  for command in _commands(block):
    match = _SCRIPT.search(command)
    if not match:
      continue
    rest = command[match.end():].split('#')[0].replace('$(PY)', '')
    try:
      words = shlex.split(rest)
    except ValueError:  # An unbalanced quote in prose: take it raw.
      words = rest.split()
    binary = match.group(1)
    own, passed = (words[:words.index('--')], words[words.index('--') + 1:]
                   ) if '--' in words else (words, [])
    found.append((where, binary, _flag_names(own)))
    if passed and binary in WRAPPERS:
      found += parse_block(where, shlex.join(passed))
    elif passed:
      assert binary in DELEGATES, f'{where}: {binary} takes no -- flags'
      found.append((where, DELEGATES[binary], _flag_names(passed)))
  return found


def invocations() -> list[tuple[str, str, list[str]]]:
  """(where, binary name, its --flags) of every documented invocation."""
  sources = [(path, _fenced_blocks(open(path, encoding='utf-8').read()))
             for path in _documents()]
  with open(os.path.join(REPO, 'Makefile'), encoding='utf-8') as f:
    sources.append((os.path.join(REPO, 'Makefile'), [f.read()]))
  return [found for path, blocks in sources for block in blocks
          for found in parse_block(os.path.relpath(path, REPO), block)]


def _flag_names(words: list[str]) -> list[str]:
  return [w.split('=')[0][2:] for w in words if w.startswith('--')]


@functools.lru_cache(maxsize=None)
def known_flags(binary: str) -> frozenset[str]:
  """The flag names `--helpfull` lists (booleans also as no<name>); the
  binaries of run_scripts/ answer in the process
  `binaries.run_before_tensorflow` keeps, the benchmarks (whose helpers
  outside the package may define flags) each in a process of its own."""
  folder, name = binary.split('/')
  if folder == 'run_scripts':
    result = binaries.run_before_tensorflow(name + '.py', ['--helpfull'])
  else:
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, binary + '.py'), '--helpfull'],
        capture_output=True, text=True, timeout=120, cwd=REPO, check=False)
  names = set()
  for match in re.finditer(r'^\s+--(\[no\])?(\w+)', result.stdout, re.M):
    names.add(match.group(2))
    if match.group(1):
      names.add('no' + match.group(2))
  return frozenset(names | {'help', 'helpfull', 'helpshort'})


def test_the_docs_show_commands_at_all():
  shown = {b for _, b, _ in invocations()}
  # The three systems' main binaries and their audits, at least.
  assert {f'run_scripts/{task}_{system}' for task in ('run', 'audit')
          for system in ('fedhdp', 'robust_hdp', 'udp')} <= shown, shown
  # The benchmarks' commands are checked too.
  assert any(b.startswith('benchmarks/') for b in shown), shown


@pytest.mark.parametrize('binary', sorted({b for _, b, _ in invocations()}))
def test_every_documented_binary_and_flag_exists(binary):
  assert os.path.exists(os.path.join(REPO, binary + '.py')), (
      f'{binary}.py is shown in the docs but does not exist')
  known = known_flags(binary)
  assert len(known) > 3, f'{binary} --helpfull listed no flags'
  unknown = sorted({(where, flag) for where, b, flags in invocations()
                    if b == binary for flag in flags if flag not in known})
  assert not unknown, f'{binary}: flags shown in the docs but unknown: {unknown}'


def test_an_unknown_flag_is_caught():
  # The check itself can fail: a made-up flag is not in the list.
  assert 'no_such_flag' not in known_flags('run_scripts/audit_udp')
  assert {'quick', 'observe', 'statistic', 'noprogress'} <= known_flags(
      'run_scripts/audit_udp')


def test_parse_block_joins_lines_and_splits_delegated_flags():
  block = ('$ .venv/bin/python run_scripts/sweep_robust_hdp.py --figures=2 \\\n'
           '    --seeds=0 -- $R --algorithm=weiavg --nopoisson_sampling  # x\n'
           'echo no binary here --flag\n')
  assert parse_block('doc', block) == [
      ('doc', 'run_scripts/sweep_robust_hdp', ['figures', 'seeds']),
      ('doc', 'run_scripts/run_robust_hdp',
       ['algorithm', 'nopoisson_sampling'])]
