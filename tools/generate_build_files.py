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
"""Writes every BUILD file from the imports of the Python files beside it.

    python tools/generate_build_files.py          # rewrite the BUILD files
    python tools/generate_build_files.py --check  # exit 1 if any is stale

As in TFF, each package directory has a BUILD file with one target per
source file (`__init__.py`: the package's own name); a target's deps are the
first-party modules its file imports (anywhere in the file, function-level
imports included), pip packages coming from the Python environment. A test
file (test_*.py) is a py_test, a file run as a script that no other file
imports is a py_binary, the rest py_library. What imports cannot say is
kept from the BUILD file as it was: its leading comment, a target's `size`
and `data`. No Bazel is needed (or run): tests/test_build_files.py checks
that the files are current.
"""

import argparse
import ast
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP_DIRS = {'.git', '.venv', '.ci', '__pycache__', 'build', 'dist', 'results',
             'figures', '.pytest_cache', 'docs'}
# Checkout folders installed under another import name (setup.py).
IMPORT_NAME = {'datasets': 'tff_hdp.datasets',
               'run_scripts': 'tff_hdp.run_scripts'}
KEPT = ('size', 'data')  # Attributes the imports cannot give.
DEFAULT_SIZE = '"small"'  # A new test's.

_RULE = re.compile(r'(py_library|py_binary|py_test)\(\s*(.*?)\n\)', re.S)
_NAME = re.compile(r'name\s*=\s*"([^"]+)"')


def _packages():
  """{package dir (relative): sorted .py files} of the checkout."""
  out = {}
  for root, dirs, files in os.walk(REPO):
    dirs[:] = sorted(d for d in dirs
                     if d not in SKIP_DIRS and not d.endswith('.egg-info'))
    rel = os.path.relpath(root, REPO)
    py = sorted(f for f in files if f.endswith('.py'))
    if py and rel != '.':
      out[rel] = py
  return out


def _module_name(package: str, filename: str) -> str:
  top, _, rest = package.partition('/')
  dotted = '.'.join([IMPORT_NAME.get(top, top)] +
                    (rest.split('/') if rest else []))
  stem = filename[:-3]
  return dotted if stem == '__init__' else f'{dotted}.{stem}'


def _label(package: str, filename: str, here: str) -> str:
  name = (os.path.basename(package) if filename == '__init__.py' else
          filename[:-3])
  if package == here:
    return f':{name}'
  if filename == '__init__.py':
    return f'//{package}'
  return f'//{package}:{name}'


def _imports(path: str, package: str, modules) -> set[str]:
  """The first-party modules `path` imports (resolved in `modules`)."""
  with open(path, encoding='utf-8') as f:
    tree = ast.parse(f.read(), path)
  found = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      names = [f'{node.module}.{a.name}' for a in node.names]
    else:
      continue
    for name in names:
      if package == 'benchmarks' and name in modules['#benchmarks']:
        name = modules['#benchmarks'][name]  # `import timing`, run beside it.
      while name and name not in modules:  # `from m import a_function`: m.
        name = name.rpartition('.')[0]
      if name:
        found.add(name)
  return found


def _is_script(path: str) -> bool:
  with open(path, encoding='utf-8') as f:
    return "if __name__ == '__main__':" in f.read()


def _kept(package: str) -> tuple[str, dict[str, dict[str, str]]]:
  """(leading comment, {target: {attribute: its text}}) of the BUILD now."""
  path = os.path.join(REPO, package, 'BUILD')
  if not os.path.isfile(path):
    return '', {}
  with open(path, encoding='utf-8') as f:
    text = f.read()
  comment = []
  for line in text.splitlines():
    if line.startswith(('py_', 'package(', 'licenses(')):
      break
    if line.startswith('#') or (comment and not line.strip()):
      comment.append(line)
  while comment and not comment[-1].strip():
    comment.pop()
  kept = {}
  for _, body in _RULE.findall(text):
    name = _NAME.search(body).group(1)
    attrs = {}
    for key in KEPT:
      match = re.search(rf'^    {key} = (\[[^\]]*\]|"[^"]*")', body, re.M)
      if match:
        attrs[key] = match.group(1)
    kept[name] = attrs
  return '\n'.join(comment), kept


def _list(key: str, items) -> list[str]:
  items = list(items)
  if not items:
    return []
  if len(items) == 1 and len(f'    {key} = ["{items[0]}"],') <= 80:
    return [f'    {key} = ["{items[0]}"],']
  return [f'    {key} = ['] + [f'        "{i}",' for i in items] + ['    ],']


def _sort_key(label: str):
  return (label.startswith(':'), label)


def generate() -> dict[str, str]:
  """{BUILD path (relative): its text}."""
  packages = _packages()
  modules = {_module_name(p, f): (p, f) for p, files in packages.items()
             for f in files}
  modules['#benchmarks'] = {f[:-3]: _module_name('benchmarks', f)
                            for f in packages.get('benchmarks', [])}
  imported = {}
  for package, files in packages.items():
    for f in files:
      for dep in _imports(os.path.join(REPO, package, f), package, modules):
        imported.setdefault(dep, set()).add(_module_name(package, f))
  out = {}
  for package, files in sorted(packages.items()):
    comment, kept = _kept(package)
    rules = set()
    lines = []
    for f in files:
      module = _module_name(package, f)
      name = os.path.basename(package) if f == '__init__.py' else f[:-3]
      if re.match(r'(test_.*|.*_test)\.py$', f):
        rule = 'py_test'
      elif _is_script(os.path.join(REPO, package, f)) and not (
          imported.get(module, set()) - {module}):
        rule = 'py_binary'
      else:
        rule = 'py_library'
      rules.add(rule)
      deps = sorted({_label(*modules[d], package) for d in _imports(
          os.path.join(REPO, package, f), package, modules)} -
                    {_label(package, f, package)}, key=_sort_key)
      attrs = kept.get(name, {})
      lines += ['', f'{rule}(', f'    name = "{name}",']
      if rule == 'py_test':
        lines.append(f'    size = {attrs.get("size", DEFAULT_SIZE)},')
      lines.append(f'    srcs = ["{f}"],')
      if 'data' in attrs:
        lines.append(f'    data = {attrs["data"]},')
      lines += _list('deps', deps) + [')']
    loaded = ', '.join(f'"{r}"' for r in sorted(rules))
    head = [f'load("@rules_python//python:defs.bzl", {loaded})', '']
    if comment:
      head += [comment, '']
    head += ['package(default_visibility = ["//visibility:public"])', '',
             'licenses(["notice"])']
    out[os.path.join(package, 'BUILD')] = '\n'.join(head + lines) + '\n'
  return out


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--check', action='store_true',
                      help='Exit 1, naming them, if BUILD files are stale.')
  args = parser.parse_args(argv)
  stale = []
  for path, text in generate().items():
    full = os.path.join(REPO, path)
    current = open(full, encoding='utf-8').read() if os.path.isfile(
        full) else None
    if current != text:
      stale.append(path)
      if not args.check:
        with open(full, 'w', encoding='utf-8') as f:
          f.write(text)
  if args.check and stale:
    print(f'stale BUILD files (run python tools/generate_build_files.py): '
          f'{", ".join(stale)}', file=sys.stderr)
    return 1
  if not args.check:
    print(f'wrote {len(stale)} BUILD file(s)')
  return 0


if __name__ == '__main__':
  sys.exit(main())
