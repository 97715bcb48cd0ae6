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
"""Paper 003's Table 2 as transcribed (`tff_hdp.robust_hdp.paper_tables`)."""

import os

import pytest

from tff_hdp.robust_hdp import paper_tables
from tff_hdp.robust_hdp import privacy_preferences

PAPER = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))), 'shared', 'papers',
    '003_e39754153d039a32.txt')
_PAPER_ROWS = {'weiavg': 'WeiAvg [19]', 'dpfedavg': 'DPFedAvg [38]',
               'min_epsilon': 'minimum ϵ [19]', 'robust_hdp': 'Robust-HDP',
               'oracle': 'Oracle (eq. (8))'}


def test_transcription_has_every_cell():
  table = paper_tables.load_reference()
  assert sorted(table) == sorted(paper_tables.TABLE_RULES)
  for row in table.values():
    assert list(row) == list(privacy_preferences.DISTRIBUTIONS)
  assert table['oracle']['dist6'] == 7.60
  assert table['min_epsilon']['dist6'] == 1868.45


def test_transcription_matches_the_paper_text():
  if not os.path.isfile(PAPER):
    pytest.skip(f'paper text {PAPER} not available')
  with open(PAPER, encoding='utf-8') as f:
    lines = f.read().splitlines()
  start = next(i for i, l in enumerate(lines) if l.startswith('Table 2:'))
  table = paper_tables.load_reference()
  for rule, label in _PAPER_ROWS.items():
    line = next(l for l in lines[start:start + 12]
                if l.split('\t')[0] == label)
    printed = [float(v) for v in line.split('\t')[1:]]
    assert printed == list(table[rule].values()), rule
