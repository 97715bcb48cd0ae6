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
"""The FedHDP audit: canaries in the direct round, the planted fault,
the accountant left alone, real clients' metrics untouched, the binary."""

import collections
import dataclasses
import json
import math
import re

import numpy as np
import pytest

from tests import binaries
from tff_hdp import datasets
from tff_hdp import models
from tff_hdp import templates
from tff_hdp.fedhdp import algorithms
from tff_hdp.fedhdp import audit as audit_lib
from tff_hdp.fedhdp import config
from tff_hdp.fedhdp import direct_backend
from tff_hdp.fedhdp import executors
from tff_hdp.fedhdp import hdp_factory
from tff_hdp.fedhdp import privacy_groups as pg
from tff_hdp.fedhdp import tff_backend
from tff_hdp.fedhdp import training
from tff_hdp.privacy import mechanism_key



KEY = mechanism_key.new_key(5)  # The runs' mechanism key.


def _backend(noise=0.0, count_stddev=0.0):
  spec = models.fc_model((8, 8), num_classes=10, hidden=12)
  groups = pg.build_groups(algorithms.FedHdp(ratio=0.5),
                           noise_multipliers=[noise])
  factory = hdp_factory.HeterogeneousDPFactory(
      groups, initial_clip=0.3, clipped_count_stddev=count_stddev,
      mechanism_seed=5)
  settings = tff_backend.ClientSettings(
      ditto_lambdas=(0.1, 0.1), local_epochs=1, batch_size=4,
      learning_rate=0.2, personal_learning_rate=0.2, seed=3)
  return spec, direct_backend.DirectRound(spec, spec.init(1), factory,
                                          settings)


def _split(spec, flat):
  out, start = [], 0
  for shape in spec.shapes:
    size = int(np.prod(shape))
    out.append(flat[start:start + size].reshape(shape))
    start += size
  return out


def _cohort(rng, groups, personal):
  """Three clients of 5, 9 and 3 random 8x8 examples in `groups`, their
  Ditto models `personal`."""
  data = [(rng.normal(size=(n, 8, 8)).astype(np.float32),
           rng.integers(0, 10, n).astype(np.int32)) for n in (5, 9, 3)]
  info = [collections.OrderedDict(group=np.int32(g), client_id=np.int32(c))
          for c, g in enumerate(groups)]
  return executors.Cohort(data, info, [personal] * 3)


def test_a_canary_alone_is_clipped_to_the_clip_norm_and_counted():
  spec, backend = _backend()
  state = backend.initialize(KEY)
  direction = np.random.default_rng(0).normal(size=spec.num_parameters)
  direction /= np.linalg.norm(direction)
  update = [u[np.newaxis] for u in _split(spec, 10 * 0.3 * direction)]
  (new_state, measurements, personal), _ = audit_lib.round_with_canaries(
      backend, state, executors.Cohort([], [], []),
      (update, np.array([1], np.int32)))
  assert personal == []
  moved = np.concatenate([
      (n - o).ravel()
      for o, n in zip(state['global_weights'], new_state['global_weights'])
  ])
  # Alone in the (noise-free) non-private group: Delta = Clip(u, S) = S c.
  np.testing.assert_allclose(moved, 0.3 * direction, atol=1e-6)
  # Counted in its group (realised denominators): the private group, empty,
  # gets no weight.
  assert measurements['non_private/weight'] == 1.0
  assert measurements['private/weight'] == 0.0
  # Its clip-count record is b = 0: S^1 = S^0 exp(-eta_b (0 - kappa)).
  assert float(new_state['aggregator']['clip_norm']) == pytest.approx(
      0.3 * math.exp(0.2 * 0.5), rel=1e-6)


def test_canaries_join_the_clients_of_their_group():
  spec, backend = _backend(noise=1.0, count_stddev=0.5)
  rng = np.random.default_rng(1)
  theta = templates.global_weights(backend.initialize(KEY))
  cohort = _cohort(rng, (0, 1, 0), theta)
  extra = ([np.ones((3,) + s, np.float32) for s in spec.shapes],
           np.array([0, 0, 0], np.int32))
  (_, with_canaries, personal), _ = audit_lib.round_with_canaries(
      backend, backend.initialize(KEY), cohort, extra)
  _, alone, personal_alone = backend.next(backend.initialize(KEY), cohort)
  # Realised denominators: w_p = r N_p / (r N_p + N_np), r = 0.5; the
  # canaries count in the private group (5 clients, not 2).
  assert alone['private/weight'] == pytest.approx(1.0 / 2.0)
  assert with_canaries['private/weight'] == pytest.approx(2.5 / 3.5)
  # The clients' own work (their personal models) does not see the canaries.
  for a, b in zip(personal, personal_alone):
    for x, y in zip(a, b):
      np.testing.assert_array_equal(x, y)


