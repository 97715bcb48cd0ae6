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
"""Every number on the full-scale results pages is printed by a command.

A page's generated blocks sit between `<!-- NAME: begin -->` and
`<!-- NAME: end -->`; `GENERATED` says which command prints each, from the
kept runs (docs/runs/), and the first test runs it and compares. Every
other decimal number on the page (its text and its hand-written tables;
not its code blocks, which hold commands) must then be one of the numbers
of those blocks, or be one of the page's few `EXCEPTIONS`, each with its
reason. A hand-written figure fails the test. A page may quote the
blocks of a page it links to (`QUOTES`), and a block another test
regenerates (`CHECKED_ELSEWHERE`) counts as a generated block too.
"""

import dataclasses
import decimal
import os
import re
import shutil
from typing import Optional

import pytest

from tests import binaries

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(REPO, 'docs', 'results')

_ABLATION_DIRS = ','.join(
    f'docs/runs/{name}' for name in (
        'paper_scale_noise_off', 'paper_scale_noise_off_fedhdp',
        'paper_scale_fixed_clip', 'paper_scale_fedhdp_skewed',
        'paper_scale_sensitivity', 'paper_scale_personal'))
# The ablations paper001_rows.md reads.
_ROWS_ABLATION_DIRS = ','.join(
    f'docs/runs/{name}' for name in (
        'paper_scale_noise_off', 'paper_scale_fixed_clip',
        'paper_scale_sensitivity', 'paper_scale_personal'))


@dataclasses.dataclass(frozen=True)
class Command:
  """A binary of run_scripts/ and the blocks it prints, in order (joined by
  `joiner`), or, with `writes`, the file of its --output_dir whose text the
  one block holds.

  `copy`: a folder of the repository the command writes into (figures):
  it runs on a copy. `ignore`: the start of lines of its output the page
  leaves out (the paths it wrote).
  """
  script: str
  args: tuple[str, ...]
  blocks: tuple[str, ...]
  writes: Optional[str] = None
  copy: Optional[str] = None
  ignore: Optional[str] = None
  joiner: str = '\n\n'


GENERATED = {
    'paper001.md': (
        Command('tables_fedhdp.py', (
            '--results_dir=docs/runs/paper_scale', '--table=2'),
                ('tables_fedhdp.py',), writes='comparison_table2.md'),
        Command('stats_fedhdp.py', (
            '--results_dir=docs/runs/paper_scale',
            '--noise_off_dirs=docs/runs/paper_scale_noise_off,'
            'docs/runs/paper_scale_noise_off_fedhdp',
            f'--ablation_dirs={_ABLATION_DIRS}'),
                ('stats_fedhdp.py', 'stats_fedhdp.py --ablation_dirs')),
        Command('privacy_report.py', ('--preset=mnist',),
                ('privacy_report.py --preset=mnist',)),
        Command('privacy_report.py', ('--preset=mnist', '--fixed_cohort'),
                ('privacy_report.py --preset=mnist --fixed_cohort',)),
    ),
    'paper001_rows.md': (
        Command('stats_fedhdp.py', (
            '--results_dir=docs/runs/paper_scale',
            f'--ablation_dirs={_ROWS_ABLATION_DIRS}', '--row_analyses'),
                tuple(f'stats_fedhdp.py --row_analyses ({part})' for part in (
                    'clipping', 'variances', 'personal models',
                    'opted-out clients'))),
    ),
    'paper003_full_scale.md': (
        Command('stats_robust_hdp.py', (
            '--results_dirs=docs/runs/paper_scale_robust,'
            'docs/runs/paper_scale_robust_clip_only',),
                ('stats_robust_hdp.py',)),
        Command('sweep_robust_hdp.py', (
            '--dataset=mnist', '--figures=2,4', '--distributions=dist1',
            '--seeds=0', '--results_dir=docs/runs/paper_scale_robust',
            '--plot_only'),
                ('sweep_robust_hdp.py --figures=4',
                 'sweep_robust_hdp.py --figures=2'),
                copy='docs/runs/paper_scale_robust', ignore='wrote ',
                joiner='\n'),
    ),
    'paper003_fmnist.md': (
        Command('stats_robust_hdp.py', (
            '--results_dirs=docs/runs/paper_scale_fmnist/table2',
            '--table2'), ('stats_robust_hdp.py --table2',)),
        Command('stats_robust_hdp.py', (
            '--results_dirs=docs/runs/paper_scale_fmnist/sweep_robust_hdp',),
                ('stats_robust_hdp.py',)),
        Command('sweep_robust_hdp.py', (
            '--dataset=fashion_mnist', '--figures=2', '--distributions=dist1',
            '--seeds=0', '--results_dir=docs/runs/paper_scale_fmnist',
            '--plot_only'),
                ('sweep_robust_hdp.py --figures=2',),
                copy='docs/runs/paper_scale_fmnist', ignore='wrote '),
    ),
}

