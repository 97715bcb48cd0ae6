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
"""Tests for tff_hdp.privacy.rdp_search: numpy's RDP of the Poisson-
subsampled Gaussian agrees with dp_accounting's, which it stands in for in
the calibration's search (the calibration itself: test_accounting.py)."""

import math

from absl.testing import absltest
import dp_accounting
from dp_accounting.rdp import rdp_privacy_accountant
import numpy as np

from tff_hdp.privacy import rdp_search

# Fractional orders (the slow series, 1.1 the longest) and integer ones (the
# binomial sum), up to dp_accounting's largest.
_ORDERS = (1.1, 1.5, 2.5, 3.7, 7.5, 10.9, 2, 11, 32, 256, 1024)


class RdpTest(absltest.TestCase):

  def test_agrees_with_dp_accounting_on_a_grid(self):
    for q in (0.5, 0.2, 0.05):
      for z in (0.5, 1.0, 3.0, 10.0, 50.0):
        theirs = rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(  # pylint: disable=protected-access
            q, z, _ORDERS)
        ours = rdp_search.rdp(q, z, _ORDERS)
        # The same terms, summed in another order: they differ by rounding,
        # ~1e-12 absolute where the RDP of a large z is itself tiny.
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-11,
                                   err_msg=f'q={q}, z={z}')

  def test_edge_rates_and_no_noise(self):
    np.testing.assert_array_equal(rdp_search.rdp(0.0, 1.0, (1.5, 2)), [0, 0])
    np.testing.assert_allclose(rdp_search.rdp(1.0, 2.0, (1.5, 4)),
                               [1.5 / 8, 4 / 8])
    self.assertEqual(list(rdp_search.rdp(0.3, 0.0, (1.5, 2))),
                     [math.inf, math.inf])


class EpsilonTest(absltest.TestCase):

  def test_matches_an_rdp_accountant_on_its_default_orders(self):
    for q, z, rounds, delta in ((0.5, 2.0, 20, 1e-5), (0.2, 0.8, 40, 1e-5),
                                (0.05, 1.0, 500, 1e-4)):
      accountant = dp_accounting.rdp.RdpAccountant()
      accountant.compose(dp_accounting.SelfComposedDpEvent(
          dp_accounting.PoissonSampledDpEvent(
              q, dp_accounting.GaussianDpEvent(z)), rounds))
      orders = rdp_privacy_accountant.DEFAULT_RDP_ORDERS
      self.assertAlmostEqual(
          rdp_search.epsilon(q, z, rounds, delta, orders) /
          accountant.get_epsilon(delta), 1.0, delta=1e-9)

  def test_conversion_is_dp_accountings(self):
    orders = (1.005, 1.5, 2.0, 8.0, 64.0)
    for rdp_values in ([0.3, 0.2, 0.5, 1.0, 9.0], [1e-12] * 5,
                       [math.inf, 4.0, 3.0, 2.0, 5.0], [0.0] * 5):
      theirs, _ = rdp_privacy_accountant.compute_epsilon(
          orders, rdp_values, 1e-5)
      self.assertEqual(
          rdp_search.epsilon_from_rdp(orders, np.array(rdp_values), 1e-5),
          theirs)


if __name__ == '__main__':
  absltest.main()