def test_release_observation_is_the_canaries_plus_the_group_noise():
  # Three trained clients and two canaries in the private group (z = 1,
  # S = 0.3), one canary in the noiseless non-private group. What the
  # auditor reads of each group is its noised sum minus the trained
  # clients' clipped updates: S c_1 + S c_2 + N(0, (z S)^2) and S c_3.
  spec, backend = _backend(noise=1.0, count_stddev=0.5)
  rng = np.random.default_rng(2)
  theta = templates.global_weights(backend.initialize(KEY))
  cohort = _cohort(rng, (0, 0, 1), theta)
  directions = rng.normal(size=(3, spec.num_parameters))
  directions /= np.linalg.norm(directions, axis=1, keepdims=True)
  extra = ([np.stack(t) for t in zip(*[_split(spec, 10 * 0.3 * d)
                                       for d in directions])],
           np.array([0, 0, 1], np.int32))
  plain, _ = audit_lib.round_with_canaries(
      backend, backend.initialize(KEY), cohort, extra, observe_release=False)
  observed, releases = audit_lib.round_with_canaries(
      backend, backend.initialize(KEY), cohort, extra)
  # Observing changes nothing in the round.
  for a, b in zip(plain.state['global_weights'],
                  observed.state['global_weights']):
    np.testing.assert_array_equal(a, b)
  assert plain.measurements == observed.measurements
  private, non_private = [np.concatenate([r.ravel() for r in group])
                          for group in releases]
  np.testing.assert_allclose(non_private, 0.3 * directions[2], atol=1e-6)
  noise = private - 0.3 * (directions[0] + directions[1])
  # 910 draws of N(0, 0.3^2): the sample std is within 10% (4.3 of its
  # standard errors) and the mean within 4 standard errors of 0.
  assert noise.std() == pytest.approx(0.3, rel=0.1)
  assert abs(noise.mean()) < 4 * 0.3 / math.sqrt(noise.size)


def _groups():
  return pg.build_groups(algorithms.FedHdp(ratio=(0.1, 0.1)),
                         noise_multipliers=[2.0, 1.0])


def test_planted_noise_scales_the_named_groups_only():
  spec = models.fc_model((8, 8), num_classes=10, hidden=4)
  groups = _groups()
  audit = audit_lib.FedHdpAudit(groups, spec, canaries_per_group=4,
                                sampling_rate=0.5, seed=0,
                                planted_noise_scale=0.5,
                                planted_groups=['private_2'])
  z = [g.noise_multiplier for g in audit.mechanism_groups()]
  assert z == [2.0, 0.5, None]
  everyone = audit_lib.FedHdpAudit(groups, spec, canaries_per_group=4,
                                   sampling_rate=0.5, seed=0,
                                   planted_noise_scale=0.25)
  assert [g.noise_multiplier for g in everyone.mechanism_groups()] == [
      0.5, 0.25, None]
  with pytest.raises(ValueError, match="'non_private' is not a private"):
    audit_lib.FedHdpAudit(groups, spec, canaries_per_group=4,
                          sampling_rate=0.5, seed=0, planted_noise_scale=0.5,
                          planted_groups=['non_private'])
  with pytest.raises(ValueError, match='planted_noise_scale must be > 0'):
    audit_lib.FedHdpAudit(groups, spec, canaries_per_group=4,
                          sampling_rate=0.5, seed=0, planted_noise_scale=0.0)


