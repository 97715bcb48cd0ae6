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
"""Result tables as fixed-width text, Markdown or LaTeX.

Every system's binaries print and write their tables through these three
formatters; the columns are the caller's (FedHDP's layout of paper 001's Tables
2, 3 and 8-11 is `tff_hdp.fedhdp.table_rows`). TensorFlow-free.
"""

from typing import Optional, Sequence


def format_text(rows: Sequence[Sequence[str]],
                header: Sequence[str]) -> str:
  """A fixed-width text table."""
  table = [list(header)] + [list(r) for r in rows]
  widths = [max(len(r[i]) for r in table) for i in range(len(header))]
  lines = ['  '.join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
           for r in table]
  lines.insert(1, '  '.join('-' * w for w in widths))
  return '\n'.join(lines)


def format_markdown(rows: Sequence[Sequence[str]],
                    header: Sequence[str]) -> str:
  """A Markdown (GitHub) table."""
  lines = ['| ' + ' | '.join(header) + ' |',
           '|' + '---|' * len(header)]
  lines += ['| ' + ' | '.join(r) + ' |' for r in rows]
  return '\n'.join(lines)


_LATEX_SPECIAL = {
    '\\': r'\textbackslash{}', '&': r'\&', '%': r'\%', '$': r'\$', '#': r'\#',
    '_': r'\_', '{': r'\{', '}': r'\}', '~': r'\textasciitilde{}',
    '^': r'\textasciicircum{}',
}


def latex_escape(text: str) -> str:
  """`text` with LaTeX's special characters escaped."""
  return ''.join(_LATEX_SPECIAL.get(c, c) for c in text)


def format_latex(rows: Sequence[Sequence[str]],
                 header: Sequence[str],
                 caption: Optional[str] = None) -> str:
  """A LaTeX `table` with a `tabular` (no package needed); cells escaped."""
  lines = [r'\begin{table}[t]', r'\centering', r'\scriptsize']
  if caption:
    lines.append(r'\caption{' + latex_escape(caption) + '}')
  lines += [r'\begin{tabular}{' + 'l' * len(header) + '}', r'\hline',
            ' & '.join(latex_escape(h) for h in header) + r' \\', r'\hline']
  lines += [' & '.join(latex_escape(c) for c in r) + r' \\' for r in rows]
  lines += [r'\hline', r'\end{tabular}', r'\end{table}']
  return '\n'.join(lines)
