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
"""The canary-user audit of UDP-Alg's phi: canary records, the planted
fault, the accountant left alone, empty rounds still noised, the binary."""

import dataclasses
import json
import re

import numpy as np
import pytest
import tensorflow as tf

from tests import binaries
from tff_hdp import models
from tests.udp import conftest
from tff_hdp.udp import audit as audit_lib
from tff_hdp.udp import hypernetfl
from tff_hdp.udp import hypernetwork
from tff_hdp.udp import training


TINY = dataclasses.replace(conftest.TINY, eval_every=3)


def _net(data):
  return hypernetwork.HyperNetwork(
      models.fc_model(data.input_shape, data.num_classes),
      hypernetwork.default_embedding_dim(data.num_clients))


def test_canary_records_are_max_weight_times_clip_along_c(data):
  net = _net(data)
  audit = audit_lib.UdpAudit(net, canaries=40, sampling_rate=0.5, seed=0,
                             noise_multiplier=1.0)
  records, count = audit.round_records(2, clip=0.1, max_weight=0.8)
  taken = audit.canaries.sample(2, 0.5)
  assert count == len(taken) > 3
  flat = np.concatenate([r.ravel() for r in records])
  np.testing.assert_allclose(
      flat, 0.08 * audit.canaries.directions(taken).sum(0), rtol=1e-5,
      atol=1e-7)
  assert [r.shape for r in records] == [tuple(s) for s in net.shapes]


def test_audit_keeps_the_accountant_and_the_users(data):
  plain = training.train(TINY, data)
  idle = audit_lib.train_audited(TINY, data, audit_lib.UdpAudit(
      _net(data), canaries=4, sampling_rate=0.0, seed=1,
      noise_multiplier=TINY.noise_multiplier))
  assert idle['metrics'] == plain['metrics']
  assert [{k: v for k, v in h.items() if k != 'canaries_sampled'}
          for h in idle['history']] == plain['history']
  planted = audit_lib.train_audited(TINY, data, audit_lib.UdpAudit(
      _net(data), canaries=20, sampling_rate=0.3, seed=1,
      planted_noise_scale=0.25, noise_multiplier=TINY.noise_multiplier))
  assert planted['epsilon'] == plain['epsilon']  # The configured z.
  stddev = plain['setup']['noise_stddev']
  for t, h in enumerate(planted['history']):
    if len(conftest.sampled_users(TINY, data.num_clients, t)):
      assert h['noise_stddev'] == pytest.approx(0.25 * stddev, rel=1e-6)
  row, = planted['audit']
  assert row['group'] == 'phi' and row['planted_noise_scale'] == 0.25
  assert row['epsilon_accounted'] == plain['epsilon']
  assert row['observe'] == 'release' and row['statistic'] == 'lr'
  assert row['observations'] == TINY.rounds  # Empty rounds release too.
  assert 0 < row['epsilon_accounted_pld'] < row['epsilon_accounted']
  with pytest.raises(ValueError, match='direct backend'):
    audit_lib.train_audited(
        dataclasses.replace(TINY, algorithm='noiseless'), data,
        audit_lib.UdpAudit(_net(data), canaries=4, sampling_rate=0.3, seed=1,
                           observe='global'), 'max')


def _constants(noise_multiplier):
  return hypernetfl.RoundConstants(
      clip=0.1, noise_multiplier=noise_multiplier, max_weight=0.8,
      denominator=4.0, local_learning_rate=0.0, hyper_learning_rate=0.5,
      embedding_learning_rate=0.0)


