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
"""End-to-end tests of run_scripts/privacy_report.py, run in a subprocess.

Its commands run in one Python process (`binaries.run_before_tensorflow`:
each as the script's own `__main__`, with its own flags), one start-up for
all; the checks that it imports no TensorFlow and refuses bad input in one
line also run it in processes of their own.
"""

import os
import re
import subprocess
import sys

from absl.testing import absltest
from absl.testing import parameterized

from tests import binaries
from tff_hdp.privacy import accounting
from tff_hdp.fedhdp import presets

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_LINE = re.compile(r'^group=(\S+) epsilon=(\S+) noise_multiplier=(\S+)$')


def _run(*args):
  return binaries.run_before_tensorflow('privacy_report.py', args,
                                        timeout=300)


def _parse(stdout):
  rows = []
  for line in stdout.splitlines():
    match = _LINE.match(line)
    assert match, f'unexpected output line {line!r}'
    rows.append((match.group(1), float(match.group(2)), float(match.group(3))))
  return rows


class PrivacyReportTest(parameterized.TestCase):

  def assertReport(self, result):
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertNotIn('Traceback', result.stderr)
    return _parse(result.stdout)

  @parameterized.named_parameters(
      ('mnist', 'mnist', 3.6),
      ('fmnist', 'fmnist', 0.6),
      ('femnist', 'femnist', 4.1),
  )
  def test_paper_presets(self, name, paper_eps):
    rows = self.assertReport(_run(f'--preset={name}'))
    preset = presets.get_preset(name)
    self.assertLen(rows, 1)
    group, eps, z = rows[0]
    self.assertEqual(group, 'private')
    self.assertEqual(z, preset.noise_multiplier)
    self.assertEqual(round(eps, 1), paper_eps)
    self.assertAlmostEqual(
        eps,
        accounting.compute_epsilon(preset.sampling_rate, z, preset.rounds,
                                   preset.delta),
        places=4)

  def test_fixed_cohort_is_the_replace_one_bound(self):
    # Table 7's MNIST setting as paper 001 ran it: 100 of 2,000 without
    # replacement. The bound is far above the paper's Poisson 3.6.
    (group, eps, z), = self.assertReport(
        _run('--preset=mnist', '--fixed_cohort'))
    self.assertEqual((group, z), ('private', 1.5))
    self.assertAlmostEqual(eps, accounting.compute_epsilon(
        0.05, 1.5, 500, 1e-4, population=2000), places=4)
    self.assertGreater(eps, 20)
    result = _run('--preset=mnist', '--fixed_cohort', '--accountant=pld')
    self.assertEqual(result.returncode, 2)
    self.assertIn('--fixed_cohort is accounted by --accountant=rdp only',
                  result.stderr)

  def test_pld_accountant(self):
    rows = self.assertReport(_run('--preset=mnist', '--accountant=pld'))
    (group, eps, z), = rows
    self.assertEqual((group, z), ('private', 1.5))
    self.assertAlmostEqual(
        eps, accounting.compute_epsilon(0.05, 1.5, 500, 1e-4,
                                        accountant='pld'), places=4)
    self.assertLess(eps, 3.6)

  def test_explicit_flags_several_levels(self):
    rows = self.assertReport(
        _run('--sampling_rate=0.05', '--rounds=500', '--delta=1e-5',
             '--noise_multiplier=1.0,1.5,4.0'))
    self.assertEqual([r[0] for r in rows],
                     ['private_1', 'private_2', 'private_3'])
    self.assertEqual([r[2] for r in rows], [1.0, 1.5, 4.0])
    for _, eps, z in rows:
      self.assertAlmostEqual(
          eps, accounting.compute_epsilon(0.05, z, 500, 1e-5), places=4)
    # Stricter levels have more noise and smaller epsilon.
    self.assertGreater(rows[0][1], rows[1][1])
    self.assertGreater(rows[1][1], rows[2][1])

  def test_explicit_flags_override_preset(self):
    rows = self.assertReport(
        _run('--preset=mnist', '--rounds=100', '--noise_multiplier=2'))
    self.assertEqual(rows[0][2], 2.0)
    self.assertAlmostEqual(
        rows[0][1], accounting.compute_epsilon(0.05, 2.0, 100, 1e-4), places=4)

  def test_target_epsilon(self):
    rows = self.assertReport(
        _run('--preset=femnist', '--target_epsilon=4.122014,1'))
    self.assertEqual([r[0] for r in rows], ['private_1', 'private_2'])
    # Table 7's FEMNIST z_eff = 1.0 gives eps = 4.12201...; the solved z is
    # printed rounded up, so its achieved epsilon never exceeds the target.
    self.assertAlmostEqual(rows[0][2], 1.0, delta=2e-5)
    self.assertLessEqual(rows[0][1], 4.1221)
    self.assertGreater(rows[1][2], rows[0][2])
    self.assertLessEqual(
        accounting.compute_epsilon(0.03, rows[1][2], 500, 1e-4), 1.0)
    self.assertAlmostEqual(rows[1][1], 1.0, places=4)

  def test_single_target_epsilon_is_named_private(self):
    rows = self.assertReport(
        _run('--sampling_rate=0.2', '--rounds=40', '--target_epsilon=5'))
    self.assertEqual(rows[0][0], 'private')
    self.assertAlmostEqual(rows[0][1], 5.0, places=3)

  @parameterized.named_parameters(
      ('delta_high', ['--preset=mnist', '--delta=1'], '--delta'),
      ('delta_zero', ['--preset=mnist', '--delta=0'], '--delta'),
      ('eps_zero', ['--preset=mnist', '--target_epsilon=0'],
       '--target_epsilon'),
      ('eps_negative', ['--preset=mnist', '--target_epsilon=1,-2'],
       '--target_epsilon'),
      ('z_negative', ['--preset=mnist', '--noise_multiplier=-0.5'],
       '--noise_multiplier'),
      ('z_garbage', ['--preset=mnist', '--noise_multiplier=abc'],
       '--noise_multiplier'),
      ('q_zero', ['--preset=mnist', '--sampling_rate=0'], '--sampling_rate'),
      ('q_high', ['--preset=mnist', '--sampling_rate=1.5'], '--sampling_rate'),
      ('rounds_negative', ['--preset=mnist', '--rounds=-1'], '--rounds'),
      ('rounds_garbage', ['--preset=mnist', '--rounds=many'], '--rounds'),
      ('unknown_preset', ['--preset=cifar'], '--preset'),
      ('nothing', [], '--preset'),
      ('missing_rounds', ['--sampling_rate=0.1', '--noise_multiplier=1'],
       '--rounds'),
      ('both_z_and_eps',
       ['--preset=mnist', '--noise_multiplier=1', '--target_epsilon=1'],
       '--target_epsilon'),
  )
  def test_bad_input(self, args, flag):
    result = _run(*args)
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertNotIn('Traceback', result.stderr)
    self.assertEqual(result.stdout, '')
    lines = result.stderr.strip().splitlines()
    self.assertLen(lines, 1, result.stderr)
    self.assertIn(flag, lines[0])

  def test_a_fresh_process_refuses_in_one_line_too(self):
    # The session's later commands import nothing new: a warning printed
    # at import would only show in a process of its own.
    binaries.assert_usage_error(
        binaries.run('privacy_report.py', ['--preset=cifar']), '--preset')

  def test_does_not_import_tensorflow(self):
    code = (
        'import runpy, sys\n'
        'sys.argv = ["privacy_report.py", "--preset=mnist"]\n'
        'try:\n'
        '  runpy.run_path("run_scripts/privacy_report.py", '
        'run_name="__main__")\n'
        'except SystemExit as e:\n'
        '  assert not e.code, e.code\n'
        'bad = sorted(m for m in sys.modules if m.split(".")[0] in '
        '("tensorflow", "tensorflow_federated", "tensorflow_privacy", "jax"))\n'
        'assert not bad, bad\n')
    result = subprocess.run([sys.executable, '-c', code],
                            cwd=_REPO_ROOT,
                            capture_output=True,
                            text=True,
                            timeout=300,
                            check=False)
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertLen(_parse(result.stdout), 1)


