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
"""Tests for tff_hdp.fedhdp.clip_noise: FedHDP's split of z_eff into the
value noise z and the clip-count noise z_b, by hand and against TFF itself
(`DifferentiallyPrivateFactory.gaussian_adaptive`, whose DP event accounts
like one Gaussian with z_eff)."""


from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

from tff_hdp.fedhdp import clip_noise
from tff_hdp.privacy import accounting



class EffectiveNoiseTest(parameterized.TestCase):

  def test_hand_computed_split(self):
    # z_eff = 1.5, 100 clients: z_b = 5, z = (1/1.5^2 - 1/10^2)^(-1/2).
    z, zb = clip_noise.split_noise_multiplier(1.5, clients_per_round=100)
    self.assertEqual(zb, 5.0)
    self.assertAlmostEqual(z, (1 / 2.25 - 1 / 100)**-0.5, places=14)
    self.assertAlmostEqual(z, 1.5171652122725, places=12)

  def test_default_clipped_count_stddev(self):
    self.assertAlmostEqual(clip_noise.default_clipped_count_stddev(100), 5.0)
    self.assertAlmostEqual(clip_noise.default_clipped_count_stddev(102.0), 5.1)
    with self.assertRaisesRegex(ValueError, 'clients_per_round must be > 0'):
      clip_noise.default_clipped_count_stddev(0)

  @parameterized.parameters((0.3, 2.0), (1.0, 5.0), (4.0, 3.0), (1.5, 0.76))
  def test_round_trip(self, z_eff, zb):
    z, zb_out = clip_noise.split_noise_multiplier(z_eff, zb)
    self.assertEqual(zb_out, zb)
    self.assertGreater(z, z_eff)
    self.assertAlmostEqual(
        clip_noise.effective_noise_multiplier(z, zb), z_eff, places=12)

  def test_effective_matches_composed_gaussians(self):
    # The RDP of Gaussian(z) then Gaussian(2 z_b) at any order alpha is
    # alpha/(2 z^2) + alpha/(2 (2 z_b)^2) = alpha / (2 z_eff^2).
    z, zb = 1.7, 3.0
    z_eff = clip_noise.effective_noise_multiplier(z, zb)
    self.assertAlmostEqual(z_eff**-2, z**-2 + (2 * zb)**-2, places=14)

  def test_zero_noise(self):
    self.assertEqual(clip_noise.split_noise_multiplier(0.0), (0.0, 0.0))
    self.assertEqual(clip_noise.split_noise_multiplier(0.0, 2.0), (0.0, 2.0))
    self.assertEqual(clip_noise.effective_noise_multiplier(0.0, 5.0), 0.0)
    self.assertEqual(clip_noise.effective_noise_multiplier(1.0, 0.0), 0.0)

  def test_count_noise_too_small(self):
    # TFF: noise_multiplier >= 2 * clipped_count_stddev is an error.
    with self.assertRaisesRegex(ValueError,
                                r'must be < 2 \* clipped_count_stddev'):
      clip_noise.split_noise_multiplier(1.0, 0.5)
    with self.assertRaisesRegex(ValueError, 'clipped_count_stddev'):
      clip_noise.split_noise_multiplier(1.0, clients_per_round=10)

  def test_needs_cohort_size_or_stddev(self):
    with self.assertRaisesRegex(ValueError, 'clients_per_round is required'):
      clip_noise.split_noise_multiplier(1.0)

  def test_matches_tff_gaussian_adaptive(self):
    """z and z_b as TFF's gaussian_adaptive derives them, read from TFF."""
    tff = self._import_tff()
    import dp_accounting  # pylint: disable=g-import-not-at-top
    from dp_accounting import rdp  # pylint: disable=g-import-not-at-top

    for z_eff, clients in ((1.5, 100), (4.0, 101), (1.0, 102), (0.3, 7)):
      with self.subTest(z_eff=z_eff, clients=clients):
        z, zb = clip_noise.split_noise_multiplier(
            z_eff, clients_per_round=clients)
        dp_factory = tff.aggregators.DifferentiallyPrivateFactory
        factory = dp_factory.gaussian_adaptive(
            noise_multiplier=z_eff, clients_per_round=clients)
        process = factory.create(tff.TensorType(np.float32, [2]))
        state = process.initialize()
        # NormalizedQuery(QuantileAdaptiveClipSumQuery) state.
        adaptive = state.query_state.numerator_state
        self.assertAlmostEqual(
            float(adaptive.noise_multiplier) / z, 1.0, delta=1e-6)
        count_state = (
            adaptive.quantile_estimator_state.below_estimate_state
            .numerator_state)
        self.assertAlmostEqual(float(count_state.stddev) / zb, 1.0, delta=1e-6)

        # One round: the DP event TFF releases is Gaussian(z) + Gaussian(2 z_b)
        # and accounts exactly like one Gaussian with z_eff.
        output = process.next(state, [np.ones(2, np.float32)] * 3)
        event = dp_accounting.DpEvent.from_named_tuple(output.state.dp_event)
        self.assertIsInstance(event, dp_accounting.ComposedDpEvent)
        multipliers = sorted(e.noise_multiplier for e in event.events)
        np.testing.assert_allclose(multipliers, sorted([z, 2 * zb]), rtol=1e-6)
        # TFF's event holds np.float32 values, which dp_accounting 0.4.3's RDP
        # accountant silently mis-composes inside a ComposedDpEvent (it keeps
        # only the first Gaussian: `isinstance(sigma, float)` is False), so
        # rebuild the event with Python floats.
        event = dp_accounting.ComposedDpEvent([
            dp_accounting.GaussianDpEvent(float(e.noise_multiplier))
            for e in event.events
        ])
        accountant = rdp.RdpAccountant()
        accountant.compose(
            dp_accounting.SelfComposedDpEvent(
                dp_accounting.PoissonSampledDpEvent(0.03, event), 500))
        self.assertAlmostEqual(
            accountant.get_epsilon(1e-4) /
            accounting.compute_epsilon(0.03, z_eff, 500, 1e-4),
            1.0,
            delta=1e-5)

    # TFF refuses the same inputs we refuse.
    with self.assertRaises(ValueError):
      tff.aggregators.DifferentiallyPrivateFactory.gaussian_adaptive(
          noise_multiplier=1.0, clients_per_round=10)
    with self.assertRaises(ValueError):
      clip_noise.split_noise_multiplier(1.0, clients_per_round=10)

  def _import_tff(self):
    try:
      import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
    except ImportError as e:
      self.skipTest(f'tensorflow_federated not importable: {e}')
    # Run TFF on our own worker, which the test session ends (conftest.py),
    # not on TFF's default one, which can outlive the tests.
    from tff_hdp import runtime  # pylint: disable=g-import-not-at-top
    runtime.install_local_cpp_context()
    return tff


if __name__ == '__main__':
  absltest.main()
