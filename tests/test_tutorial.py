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
"""The tutorial notebook runs, from a fresh kernel, as a reader would run it.

docs/tutorials/heterogeneous_dp_with_your_model.ipynb is executed with
nbclient in a new kernel of this interpreter (the project's .venv), with the
repository root as its working directory, with its training loops cut to
`ROUNDS` rounds (the reader's 20 and 30 rounds teach the same API; the
test's time goes to what fails: a cell's error, an epsilon, a worker left).
Any cell error fails the test; then the printed epsilons and accuracies are
checked, and the kernel must have no TFF `worker_binary` child left (the
notebook runs TFF in `tff_hdp.runtime.local_cpp_context`, which ends its
worker).

To refresh the outputs stored in the notebook (what GitHub shows):

    PYTHONPATH=. .venv/bin/python tests/test_tutorial.py
"""

import json
import math
import os
import re
import sys
import tempfile

import jupyter_client
from jupyter_client import kernelspec
import nbclient
import nbformat

from tests.conftest import worker_children

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(REPO, 'docs', 'tutorials',
                        'heterogeneous_dp_with_your_model.ipynb')
KERNEL = 'tff_hdp_tutorial'
# The test's rounds of each training loop (and of Robust-HDP's calibration):
# more than train_model's 2, whose epsilons must be the smaller.
ROUNDS = 3
# The notebook's round counts, and how many times each appears: FedHDP's and
# UDP's loops (30), Robust-HDP's config and loop (20).
_NOTEBOOK_ROUNDS = {'rounds=30': 2, 'rounds=20': 2}


def shortened(nb, rounds: int = ROUNDS):
  """`nb` with each of its training loops' round counts (`_NOTEBOOK_ROUNDS`)
  set to `rounds`; a notebook whose counts changed fails here, not
  silently at full length."""
  found = {}
  for cell in nb.cells:
    if cell.cell_type != 'code':
      continue
    for count in _NOTEBOOK_ROUNDS:
      pattern = r'\b' + count + r'\b'
      found[count] = found.get(count, 0) + len(re.findall(pattern, cell.source))
      cell.source = re.sub(pattern, f'rounds={rounds}', cell.source)
  assert found == _NOTEBOOK_ROUNDS, (
      f'the notebook\'s round counts changed: {found}; update '
      f'_NOTEBOOK_ROUNDS in {__file__}')
  return nb


def execute(path: str = NOTEBOOK, timeout: int = 600, rounds=None):
  """Runs the notebook at `path` in a fresh kernel of `sys.executable`, with
  its training loops cut to `rounds` rounds if given (`shortened`).

  Returns:
    (the executed notebook, the kernel's worker_binary children left after
    its last cell, and the children seen after each cell of a probe run in
    the same kernel afterwards: one while `tff_hdp.runtime` holds a worker,
    none after `runtime.shutdown()`, which shows that the check can see a
    worker at all).

  Raises:
    nbclient.exceptions.CellExecutionError: If a cell raises.
  """
  nb = nbformat.read(path, as_version=4)
  if rounds is not None:
    nb = shortened(nb, rounds)
  probe = nbformat.v4.new_notebook(cells=[
      nbformat.v4.new_code_cell('from tff_hdp import runtime\n'
                                'runtime.install_local_cpp_context()'),
      nbformat.v4.new_code_cell('runtime.shutdown()')])
  with tempfile.TemporaryDirectory() as spec_root:
    # The kernel is this interpreter, whatever kernels Jupyter knows.
    os.makedirs(os.path.join(spec_root, KERNEL))
    with open(os.path.join(spec_root, KERNEL, 'kernel.json'), 'w') as f:
      json.dump({'argv': [sys.executable, '-m', 'ipykernel_launcher', '-f',
                          '{connection_file}'],
                 'display_name': 'tff_hdp (.venv)', 'language': 'python'}, f)
    manager = jupyter_client.KernelManager(
        kernel_name=KERNEL,
        kernel_spec_manager=kernelspec.KernelSpecManager(
            kernel_dirs=[spec_root]))
    try:
      # With our own kernel manager, the kernel outlives `execute`.
      nbclient.NotebookClient(
          nb, km=manager, timeout=timeout, record_timing=False,
          resources={'metadata': {'path': REPO}}).execute()
      kernel_pid = manager.provisioner.pid
      left = worker_children(kernel_pid)
      seen = []
      nbclient.NotebookClient(
          probe, km=manager, timeout=120,
          on_cell_executed=lambda **_: seen.append(worker_children(
              kernel_pid))).execute()
    finally:
      if manager.has_kernel:
        manager.shutdown_kernel(now=True)
  nb.metadata['kernelspec'] = {'name': 'python3',
                               'display_name': 'Python 3 (ipykernel)',
                               'language': 'python'}
  return nb, left, seen


