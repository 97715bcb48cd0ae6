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
"""The canary-gradient audit of Robust-HDP's clients: a canary in a DP-SGD
step, its Poisson rate, the audit's accounting, the binary."""

import json
import math
import re

import numpy as np
import pytest
import tensorflow as tf

from tests import binaries
from tff_hdp import models
from tff_hdp.privacy import canary_audit
from tff_hdp.robust_hdp import audit as audit_lib
from tff_hdp.robust_hdp import dp_sgd
from tff_hdp.robust_hdp import privacy_preferences



def _spec():
  return models.fc_model((4, 4), num_classes=3, hidden=5)


def _batch(n, seed=0):
  rng = np.random.default_rng(seed)
  return (tf.constant(rng.normal(size=(n, 4, 4)), tf.float32),
          tf.constant(rng.integers(0, 3, n), tf.int32))


def _records(spec, flat):
  out, start = [], 0
  for shape in spec.shapes:
    size = int(np.prod(shape))
    out.append(tf.constant(flat[:, start:start + size].reshape(
        (flat.shape[0],) + tuple(shape)), tf.float32))
    start += size
  return out


def test_a_canary_is_clipped_like_an_example_and_counted_in_the_batch():
  spec = _spec()
  weights = [tf.constant(w) for w in spec.init(0)]
  xb, yb = _batch(6)
  c, b = 0.5, tf.constant(4.0)
  direction = np.random.default_rng(1).normal(size=(1, spec.num_parameters))
  direction /= np.linalg.norm(direction)
  canary = _records(spec, 10 * c * direction)
  query = dp_sgd.gaussian_query(c, 0.0)  # No noise: exact sums.
  state = query.initial_global_state()
  key = tf.constant([3, 4], tf.int64)
  gradient, release = audit_lib.audited_gradient(
      spec, weights, (xb, yb), query, state, b, key, canary)
  # What the auditor reads is the canary clipped to norm c, along c_k.
  flat = np.concatenate([r.numpy().ravel() for r in release])
  np.testing.assert_allclose(flat, c * direction[0], atol=1e-6)
  # And the step is (the batch's clipped sum + c c_k) / b: the canary is one
  # more record of the batch, divided by the same b.
  known = dp_sgd.clipped_sum(
      query, state, dp_sgd.per_example_gradients(spec, weights, xb, yb))
  want = np.concatenate([k.numpy().ravel() for k in known]) + c * direction[0]
  got = np.concatenate([g.numpy().ravel() for g in gradient])
  np.testing.assert_allclose(got, want / 4.0, rtol=1e-5, atol=1e-7)
  # With no canary the step is bit for bit the one client_update takes.
  none = [tf.zeros((0,) + tuple(s)) for s in spec.shapes]
  noisy = dp_sgd.gaussian_query(c, 1.3)
  with_empty, _ = audit_lib.audited_gradient(
      spec, weights, (xb, yb), noisy, noisy.initial_global_state(), b,
      key, none)
  plain = dp_sgd.private_gradient(spec, weights, xb, yb, noisy,
                                  noisy.initial_global_state(), b, key)
  for p, q in zip(plain, with_empty):
    np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_release_noise_has_stddev_c_z():
  spec = models.fc_model((8, 8), num_classes=10, hidden=40)  # 3,010 params.
  weights = [tf.constant(w) for w in spec.init(0)]
  xb, yb = _batch(3)
  xb = tf.image.resize(xb[..., None], (8, 8))[..., 0]
  query = dp_sgd.gaussian_query(0.5, 2.0)
  _, release = audit_lib.audited_gradient(
      spec, weights, (xb, yb), query, query.initial_global_state(),
      tf.constant(3.0), tf.constant([1, 2], tf.int64),
      [tf.zeros((0,) + tuple(s)) for s in spec.shapes])
  flat = np.concatenate([r.numpy().ravel() for r in release])
  # 3,010 draws of N(0, 1): the sample std is within 6% (4.6 of its
  # standard errors).
  assert flat.std() == pytest.approx(0.5 * 2.0, rel=0.06)


def test_each_client_samples_its_own_canaries_at_its_own_rate():
  audit = canary_audit.CanaryAudit(['a', 'b'], 200, 10, [0.1, 0.4], seed=3)
  counts = np.zeros(400)
  steps = 2000
  for t in range(steps):
    for group in (0, 1):
      taken = audit.sample(t, group)
      assert (audit.canaries.groups[taken] == group).all()
      assert audit.canaries.included[taken].all()
      counts[taken] += 1
  for group, q in ((0, 0.1), (1, 0.4)):
    mine = (audit.canaries.groups == group) & audit.canaries.included
    rate = counts[mine].sum() / (mine.sum() * steps)
    # About 100 x 2000 Bernoulli(q) draws: 5 standard errors.
    assert rate == pytest.approx(q, abs=5 * math.sqrt(
        q * (1 - q) / (mine.sum() * steps)))
  assert counts[~audit.canaries.included].sum() == 0
  with pytest.raises(ValueError, match='different rates'):
    audit.sample(0)


