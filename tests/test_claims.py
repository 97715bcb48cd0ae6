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
"""The demo tables' claim lines, computed from fixed tables."""

from tff_hdp import claims
from tff_hdp.robust_hdp import table_rows

# FedHDP's table (README's demo on the digits): global accuracies, epsilon.
_FEDHDP = {'Non-Private+Ditto': (90.37, None),
           'DP-FedAvg+Ditto': (68.15, 4.81),
           'HDP-FedAvg+Ditto': (69.63, 4.81),
           'FedHDP+Ditto': (83.33, 4.81)}


def _fedhdp(table):
  return claims.fedhdp({n: a for n, (a, _) in table.items()},
                       {n: e for n, (_, e) in table.items()})


def test_fedhdp_holds():
  assert _fedhdp(_FEDHDP) == (
      'FedHDP above DP-FedAvg and HDP-FedAvg at the same epsilon: yes '
      '(83.33 vs 69.63, HDP-FedAvg+Ditto) at epsilon 4.81')


def test_fedhdp_fails_when_a_baseline_is_ahead_or_epsilons_differ():
  behind = dict(_FEDHDP, **{'FedHDP+Ditto': (65.00, 4.81)})
  assert _fedhdp(behind).startswith(
      'FedHDP above DP-FedAvg and HDP-FedAvg at the same epsilon: no '
      '(65.00 vs 69.63')
  other_eps = dict(_FEDHDP, **{'DP-FedAvg+Ditto': (68.15, 2.0)})
  assert ': no (83.33 vs 69.63' in _fedhdp(other_eps)
  assert _fedhdp(other_eps).endswith('(epsilons differ)')
  assert 'not checked' in _fedhdp({'Non-Private+Ditto': (90.0, None)})


# Robust-HDP's comparison on the offline MNIST images (seed 0, Dist1).
_ROBUST = {'Robust-HDP': 58.70, 'WeiAvg': 52.10, 'PFA': 28.50,
           'DPFedAvg': 37.60, 'minimum eps': 7.70, 'Oracle': 58.80,
           'Non-private': 95.80}
# The registry's roles, by label.
_ROLES = table_rows.roles()


def test_roles_come_from_the_registry():
  assert _ROLES == {'Robust-HDP': 'proposed', 'WeiAvg': 'baseline',
                    'PFA': 'baseline', 'DPFedAvg': 'baseline',
                    'minimum eps': 'baseline', 'Oracle': 'oracle',
                    'Step-aware': 'ours', 'Non-private': 'reference'}


def test_robust_hdp_holds():
  assert claims.robust_hdp(_ROBUST, _ROLES) == (
      'Robust-HDP >= every private baseline run (WeiAvg, PFA, DPFedAvg, '
      'minimum eps): yes (58.70 vs 52.10, WeiAvg); within 2 points of the '
      'Oracle: yes (58.70 vs 58.80)')


def test_robust_hdp_fails_and_ignores_non_private():
  behind = dict(_ROBUST, **{'Robust-HDP': 50.0})
  line = claims.robust_hdp(behind, _ROLES)
  assert 'minimum eps): no (50.00 vs 52.10, WeiAvg)' in line
  assert 'Oracle: no (50.00 vs 58.80)' in line
  # Non-private is not a private baseline; a subset names what was run.
  subset = {'Robust-HDP': 60.0, 'DPFedAvg': 40.0, 'Non-private': 95.0}
  assert claims.robust_hdp(subset, _ROLES) == (
      'Robust-HDP >= every private baseline run (DPFedAvg): yes (60.00 vs '
      '40.00, DPFedAvg)')
  assert 'not checked' in claims.robust_hdp({'WeiAvg': 50.0}, _ROLES)


def _variants():
  import tff_hdp.udp.algorithms  # pylint: disable=g-import-not-at-top,unused-import
  from tff_hdp.udp import algorithm_registry  # pylint: disable=g-import-not-at-top
  return {n: algorithm_registry.get(n) for n in algorithm_registry.names()}


def test_udp_holds_and_splits_the_cost():
  runs = {'udp': (72.27, 7.89), 'clip_only': (80.47, None),
          'noiseless': (91.33, None), 'pfedhn': (95.0, None)}
  assert claims.udp(runs, _variants()) == (
      'UDP-Alg at epsilon <= 8 with accuracy >= 60%: yes (epsilon 7.89, '
      "72.27%, 79% of Noiseless's 91.33); clipping costs 10.86 points (clip "
      'only 80.47), the noise 8.20 more')


def test_udp_fails_on_either_bound():
  variants = _variants()
  assert claims.udp({'udp': (72.0, 8.5)}, variants).startswith(
      'UDP-Alg at epsilon <= 8 with accuracy >= 60%: no (epsilon 8.50')
  assert ': no (epsilon 7.00, 10.02%' in claims.udp({'udp': (10.02, 7.0)},
                                                     variants)
  assert 'not checked' in claims.udp({'noiseless': (90.0, None)}, variants)


def test_udp_reads_a_variant_by_what_it_does_not_its_name():
  # A registered variant that clips without noise, under another name, is
  # the clip-only ablation; an unregistered name is left out.
  runs = {'udp': (72.27, 7.89), 'mine': (80.47, None),
          'noiseless': (91.33, None), 'unknown': (99.0, None)}
  variants = dict(_variants(), mine=_variants()['clip_only'])
  assert 'clipping costs 10.86 points (clip only 80.47)' in claims.udp(
      runs, variants)


def test_fedhdp_reads_roles_a_registered_baseline_joins():
  table = dict(_FEDHDP, **{'Mine+Ditto': (85.0, 4.81)})
  roles = {'Non-Private+Ditto': 'reference', 'DP-FedAvg+Ditto': 'baseline',
           'HDP-FedAvg+Ditto': 'baseline', 'FedHDP+Ditto': 'proposed',
           'Mine+Ditto': 'baseline'}
  line = claims.fedhdp({n: a for n, (a, _) in table.items()},
                       {n: e for n, (_, e) in table.items()}, roles=roles)
  assert line == ('FedHDP above every private baseline at the same '
                  'epsilon: no (83.33 vs 85.00, Mine+Ditto) at epsilon 4.81')
