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
"""The canary-gradient audit of Robust-HDP's clients (paper 003, Theorem 1).

What is audited: client i's sample-level guarantee, (epsilon_i, delta)-DP of
everything it sends with respect to adding or removing one of its examples,
whatever models the untrusted server sends. It is DP-SGD's: every step's
noised gradient sum is released (the updates are post-processing of them),
E x E_i Poisson-subsampled Gaussian steps at q_i = b_i / N_i, noise c z_i.

How (white-box gradient canaries, Nasr et al. 2023): client i gets m canary
*gradients*, each a fixed random unit direction c_k of the model's space at
`CANARY_NORM_FACTOR` x c (so the query clips it to exactly c c_k), each
inserted with probability 1/2 and, once inserted, Poisson-sampled at q_i at
every step like an example. A sampled canary joins the batch's per-example
gradients before the clip (`audited_gradient`: the mechanism's own parts,
`dp_sgd.batch_clipped_sum` and `noised_sum`), so it is clipped, summed and
noised with them, and the step divides by b_i as always. The observer sees
every step's noised sum and knows the batch's own examples (the
neighbouring-dataset adversary), so it reads the release minus their
clipped gradients, in units of c: the sampled canaries plus N(0, z_i^2 I).
The report (`tff_hdp.privacy.canary_audit`, docs/audit.md) has one row per
audited client: its RDP and PLD epsilons, the LR statistic's estimate and
Steinke et al.'s lower bound.

Because the server is the adversary, the audit runs each audited client
alone, every round from the client's own last model: one model sequence the
server could have sent (the guarantee covers all). The batches and the noise
keys are the run's (`process.client_step`'s). `planted_noise_scale`
multiplies z_i in the mechanism only (the accountant and the statistic keep
the calibrated z_i): the audit's positive control, refused by every binary
but `run_scripts/audit_robust_hdp.py`.
"""

import dataclasses
from typing import Any, Optional, Sequence

import numpy as np
import tensorflow as tf

from tff_hdp import models
from tff_hdp.privacy import accounting
from tff_hdp.privacy import canary_audit
from tff_hdp.privacy import mechanism_key
from tff_hdp.robust_hdp import dp_sgd
from tff_hdp.robust_hdp import privacy_preferences
from tff_hdp.robust_hdp import process

# A canary gradient's norm in units of the clip norm c (> 1: always clipped,
# to exactly c).
CANARY_NORM_FACTOR = 10.0


def audited_gradient(spec: models.ModelSpec, weights: Sequence[tf.Tensor],
                     batch: tuple[tf.Tensor, tf.Tensor], query, global_state,
                     denominator: tf.Tensor, key: tf.Tensor,
                     canary_records: Sequence[tf.Tensor]):
  """`dp_sgd.private_gradient` with canary records in the batch, observed.

  The same parts as the mechanism: the batch's clipped sum, the canaries'
  records ([K, ...] per weight tensor) clipped by the same query and added
  to it, the same noise draw and division by b_i. Arguments as
  `dp_sgd.private_gradient`'s, with the batch as one pair (xb, yb).

  Returns:
    (g~ per weight tensor, the noised sum minus the batch's own clipped
    gradients): the step, and what an auditor who knows the batch learns
    from it.
  """
  xb, yb = batch
  known = dp_sgd.batch_clipped_sum(spec, weights, xb, yb, query, global_state)
  canaries = dp_sgd.clipped_sum(query, global_state, canary_records)
  stddev = tf.cast(global_state.stddev, tf.float32)
  sums = dp_sgd.noised_sum([k + c for k, c in zip(known, canaries)], stddev,
                           key)
  return ([s / denominator for s in sums],
          [s - k for s, k in zip(sums, known)])


@dataclasses.dataclass(frozen=True)
class AuditedClient:
  """One audited client: its index, data and calibrated privacy."""
  index: int
  x: np.ndarray
  y: np.ndarray
  privacy: privacy_preferences.ClientPrivacy


def default_clients(clients: Sequence[privacy_preferences.ClientPrivacy]
                    ) -> list[int]:
  """The first private client of each distinct batch size b_i (so that the
  audited clients differ in b_i and, as it happens, in epsilon_i)."""
  seen, out = set(), []
  for i, c in enumerate(clients):
    if c.noise_multiplier is not None and c.batch_size not in seen:
      seen.add(c.batch_size)
      out.append(i)
  return out