# Pages whose generated blocks a page quotes (it links to them): their
# numbers count as printed for it too.
QUOTES = {'paper001_rows.md': ('paper001.md',),
          'paper003_fmnist.md': ('paper003_full_scale.md',)}

# Blocks of a page that another test regenerates and compares, with that
# test.
CHECKED_ELSEWHERE = {
    'paper001_rows.md': {
        'cell_commands.py': 'tests/test_kept_runs.py (tools/cell_commands.py '
                            'prints it from the Makefile)',
    },
}

# Numbers a page may state that no command prints from the kept runs.
EXCEPTIONS = {
    'paper001.md': {
        '202.4': 'the machine\'s matmul peak (benchmarks/timing.py), a '
                 'property of the machine, not of a run',
    },
    'paper003_full_scale.md': {
        '215.1': 'the matmul peak of performance_robust_hdp.md\'s first '
                 'benchmark run (a property of the machine, not of a run), '
                 'which the page quotes beside its projection',
        '215.3': 'the same page\'s second run\'s peak',
        '53.7': 'WeiAvg at 250 images a client, 3 seeds, 40 rounds: '
                'paper003.md\'s table, from runs not kept (the text says so)',
        '43.1': 'DPFedAvg, the same table of paper003.md',
        '13.2': 'the clip-only cost at 250 images a client after 20 rounds: '
                'paper003.md, from runs not kept (the text says so)',
        '6.8': 'the same after 40 rounds',
    },
    'paper003_fmnist.md': {
        '0.0': 'the version of Debian\'s dataset-fashion-mnist package',
        '0.1': 'η_l, a setting of the authors\' code '
               '(tff_hdp/robust_hdp/presets.py)',
        '5.3': 'paper003.md\'s analytic cells calibrated the classic way '
               '(table2_robust_hdp.py --conversion=classic: no run)',
    },
}

_MARKER = re.compile(r'^<!-- (.+?): (begin|end) -->$')
# A decimal number (thousands may be grouped with commas), not part of a
# word or of a longer dotted token such as a version.
_NUMBER = re.compile(r'(?<![\w.])\d{1,3}(?:,\d{3})*\.\d+|(?<![\w.,])\d+\.\d+')
_SOURCE_NUMBER = re.compile(r'\d+(?:,\d{3})*\.\d+')


def _read(page: str) -> str:
  with open(os.path.join(RESULTS, page), encoding='utf-8') as f:
    return f.read()


def blocks(text: str) -> dict[str, str]:
  """The page's generated blocks by name, each without a code fence that
  wraps it whole."""
  found, name, lines = {}, None, []
  for line in text.splitlines():
    marker = _MARKER.match(line.strip())
    if marker and marker.group(2) == 'begin':
      assert name is None, f'{marker.group(1)} begins inside {name}'
      name, lines = marker.group(1), []
    elif marker:
      assert marker.group(1) == name, f'{marker.group(1)} ends, not {name}'
      assert name not in found, f'two blocks named {name}'
      body = '\n'.join(lines)
      fenced = re.fullmatch(r'```\w*\n(.*)\n```', body, re.S)
      found[name] = fenced.group(1) if fenced else body
      name = None
    elif name is not None:
      lines.append(line)
  assert name is None, f'{name} never ends'
  return found


def _value(number: str) -> decimal.Decimal:
  return decimal.Decimal(number.replace(',', ''))


