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
"""No module of tff_hdp/ imports one that imports it back (issue 61).

The graph has an edge for every import of a module in tff_hdp/ (at the top
of a file or inside a function) and for every `importlib.import_module`
of a literal name: a circle closed through an import inside a function, or
through a registry that loads its readers, depends on import order even
when it runs today.
"""

import ast
import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(REPO, 'tff_hdp')


def _modules() -> dict[str, str]:
  """{dotted name: path} of every module under tff_hdp/."""
  out = {}
  for root, dirs, files in os.walk(PACKAGE):
    dirs[:] = [d for d in dirs if d != '__pycache__']
    for f in files:
      if f.endswith('.py'):
        rel = os.path.relpath(os.path.join(root, f), REPO)[:-3]
        name = rel.replace(os.sep, '.')
        out[name[:-len('.__init__')] if name.endswith('__init__') else
            name] = os.path.join(root, f)
  return out


def _resolve(name: str, modules) -> str:
  while name and name not in modules:
    name = name.rpartition('.')[0]
  return name


def _edges(path: str, modules) -> set[str]:
  with open(path, encoding='utf-8') as f:
    tree = ast.parse(f.read(), path)
  names = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names += [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      names += [f'{node.module}.{a.name}' for a in node.names]
    elif (isinstance(node, ast.Call) and
          isinstance(node.func, ast.Attribute) and
          node.func.attr == 'import_module' and node.args and
          isinstance(node.args[0], ast.Constant)):
      names.append(node.args[0].value)
  return {m for m in (_resolve(n, modules) for n in names) if m}


def import_graph() -> dict[str, set[str]]:
  modules = _modules()
  return {m: _edges(p, modules) - {m} for m, p in modules.items()}


def circles(graph) -> list[list[str]]:
  """The strongly connected components of more than one module (Tarjan)."""
  index, low, stack, on, found = {}, {}, [], set(), []

  def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in graph.get(v, ()):
      if w not in index:
        visit(w)
        low[v] = min(low[v], low[w])
      elif w in on:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      component = []
      while True:
        w = stack.pop()
        on.discard(w)
        component.append(w)
        if w == v:
          break
      if len(component) > 1:
        found.append(sorted(component))

  for v in sorted(graph):
    if v not in index:
      visit(v)
  return found


def test_the_graph_is_read():
  graph = import_graph()
  assert 'tff_hdp.robust_hdp.rules.weiavg' in graph['tff_hdp.robust_hdp.rules']
  assert 'tff_hdp.robust_hdp.rule_registry' in graph[
      'tff_hdp.robust_hdp.rules.weiavg']
  # A literal importlib.import_module counts.
  assert circles({'a': {'b'}, 'b': {'a'}, 'c': {'a'}}) == [['a', 'b']]


def test_no_module_of_tff_hdp_imports_one_that_imports_it_back():
  assert circles(import_graph()) == []