class RobustHdpAudit:
  """Canary gradients in the audited clients' DP-SGD, and the report."""

  def __init__(self, spec: models.ModelSpec,
               clients: Sequence[AuditedClient], *, canaries: int,
               rounds: int, settings: dp_sgd.DpSgdSettings, seed: int,
               planted_noise_scale: float = 1.0,
               mechanism_seed: Optional[int] = None):
    """Initializes the audit.

    Args:
      spec: The model.
      clients: The audited clients (private ones).
      canaries: m canary gradients per client.
      rounds: E, the run's rounds.
      settings: The run's DP-SGD settings (c, eta_l, K, Poisson batches).
      seed: The run's public seed (initial model) and the canaries'.
      planted_noise_scale: f > 0, the factor on the mechanism's z_i.
      mechanism_seed: The clients' batches and noise: from a secret key
        (None, the default) or reproducible from this integer, as in
        `training`.
    """
    if not planted_noise_scale > 0:
      raise ValueError(
          f'planted_noise_scale must be > 0, got {planted_noise_scale}')
    if not settings.poisson:
      raise ValueError('the audit needs Poisson batches (the accounting\'s '
                       'sampling); got poisson=False')
    for c in clients:
      if c.privacy.noise_multiplier is None:
        raise ValueError(f'client {c.index} is not private: nothing to audit')
    self.spec = spec
    self.clients = tuple(clients)
    self.rounds = rounds
    self.settings = settings
    self.seed = seed
    self._key = mechanism_key.new_key(mechanism_seed)
    self.planted_noise_scale = float(planted_noise_scale)
    self.audit = canary_audit.CanaryAudit(
        [str(c.index) for c in clients], canaries, spec.num_parameters,
        [c.privacy.batch_size / c.privacy.num_examples for c in clients],
        seed, noise_multipliers=[c.privacy.noise_multiplier for c in clients])
    self._step = self._step_fn()

  def _step_fn(self):
    spec, settings = self.spec, self.settings
    weight_specs = [tf.TensorSpec(s, tf.float32) for s in spec.shapes]

    @tf.function(input_signature=[
        weight_specs, tf.TensorSpec((None,) + spec.input_shape, tf.float32),
        tf.TensorSpec((None,), tf.int32),
        [tf.TensorSpec((None,) + tuple(s), tf.float32) for s in spec.shapes],
        tf.TensorSpec((), tf.float32), tf.TensorSpec((), tf.float32),
        tf.TensorSpec((2,), tf.int64)], autograph=False)  # No tensor branches.
    def step(weights, xb, yb, canary_records, noise_multiplier, batch_size,
             key):
      query = dp_sgd.gaussian_query(settings.clip, noise_multiplier)
      gradient, release = audited_gradient(
          spec, weights, (xb, yb), query, query.initial_global_state(),
          batch_size, key, canary_records)
      lr = tf.constant(settings.learning_rate, tf.float32)
      return [w - lr * g for w, g in zip(weights, gradient)], release

    return step

  def run(self, progress: bool = False) -> None:
    """Runs every audited client's DP-SGD over the run's rounds."""
    for group, client in enumerate(self.clients):
      self._run_client(group, client, progress)

  def _run_client(self, group: int, client: AuditedClient,
                  progress: bool) -> None:
    c = self.settings.clip
    b = client.privacy.batch_size
    n = client.privacy.num_examples
    z = client.privacy.noise_multiplier * self.planted_noise_scale
    steps_per_epoch = -(-n // b)
    steps = self.settings.local_epochs * steps_per_epoch
    if steps * self.rounds != client.privacy.steps:
      raise ValueError(f'client {client.index}: {self.rounds} rounds of '
                       f'{steps} steps, but its accounting has '
                       f'{client.privacy.steps}')
    mine = np.flatnonzero(self.audit.canaries.groups == group)
    directions = self.audit.canaries.directions(mine) * np.float32(
        CANARY_NORM_FACTOR * c)
    row_of = {k: r for r, k in enumerate(mine)}
    x = tf.constant(client.x, tf.float32)
    y = tf.constant(client.y, tf.int32)
    weights = [tf.constant(w) for w in self.spec.init(self.seed)]
    rounds = range(self.rounds)
    if progress:
      import tqdm  # pylint: disable=g-import-not-at-top
      rounds = tqdm.tqdm(rounds, desc=f'client {client.index}', unit='round')
    for round_num in rounds:
      # The run's keys, as process.client_step derives them.
      key = process.client_key(
          process.round_key(tf.constant(self._key), round_num), client.index)
      for step in range(steps):
        idx = dp_sgd.batch_indices(step, n, b, steps_per_epoch, key, True)
        taken = self.audit.sample(round_num * steps + step, group)
        flat = directions[[row_of[k] for k in taken]]
        records, start = [], 0
        for shape in self.spec.shapes:
          size = int(np.prod(shape))
          records.append(flat[:, start:start + size].reshape(
              (len(taken),) + tuple(shape)))
          start += size
        weights, release = self._step(
            weights, tf.gather(x, idx), tf.gather(y, idx), records,
            tf.constant(z, tf.float32), tf.constant(b, tf.float32),
            dp_sgd.noise_key(key, step))
        self.audit.observe_release(group, [r.numpy() for r in release], c)

  def report(self, delta: float, statistic: str = 'lr'
             ) -> list[dict[str, Any]]:
    """One row per audited client (`canary_audit.CanaryAudit.report`)."""
    rdp, pld = {}, {}
    for c in self.clients:
      p = c.privacy
      q = p.batch_size / p.num_examples
      rdp[str(c.index)] = privacy_preferences.achieved_epsilon(p, delta)
      pld[str(c.index)] = accounting.compute_epsilon(
          q, p.noise_multiplier, p.steps, delta, accountant='pld')
    rows = self.audit.report(
        rdp, delta, statistic,
        {str(c.index): self.planted_noise_scale for c in self.clients},
        accounted_pld=pld)
    for row, c in zip(rows, self.clients):
      row.update(target_epsilon=c.privacy.epsilon,
                 batch_size=c.privacy.batch_size,
                 num_examples=c.privacy.num_examples,
                 noise_multiplier=c.privacy.noise_multiplier,
                 steps=c.privacy.steps)
    return rows