def test_round_updates_are_sampled_canaries_beyond_the_clip_norm():
  spec = models.fc_model((8, 8), num_classes=10, hidden=4)
  audit = audit_lib.FedHdpAudit(_groups(), spec, canaries_per_group=50,
                                sampling_rate=0.5, seed=0)
  updates, groups = audit.round_updates(3, clip_norm=0.7)
  taken = audit.canaries.sample(3, 0.5)
  np.testing.assert_array_equal(groups, audit.canaries.groups[taken])
  assert len(taken) > 5
  assert [u.shape[1:] for u in updates] == [tuple(s) for s in spec.shapes]
  flat = np.concatenate([u.reshape(len(taken), -1) for u in updates], 1)
  np.testing.assert_allclose(np.linalg.norm(flat, axis=1),
                             audit_lib.CANARY_NORM_FACTOR * 0.7, rtol=1e-5)
  np.testing.assert_allclose(
      flat / np.linalg.norm(flat, axis=1, keepdims=True),
      audit.canaries.directions(taken), atol=1e-6)


TINY = config.FedHdpConfig(
    algorithm='fedhdp', ditto=True, ratio=0.5, model='fc', rounds=3,
    clients_per_round=8, sampling_rate=0.2, local_epochs=1, batch_size=5,
    learning_rate=0.1, personal_learning_rate=0.1, initial_clip=0.5,
    noise_multiplier=1.0, clipped_count_stddev=1.0, optout_fraction=0.25,
    eval_every=1, lambda_p=0.1, lambda_np=0.1, seed=1, mechanism_seed=1,
    backend='direct')


@pytest.fixture(scope='module')
def data():
  return datasets.load_fedhdp_data('digits', num_clients=40, seed=0)


def _audit(data, run, **kwargs):
  setup = config.resolve(run, data)
  spec = models.build_model(run.model, data.input_shape, data.num_classes)
  return audit_lib.FedHdpAudit(setup.groups, spec, seed=run.seed, **kwargs)


def test_audited_run_keeps_accountant_and_real_clients(data):
  plain = training.train(TINY, data)
  # Canaries never sampled: the audit machinery alone changes nothing.
  idle = audit_lib.train_audited(TINY, data, _audit(
      data, TINY, canaries_per_group=4, sampling_rate=0.0))
  assert idle['metrics'] == plain['metrics']
  assert idle['history'] == plain['history']
  audit = _audit(data, TINY, canaries_per_group=20, sampling_rate=0.3,
                 planted_noise_scale=0.25)
  audited = audit_lib.train_audited(TINY, data, audit)
  # The accountant still uses the configured noise.
  assert audited['epsilon'] == plain['epsilon']
  assert audited['metrics'].keys() == plain['metrics'].keys()
  assert audited['metrics'] != plain['metrics']  # The model saw canaries.
  for t, (mine, theirs) in enumerate(zip(audited['history'],
                                         plain['history'])):
    taken = audit.canaries.sample(t, 0.3)
    assert mine['num_canaries'] == len(taken)
    assert theirs.keys() <= mine.keys()  # The run publishes no count.
    assert not [k for k in mine if k.endswith('count') or
                k == 'num_clients']
  rows = {row['group']: row for row in audited['audit']}
  assert rows.keys() == {'private', 'non_private'}
  assert rows['private']['statistic'] == 'lr'
  assert rows['non_private']['statistic'] == 'sum'  # No noise, no LR.
  assert rows['private']['observations'] == TINY.rounds
  assert 0 < rows['private']['epsilon_accounted_pld'] < (
      rows['private']['epsilon_accounted'])
  assert rows['private']['estimate_over_accounted'] == pytest.approx(
      rows['private']['epsilon_estimate'] /
      rows['private']['epsilon_accounted'])
  assert rows['private']['epsilon_accounted'] == plain['epsilon']['private']
  assert rows['private']['planted_noise_scale'] == 0.25
  assert rows['non_private']['epsilon_accounted'] is None
  assert rows['private']['canaries'] == 20
  assert (rows['private']['canaries_inserted'] ==
          audit.canaries.included[audit.canaries.groups == 0].sum())


def test_audit_needs_the_direct_backend(data):
  audit = _audit(data, TINY, canaries_per_group=4, sampling_rate=0.2)
  with pytest.raises(ValueError, match='direct backend'):
    audit_lib.train_audited(dataclasses.replace(TINY, backend='tff'), data,
                            audit)