def _clients(n=40):
  rng = np.random.default_rng(0)
  privacy = privacy_preferences.calibrate(
      [2.0, 4.0], [8, 16], [n, n], rounds=2, local_epochs=1, delta=1e-4)
  return [
      audit_lib.AuditedClient(
          i, rng.normal(size=(n, 4, 4)).astype(np.float32),
          rng.integers(0, 3, n).astype(np.int32), p)
      for i, p in enumerate(privacy)]


def test_audit_reports_each_client_with_its_accounting():
  clients = _clients()
  audit = audit_lib.RobustHdpAudit(
      _spec(), clients, canaries=20, rounds=2,
      settings=dp_sgd.DpSgdSettings(clip=1.0), seed=0, mechanism_seed=0)
  audit.run()
  rows = audit.report(1e-4)
  assert [r['group'] for r in rows] == ['0', '1']
  for row, client in zip(rows, clients):
    p = client.privacy
    # One observation per DP-SGD step of the run.
    assert row['observations'] == p.steps == 2 * math.ceil(40 / p.batch_size)
    assert row['epsilon_accounted'] == privacy_preferences.achieved_epsilon(
        p, 1e-4)
    assert row['epsilon_accounted'] <= p.epsilon
    assert 0 < row['epsilon_accounted_pld'] < row['epsilon_accounted']
    assert row['statistic'] == 'lr' and row['canaries'] == 20
  assert audit.audit.sampling_rates == (8 / 40, 16 / 40)
  with pytest.raises(ValueError, match='not private'):
    audit_lib.RobustHdpAudit(
        _spec(), [audit_lib.AuditedClient(
            0, clients[0].x, clients[0].y, privacy_preferences.calibrate(
                [None], [8], [40], rounds=2, local_epochs=1,
                delta=1e-4)[0])],
        canaries=4, rounds=2, settings=dp_sgd.DpSgdSettings(), seed=0)


def test_default_clients_are_the_first_of_each_batch_size():
  privacy = privacy_preferences.calibrate(
      [1.0, 2.0, 3.0, None, 5.0], [8, 8, 16, 32, 32], [40] * 5, rounds=1,
      local_epochs=1, delta=1e-4)
  assert audit_lib.default_clients(privacy) == [0, 2, 4]


@pytest.mark.parametrize('script,args,message', [
    ('run_robust_hdp.py', ['--planted_noise_scale=0.5'],
     'only run_scripts/audit_robust_hdp.py takes it'),
    ('audit_robust_hdp.py', ['--canaries=1'], '--canaries must be >= 2'),
    ('audit_robust_hdp.py', ['--planted_noise_scale=0'],
     '--planted_noise_scale must be > 0'),
    ('audit_robust_hdp.py', ['--audit_clients=99'],
     '--audit_clients must be in 0..19'),
    ('audit_robust_hdp.py', ['--nopoisson_sampling'],
     '--nopoisson_sampling is not audited'),
    ('audit_robust_hdp.py', ['--algorithm=non_private'],
     'no private client'),
])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, script, args,
                                                      message):
  binaries.assert_refused(script, args, message, tmp_path / 'out')


def test_binary_prints_one_line_per_audited_client(tmp_path):
  out = tmp_path / 'audit'
  # Four clients of two privacy choices: two noise multipliers to
  # calibrate, not one per choice of Dist1's twenty clients.
  result = binaries.run('audit_robust_hdp.py', [
      '--dataset=digits', '--model=fc', '--rounds=2', '--canaries=10',
      '--audit_clients=0,1', '--num_clients=4', '--epsilons=1.5,3,1.5,3',
      '--batch_sizes=16,32,16,32', '--noprogress', f'--output_dir={out}'])
  assert result.returncode == 0, result.stderr
  lines = [l for l in result.stdout.splitlines() if l.startswith('client=')]
  number = r'(inf|nan|\d+\.\d{3})'
  assert [l.split()[0] for l in lines] == ['client=0', 'client=1']
  for line in lines:
    assert re.fullmatch(rf'client=\d+ epsilon_accounted=\d+\.\d{{3}} '
                        rf'epsilon_estimate={number} '
                        rf'epsilon_lower_bound={number}', line), line
  record = json.loads((out / 'results.json').read_text())
  assert [r['canaries'] for r in record['audit']] == [10, 10]
  assert (out / 'audit.txt').read_text().splitlines()[1:] == lines