if __name__ == '__main__':
  absltest.main()


_CLIENT_LINE = re.compile(r'^client=(\d+) epsilon=(\S+) noise_multiplier=(\S+)$')


def _dp_sgd_reference_epsilon(n, b, local_epochs, rounds, z, delta):
  """epsilon of DP-SGD by the independent quadrature of test_accounting.py,
  on the orders the report uses (integers by the binomial sum)."""
  from tests.privacy import test_accounting as ref  # pylint: disable=g-import-not-at-top
  from tff_hdp.robust_hdp import privacy_preferences  # pylint: disable=g-import-not-at-top
  q = b / n
  steps = rounds * local_epochs * -(-n // b)
  orders = privacy_preferences.ORDERS
  rdp = [steps * (ref._log_a_binomial(q, z, a) if float(a).is_integer() else  # pylint: disable=protected-access
                  ref._log_a_quad(q, z, a)) / (a - 1) for a in orders]  # pylint: disable=protected-access
  return ref._reference_epsilon(orders, rdp, delta)  # pylint: disable=protected-access


class DpSgdReportTest(parameterized.TestCase):

  def _clients(self, *args):
    result = _run('--mechanism=dp_sgd', *args)
    self.assertEqual(result.returncode, 0, result.stderr)
    rows = []
    for line in result.stdout.splitlines():
      match = _CLIENT_LINE.match(line)
      self.assertIsNotNone(match, f'unexpected output line {line!r}')
      rows.append((int(match.group(1)), float(match.group(2)),
                   float(match.group(3))))
    return rows

  def test_given_noise_matches_independent_quadrature(self):
    rows = self._clients('--dataset_size=2400', '--batch_size=32,128',
                         '--local_epochs=2', '--rounds=50',
                         '--noise_multiplier=1.5', '--delta=1e-5')
    self.assertEqual([r[0] for r in rows], [0, 1])
    for (_, eps, z), b in zip(rows, (32, 128)):
      self.assertEqual(z, 1.5)
      expected = _dp_sgd_reference_epsilon(2400, b, 2, 50, 1.5, 1e-5)
      self.assertAlmostEqual(eps / expected, 1.0, delta=1e-3)

  def test_target_epsilon_round_trip(self):
    rows = self._clients('--dataset_size=2400,600', '--batch_size=64',
                         '--rounds=100', '--target_epsilon=0.5,3')
    for (_, eps, z), n, target in zip(rows, (2400, 600), (0.5, 3.0)):
      self.assertAlmostEqual(eps, target, delta=1e-3 * target)
      # The printed z (rounded up) is private enough by the reference too.
      reference = _dp_sgd_reference_epsilon(n, 64, 1, 100, z, 1e-4)
      self.assertLessEqual(reference, target * (1 + 1e-4))

  def test_batch_size_is_capped_to_the_data(self):
    capped = self._clients('--dataset_size=50', '--batch_size=128',
                           '--rounds=10', '--noise_multiplier=2')
    full = self._clients('--dataset_size=50', '--batch_size=50',
                         '--rounds=10', '--noise_multiplier=2')
    self.assertEqual(capped, full)

  @parameterized.named_parameters(
      ('missing', ['--dataset_size=10', '--rounds=3',
                   '--noise_multiplier=1'], 'missing --batch_size'),
      ('lengths', ['--dataset_size=10,20,30', '--batch_size=1,2',
                   '--rounds=3', '--noise_multiplier=1'],
       '--batch_size needs one value or one per client (3)'),
      ('fraction', ['--dataset_size=10.5', '--batch_size=2', '--rounds=3',
                    '--noise_multiplier=1'], 'whole numbers'),
      ('preset', ['--preset=mnist'], 'not --preset'),
  )
  def test_bad_input(self, args, message):
    result = _run('--mechanism=dp_sgd', *args)
    self.assertEqual(result.returncode, 2)
    lines = result.stderr.strip().splitlines()
    self.assertLen(lines, 1)
    self.assertIn(message, lines[0])

  def test_dp_sgd_flags_refused_for_fedhdp(self):
    result = _run('--preset=mnist', '--batch_size=3')
    self.assertEqual(result.returncode, 2)
    self.assertIn('does not take --batch_size', result.stderr)