def printed(nb) -> str:
  """Everything the notebook's cells printed."""
  return ''.join(output.get('text', '') for cell in nb.cells
                 if cell.cell_type == 'code' for output in cell.outputs
                 if output.output_type == 'stream')


def epsilon_lines(text: str) -> dict[str, dict[str, float]]:
  """{name: {unit: epsilon}} of the lines `report` prints."""
  found = {}
  for line in text.splitlines():
    match = re.match(r'\s*(\w+)\s+accuracy ([\d.]+)\s+'
                     r'epsilon \(delta=([\de.+-]+)\): (.*)$', line)
    if match:
      name, acc, _, units = match.groups()
      assert 0.0 <= float(acc) <= 1.0, line
      found.setdefault(name, {}).update(
          (unit, float(value)) for unit, value in
          (item.rsplit(' ', 1) for item in units.split(', ')))
  return found


def test_tutorial_notebook_runs_and_reports_finite_epsilons():
  nb, left, seen = execute(rounds=ROUNDS)
  assert not left, f'the notebook left worker_binary processes: {left}'
  assert len(seen) == 2 and len(seen[0]) == 1 and not seen[1], (
      f'the check did not see the probe\'s worker come and go: {seen}')
  text = printed(nb)
  epsilons = epsilon_lines(text)
  assert set(epsilons) == {'fedhdp', 'dp_fedavg', 'robust_hdp', 'dpfedavg',
                           'udp', 'noiseless', 'train_model'}, text
  # Every private run reports a finite epsilon; the noiseless one infinity.
  assert epsilons.pop('noiseless') == {'users': math.inf}
  for name, units in epsilons.items():
    assert units and all(math.isfinite(e) and e > 0 for e in units.values()), (
        name, units)
  # FedHDP: one epsilon per private level; DP-FedAvg spends the strict one's.
  assert set(epsilons['fedhdp']) == {'private_1', 'private_2'}
  assert epsilons['dp_fedavg']['private'] == epsilons['fedhdp']['private_1']
  assert epsilons['fedhdp']['private_1'] < epsilons['fedhdp']['private_2']
  # Robust-HDP: each client's epsilon, after the rounds its noise was
  # calibrated for, is its own target (1, 3 or 8).
  assert len(epsilons['robust_hdp']) == 12
  for e in epsilons['robust_hdp'].values():
    assert min(abs(e - t) for t in (1.0, 3.0, 8.0)) < 0.01, e
  assert set(epsilons['udp']) == {'users'}
  assert 'train_model ran 2 rounds' in text, text
  # train_model's 2 rounds of the same FedHDP process spend less than
  # ROUNDS.
  for group in ('private_1', 'private_2'):
    assert epsilons['train_model'][group] < epsilons['fedhdp'][group]


if __name__ == '__main__':
  executed, leftover, _ = execute()
  if leftover:
    sys.exit(f'worker_binary processes left: {leftover}')
  nbformat.write(executed, NOTEBOOK)
  print(printed(executed))
