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
"""Tests of the `tff_hdp.theory` package surface: names and no TensorFlow."""

import os
import subprocess
import sys

from absl.testing import absltest

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


class PackageTest(absltest.TestCase):

  def test_import_does_not_load_tensorflow(self):
    code = ('import sys, tff_hdp.theory; '
            'print(sorted(m for m in sys.modules '
            "if m.split('.')[0] in ('tensorflow', 'tensorflow_federated', "
            "'matplotlib')))")
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        [_REPO_ROOT] + [p for p in [env.get('PYTHONPATH')] if p])
    output = subprocess.run([sys.executable, '-c', code], check=True,
                            capture_output=True, text=True, env=env,
                            cwd=_REPO_ROOT).stdout
    self.assertEqual(output.strip(), '[]')

  def test_names_of_the_issue(self):
    from tff_hdp import theory  # pylint: disable=g-import-not-at-top
    self.assertAlmostEqual(theory.optimal_ratio(1.0, 0.1, 90), 0.1)
    self.assertAlmostEqual(theory.server_variance(1.0, 0.1, 100, 0.1, 1.0),
                           theory.hdp_fedavg_server_variance(1.0, 0.1, 100,
                                                             0.1))
    self.assertAlmostEqual(theory.dp_fedavg_server_variance(1.0, 0.1, 100, 0.1),
                           0.1)
    self.assertAlmostEqual(theory.optimal_lambda_np(0.5, 0.25), 2.0)
    self.assertGreater(theory.optimal_lambda_p(0.5, 0.25, 0.1, 100, 90), 0.0)
    for name in ('optimal_server_variance', 'gap_hdp_fedavg_optimal',
                 'gap_dp_fedavg_optimal', 'gap_dp_fedavg_hdp_fedavg',
                 'optimal_ratios', 'multi_level_optimal_lambda',
                 'simulate_linear_regression', 'simulate_point_estimation',
                 'optimal_lambda_no_privacy',
                 'optimal_lambda_homogeneous_privacy'):
      self.assertTrue(callable(getattr(theory, name)), name)


if __name__ == '__main__':
  absltest.main()