def test_release_minus_known_records_is_canaries_plus_noise():
  # The audited step's release: the noised sum minus the users' own total.
  # Without noise it is exactly the canary records; with noise z, the rest
  # is N(0, (z max_w S)^2) per coordinate.
  rng = np.random.default_rng(0)
  shapes = [(30, 20), (20,)]
  total = [tf.constant(rng.normal(size=s), tf.float32) for s in shapes]
  extra = [tf.constant(rng.normal(size=s), tf.float32) for s in shapes]
  phi = [tf.zeros(s) for s in shapes]
  key = tf.constant([1, 2], tf.int64)
  release = audit_lib.known_residual(
      audit_lib.audited_phi_step(phi, total, extra, key, _constants(0.0)),
      total)
  for r, e in zip(release, extra):
    np.testing.assert_allclose(r.numpy(), e.numpy(), atol=1e-6)
  audited = audit_lib.audited_phi_step(phi, total, extra, key,
                                      _constants(2.0))
  release = audit_lib.known_residual(audited, total)
  new_phi = audited.phi
  # Its step is phi_step's on the users' sum with the records.
  plain = hypernetfl.phi_step(phi, [t + e for t, e in zip(total, extra)],
                              key, _constants(2.0))
  for a, b in zip(plain.phi, new_phi):
    np.testing.assert_array_equal(a.numpy(), b.numpy())
  rest = np.concatenate([(r - e).numpy().ravel()
                         for r, e in zip(release, extra)])
  # 620 draws: the sample std is within 10% of 0.16 (about 3.5 of its
  # standard errors).
  assert rest.std() == pytest.approx(2.0 * 0.8 * 0.1, rel=0.1)
  # And the step taken is the release (with the known total) over q W.
  step = np.concatenate([(p - n).numpy().ravel()
                         for p, n in zip(phi, new_phi)])
  want = np.concatenate([(r + t).numpy().ravel()
                         for r, t in zip(release, total)]) * 0.5 / 4.0
  np.testing.assert_allclose(step, want, rtol=1e-5, atol=1e-6)


def test_a_round_without_users_still_releases_noise(data):
  net = _net(data)
  phi = [tf.constant(p) for p in net.init(0)]
  new = hypernetfl.empty_round_step(
      phi, tf.constant([3, 4], tf.int64), hypernetfl.RoundConstants(
          clip=0.1, noise_multiplier=2.0, max_weight=1.0, denominator=4.0,
          local_learning_rate=0.0, hyper_learning_rate=0.5,
          embedding_learning_rate=0.0))
  step = np.concatenate([(p - n).numpy().ravel()
                         for p, n in zip(phi, new.phi)])
  # lambda * sigma with sigma = z max_w S / (q W) = 0.05, as published.
  assert float(new.noise_stddev) == pytest.approx(0.05, rel=1e-6)
  assert step.std() == pytest.approx(0.5 * 0.05, rel=0.01)
  run = dataclasses.replace(TINY, sampling_rate=0.01)
  rare = training.train(run, data)
  assert [len(conftest.sampled_users(run, data.num_clients, t))
          for t in range(3)] == [0, 0, 0]
  assert rare['epsilon'] > 0
  # Its empty rounds publish what every round does: nothing tells them apart.
  assert all('noise_stddev' in h for h in rare['history'])


@pytest.mark.parametrize('script,args,message', [
    ('run_udp.py', ['--planted_noise_scale=0.5'],
     'only run_scripts/audit_udp.py takes it'),
    ('audit_udp.py', ['--algorithm=noiseless'], '--algorithm must be udp'),
    ('audit_udp.py', ['--backend=tff'], '--backend must be direct'),
    ('audit_udp.py', ['--canaries=1'], '--canaries must be >= 2'),
    ('audit_udp.py', ['--observe=global'],
     'the lr statistic models the release observation'),
    ('audit_udp.py', ['--planted_noise_scale=-1'],
     '--planted_noise_scale must be > 0'),
])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, script, args,
                                                      message):
  binaries.assert_refused(script, args, message, tmp_path / 'out')


def test_audit_binary_prints_the_phi_line(tmp_path):
  out = tmp_path / 'audit'
  # On digits (the FC target: a smaller phi than LeNet's for the canaries'
  # directions; what the binary prints is the same).
  result = binaries.run('audit_udp.py', [
      '--dataset=digits', '--num_users=12', '--rounds=2', '--local_steps=2',
      '--canaries=10', '--noprogress', f'--output_dir={out}'])
  assert result.returncode == 0, result.stderr
  line, = [l for l in result.stdout.splitlines() if l.startswith('group=')]
  number = r'(none|inf|nan|\d+\.\d{3})'
  assert re.fullmatch(rf'group=phi epsilon_accounted=\d+\.\d{{3}} '
                      rf'epsilon_estimate={number} '
                      rf'epsilon_lower_bound={number}', line), line
  record = json.loads((out / 'results.json').read_text())
  assert record['audit'][0]['canaries'] == 10