@pytest.mark.parametrize('script,args,message', [
    ('run_fedhdp.py', ['--planted_noise_scale=0.5'],
     'only run_scripts/audit_fedhdp.py takes it'),
    ('run_fedhdp.py', ['--planted_noise_group=private'],
     'only run_scripts/audit_fedhdp.py takes it'),
    ('audit_fedhdp.py', ['--backend=tff'], '--backend must be direct'),
    ('audit_fedhdp.py', ['--algorithm=all'], '--algorithm=all is not'),
    ('audit_fedhdp.py', ['--canaries_per_group=1'],
     '--canaries_per_group must be >= 2'),
    ('audit_fedhdp.py', ['--planted_noise_scale=0'],
     '--planted_noise_scale must be > 0'),
    ('audit_fedhdp.py', ['--planted_noise_group=non_private'],
     "--planted_noise_group 'non_private' is not a private group"),
    ('audit_fedhdp.py', ['--statistic=mean'], 'statistic'),
    ('audit_fedhdp.py', ['--observe=global'],
     'the lr statistic models the release observation'),
])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, script, args,
                                                      message):
  binaries.assert_refused(
      script, ['--quick' if script == 'audit_fedhdp.py' else '--preset=digits',
               *args], message, tmp_path / 'out')


def test_audit_binary_prints_one_line_per_group(tmp_path):
  out = tmp_path / 'audit'
  result = binaries.run('audit_fedhdp.py', [
      '--quick', '--num_clients=40', '--clients_per_round=20', '--rounds=2',
      '--noise_multiplier=1.0', '--canaries_per_group=10', '--noprogress',
      f'--output_dir={out}'])
  assert result.returncode == 0, result.stderr
  number = r'(none|inf|\d+\.\d{3})'
  lines = [l for l in result.stdout.splitlines() if l.startswith('group=')]
  assert [l.split()[0] for l in lines] == ['group=private',
                                           'group=non_private']
  for line in lines:
    assert re.fullmatch(
        rf'group=\w+ epsilon_accounted={number} epsilon_estimate={number} '
        rf'epsilon_lower_bound={number}', line), line
  assert 'epsilon_accounted=none' in lines[1]
  record = json.loads((out / 'results.json').read_text())
  assert [row['group'] for row in record['audit']] == ['private',
                                                       'non_private']
  assert record['config']['ditto'] is False  # --quick.
  assert (out / 'audit.txt').read_text().splitlines()[1:] == lines



def test_global_observer_reads_the_global_model_with_cosines(data):
  audit = _audit(data, TINY, canaries_per_group=8, sampling_rate=0.3,
                 observe='global')
  rows = audit_lib.train_audited(TINY, data, audit, 'max')['audit']
  assert [(r['observe'], r['statistic'], r['observations']) for r in rows
          ] == [('global', 'max', TINY.rounds)] * 2
  with pytest.raises(ValueError, match='lr statistic models the release'):
    audit_lib.train_audited(TINY, data, _audit(
        data, TINY, canaries_per_group=8, sampling_rate=0.3,
        observe='global'))
  with pytest.raises(ValueError, match='unknown observer'):
    _audit(data, TINY, canaries_per_group=8, sampling_rate=0.3,
           observe='server')


def test_audit_table_formats_each_row():
  from tff_hdp.run_scripts import audit_table  # pylint: disable=g-import-not-at-top
  row = {'group': 'private', 'observe': 'release', 'statistic': 'lr',
         'epsilon_accounted': 4.809, 'epsilon_accounted_pld': 4.32,
         'epsilon_estimate': 4.285, 'estimate_over_accounted': 4.285 / 4.809,
         'estimate_over_accounted_pld': 4.285 / 4.32,
         'epsilon_lower_bound': 1.187, 'planted_noise_scale': 1.0}
  client = dict(row, group='5', target_epsilon=0.85, batch_size=16,
                epsilon_estimate=math.inf, estimate_over_accounted=math.inf)
  text = audit_table.table([('FedHDP', {'audit': [row]}),
                            ('Robust-HDP Dist1', {'audit': [client]})])
  lines = text.splitlines()
  assert lines[2] == ('| FedHDP | release, lr | private | 4.81 | 4.32 | '
                      '4.29 | 0.89 | 0.99 | 1.19 | 1 |')
  assert '| client 5 (ε_i=0.85, b_i=16) |' in lines[3]
  assert '| ∞ | ∞ |' in lines[3]
