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
"""The README is a front door and the docs pages rooms a reader can hold.

Every relative link of README.md and docs/ reaches a file (and, with an
anchor, a heading of it); the README has at most 120 lines and every docs
page at most 400; every picture under docs/ is shown on a page that names,
near it, the command that draws it.
"""

import glob
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = sorted([os.path.join(REPO, 'README.md')] + glob.glob(
    os.path.join(REPO, 'docs', '**', '*.md'), recursive=True))
_LINK = re.compile(r'\]\(([^)\s]+)\)')
_FENCE = re.compile(r'^```.*?^```', re.M | re.S)


def _rel(path: str) -> str:
  return os.path.relpath(path, REPO)


def slug(heading: str) -> str:
  """GitHub's anchor of a Markdown heading."""
  text = re.sub(r'[^\w\- ]', '', heading.strip().lstrip('#').strip().lower())
  return text.replace(' ', '-')


def _anchors(path: str) -> set[str]:
  with open(path, encoding='utf-8') as f:
    text = _FENCE.sub('', f.read())
  return {slug(line) for line in text.splitlines()
          if re.match(r'^#{1,6} ', line)}


def _links(path: str) -> list[str]:
  with open(path, encoding='utf-8') as f:
    text = _FENCE.sub('', f.read())
  return [t for t in _LINK.findall(text)
          if not re.match(r'^[a-z]+:', t)]


@pytest.mark.parametrize('page', PAGES, ids=_rel)
def test_every_link_reaches_its_file_and_heading(page):
  for target in _links(page):
    path, _, anchor = target.partition('#')
    resolved = (os.path.normpath(os.path.join(os.path.dirname(page), path))
                if path else page)
    assert os.path.exists(resolved), f'{_rel(page)}: no {target}'
    if anchor and resolved.endswith('.md'):
      assert anchor in _anchors(resolved), (
          f'{_rel(page)}: {target}: {_rel(resolved)} has no heading '
          f'#{anchor}')


def test_the_readme_is_a_front_door():
  with open(os.path.join(REPO, 'README.md'), encoding='utf-8') as f:
    lines = f.read().splitlines()
  assert len(lines) <= 120, len(lines)


@pytest.mark.parametrize('page', [p for p in PAGES
                                  if not p.endswith('README.md')], ids=_rel)
def test_no_docs_page_is_over_400_lines(page):
  with open(page, encoding='utf-8') as f:
    assert len(f.read().splitlines()) <= 400


@pytest.mark.parametrize('picture', sorted(glob.glob(
    os.path.join(REPO, 'docs', '**', '*.png'), recursive=True)), ids=_rel)
def test_every_picture_is_shown_beside_its_command(picture):
  name = os.path.basename(picture)
  shown = []
  for page in PAGES:
    with open(page, encoding='utf-8') as f:
      lines = f.read().splitlines()
    for i, line in enumerate(lines):
      if re.search(r'!\[[^\]]*\]\([^)]*' + re.escape(name) + r'\)', line):
        near = "\n".join(lines[max(0, i - 20):i + 20])
        shown.append(bool(re.search(
            r'(run_scripts|benchmarks)/\w+\.py|make [a-z0-9-]+', near)))
  assert shown, f'{name} is shown on no page'
  assert all(shown), f'{name}: a page shows it without its command near it'
