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
"""The docs' tables of rules, algorithms and methods list the registries'.

A table in docs/ that lists what a registry holds is checked against it, so
that a rule, algorithm or method added in its file and left out of the
docs fails here (and one removed from the package cannot stay listed).
"""

import os
import re

from tff_hdp import bench
from tff_hdp.fedhdp import algorithm_registry as fedhdp_algorithms
from tff_hdp.robust_hdp import rule_registry
from tff_hdp.udp import algorithm_registry as udp_algorithms
import tff_hdp.bench.methods  # pylint: disable=unused-import  # Registered.
import tff_hdp.fedhdp.algorithms  # pylint: disable=unused-import
import tff_hdp.robust_hdp.rules  # pylint: disable=unused-import
import tff_hdp.udp.algorithms  # pylint: disable=unused-import

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), 'docs')


def _package(entries) -> list[str]:
  """The names of the package's own entries (a test file may have
  registered others in this process)."""
  return [name for name, entry in entries
          if (getattr(entry, 'source_module', None) or
              type(entry).__module__).startswith('tff_hdp.')]


def _first_column(page: str, header: str) -> list[str]:
  """The `code` names in the first column of the table under the row that
  starts with `header` on docs/`page`."""
  with open(os.path.join(DOCS, page), encoding='utf-8') as f:
    text = f.read()
  start = text.index(header)
  names = []
  for line in text[start:].splitlines()[2:]:
    if not line.startswith('|'):
      break
    found = re.match(r'\| `(\w+)`', line)
    if found:
      names.append(found.group(1))
  return names


def test_bench_md_lists_every_method():
  # Grouped by family on the page: the same names, in any order.
  assert sorted(_first_column('bench.md', '| method | family |')) == sorted(
      _package(bench.registered().items()))


def test_privacy_md_lists_every_rule():
  assert _first_column('privacy.md', '| rule (`--algorithm`) |') == _package(
      (name, rule_registry.get(name)) for name in rule_registry.names())


def test_api_systems_md_names_every_algorithm():
  with open(os.path.join(DOCS, 'api_systems.md'), encoding='utf-8') as f:
    text = f.read()
  fedhdp_row = re.search(r"^\| `algorithm` \| `'fedhdp'` \|.*$", text, re.M)
  udp_row = re.search(r"^\| `algorithm` \| `'udp'` \|.*$", text, re.M)
  for name in _package((n, fedhdp_algorithms.get(n))
                       for n in fedhdp_algorithms.names()):
    assert f"`'{name}'`" in fedhdp_row.group(0), name
  for name in _package((n, udp_algorithms.get(n))
                       for n in udp_algorithms.names()):
    if not udp_algorithms.get(name).one_user_per_step:  # The driver's.
      assert f"`'{name}'`" in udp_row.group(0), name


def _adding_sections():
  """(page, heading, its prose lines) of every 'Adding ...' section."""
  for page in sorted(os.listdir(DOCS)):
    if not page.endswith('.md'):
      continue
    with open(os.path.join(DOCS, page), encoding='utf-8') as f:
      lines = f.read().splitlines()
    for i, line in enumerate(lines):
      if re.match(r'#+ Adding ', line):
        prose, in_code = [], False
        for body in lines[i + 1:]:
          if body.startswith('#') and not in_code:
            break
          if body.startswith('```'):
            in_code = not in_code
          elif body.strip() and not in_code:
            prose.append(body)
        yield page, line, prose


def test_how_to_add_a_thing_takes_at_most_15_lines():
  sections = list(_adding_sections())
  assert len(sections) >= 3  # A rule, an algorithm, a bench method.
  for page, heading, prose in sections:
    assert len(prose) <= 15, (page, heading, len(prose))