def written_numbers(text: str) -> list[tuple[int, str]]:
  """(line, number) of every decimal number outside generated blocks and
  code blocks, inline code, link targets and HTML comments: the numbers a
  person wrote."""
  out, fence, generated = [], False, False
  for number, line in enumerate(text.splitlines(), start=1):
    marker = _MARKER.match(line.strip())
    if marker:
      generated = marker.group(2) == 'begin'
      continue
    if generated:
      continue
    if line.strip().startswith('```'):
      fence = not fence
      continue
    if fence:
      continue
    line = re.sub(r'`[^`]*`|\]\([^)]*\)|<!--.*?-->', ' ', line)
    out += [(number, m.group(0)) for m in _NUMBER.finditer(line)]
  return out


def unsourced(text: str, exceptions, quoted: tuple[str, ...] = ()
              ) -> list[str]:
  """'line: number' of each written number that no generated block of
  `text` or of the `quoted` pages' texts prints and that is not an
  exception."""
  printed = {_value(n) for page in (text, *quoted)
             for body in blocks(page).values()
             for n in _SOURCE_NUMBER.findall(body)}
  allowed = {_value(n) for n in exceptions}
  return [f'{line}: {n}' for line, n in written_numbers(text)
          if _value(n) not in printed | allowed]


def _commands():
  for page, commands in GENERATED.items():
    for command in commands:
      yield pytest.param(page, command, id=f'{page}-{" ".join(command.blocks)}')


@pytest.mark.parametrize('page,command', _commands())
def test_each_generated_block_is_its_commands_output(page, command,
                                                     tmp_path):
  found = blocks(_read(page))
  args = list(command.args)
  if command.copy:
    copy = str(tmp_path / 'copy')
    shutil.copytree(os.path.join(REPO, command.copy), copy)
    args = [a.replace(command.copy, copy) for a in args]
  if command.writes:
    args.append(f'--output_dir={tmp_path}')
  result = binaries.run(command.script, args, timeout=120)
  assert result.returncode == 0, result.stderr
  if command.writes:
    with open(tmp_path / command.writes, encoding='utf-8') as f:
      printed = f.read()
  else:
    printed = result.stdout
  if command.ignore:
    printed = '\n'.join(line for line in printed.splitlines()
                         if not line.startswith(command.ignore))
  assert command.joiner.join(found[b] for b in command.blocks) == (
      printed.strip('\n'))


@pytest.mark.parametrize('page', sorted(GENERATED))
def test_every_block_has_its_command(page):
  # A block no command regenerates would vouch for hand-written numbers.
  assert sorted(blocks(_read(page))) == sorted(
      [b for command in GENERATED[page] for b in command.blocks] +
      list(CHECKED_ELSEWHERE.get(page, {})))


@pytest.mark.parametrize('page', sorted(GENERATED))
def test_every_written_number_is_printed_by_a_command(page):
  missing = unsourced(_read(page), EXCEPTIONS.get(page, {}),
                      tuple(_read(other) for other in QUOTES.get(page, ())))
  assert not missing, (
      f'{page}: numbers in no generated block (print them with a command '
      f'from the kept runs, or give the source in EXCEPTIONS): {missing}')


@pytest.mark.parametrize('page', sorted(EXCEPTIONS))
def test_every_exception_is_on_its_page(page):
  written = {_value(n) for _, n in written_numbers(_read(page))}
  assert [n for n in EXCEPTIONS[page] if _value(n) not in written] == []


def test_a_hand_written_number_fails():
  page = '\n'.join([
      'Our row reaches 94.88, the paper 93.80.',
      '<!-- made: begin -->',
      '| row | 94.88 (0) | 0.50 |',
      '<!-- made: end -->',
      '| hand table | 12.34 |',
      'A rounded 94.9 is not 94.88; 0.5 is 0.50; `--flag=3.25` is code.',
      '```', 'output 7.77', '```',
      'Peak 202.4 GFLOP/s, version 0.0~git20200523.55506a9-1.'])
  assert unsourced(page, {'202.4': 'peak', '0.0': 'version'}) == [
      '1: 93.80', '5: 12.34', '6: 94.9']
  assert blocks(page) == {'made': '| row | 94.88 (0) | 0.50 |'}
  # A quoted page's blocks print numbers for the page; its prose does not.
  quoted = '12.34 in prose\n<!-- other: begin -->\n93.80\n<!-- other: end -->'
  assert unsourced(page, {'202.4': 'peak', '0.0': 'version'}, (quoted,)) == [
      '5: 12.34', '6: 94.9']
  with pytest.raises(AssertionError, match='never ends'):
    blocks('<!-- made: begin -->\n1.5')
