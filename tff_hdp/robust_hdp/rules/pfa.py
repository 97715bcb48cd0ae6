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
"""PFA (Liu et al., VLDB 2021; paper 003, Table 1, with the authors' code).

The clients with the largest epsilon are public (the top 10%, at least one,
as the PFA code; the HDPFL code fits a two-component Gaussian mixture
instead). With x_pub, x_priv the epsilon-weighted means of the public and
private updates and V_k the top-k principal directions of the mean-centred
public updates,

  x^ = V_k V_k^T (x_priv - x_pub) + x_pub,
  aggregate = (sum_pub eps / sum eps) x_pub + (sum_priv eps / sum eps) x^.

Its server is told every epsilon_i. The aggregate is a projection, not a
weighting: the weights it reports are those of its epsilon-weighted mean,
and its noise power is undefined. Its public and private clients are fixed
for all n, so a round takes every client.
"""

import math
from typing import Sequence

import numpy as np

from tff_hdp.robust_hdp import rule
from tff_hdp.robust_hdp import rule_registry

PUBLIC_FRACTION = 0.1


class Pfa(rule.Rule):
  """WeiAvg after projecting the private clients' mean (module doc)."""

  name = 'pfa'
  label = 'PFA'
  server_knows = 'epsilon_i'
  needs_every_epsilon = True
  is_weighted_sum = False

  def __init__(self, rank: int = 1):
    """`rank`: k, the projection's rank (the authors' 1)."""
    self.rank = int(rank)

  def configured(self, config):
    return Pfa(config.pfa_rank)

  def min_cohort(self, num_clients):
    return num_clients

  def told(self, side):
    return {'epsilons': np.asarray(side.epsilons, np.float64),
            'public': public_mask(side.epsilons)}

  def weights(self, updates, told):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    epsilons = tf.cast(told['epsilons'], tf.float64)
    return epsilons / tf.reduce_sum(epsilons), tf.zeros_like(epsilons)

  def aggregate(self, updates, weights, told):
    del weights  # A projection, not a weighting.
    return projected_aggregate(updates, told['epsilons'], told['public'],
                               self.rank)


def public_mask(epsilons: Sequence[float],
                fraction: float = PUBLIC_FRACTION) -> np.ndarray:
  """The public clients: the ceil(fraction n) largest epsilons."""
  epsilons = np.asarray(epsilons, np.float64)
  count = max(1, math.ceil(fraction * len(epsilons)))
  if count >= len(epsilons):
    raise ValueError(f'PFA needs at least one private client; {count} of '
                     f'{len(epsilons)} would be public')
  public = np.zeros(len(epsilons), bool)
  public[np.argsort(-epsilons, kind='stable')[:count]] = True
  return public


def projected_aggregate(updates, epsilons: Sequence[float],
                        public: Sequence[bool], k: int = 1):
  """PFA's aggregate of the [n, p] updates (module doc), float32 [p]."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  public = np.asarray(public, bool)
  eps = np.asarray(epsilons, np.float64)
  if k < 1 or k > public.sum():
    raise ValueError(f'PFA projection rank k must be in [1, number of public '
                     f'clients = {public.sum()}], got {k}')
  m = tf.cast(updates, tf.float64)
  pub = tf.gather(m, np.flatnonzero(public))
  priv = tf.gather(m, np.flatnonzero(~public))
  w_pub = tf.constant(rule.normalized(eps[public]))
  w_priv = tf.constant(rule.normalized(eps[~public]))
  x_pub = tf.linalg.matvec(pub, w_pub, transpose_a=True)
  x_priv = tf.linalg.matvec(priv, w_priv, transpose_a=True)
  centred = pub - tf.reduce_mean(pub, axis=0, keepdims=True)
  _, _, v = tf.linalg.svd(centred, full_matrices=False)  # v: [p, r]
  v_k = v[:, :k]
  projected = tf.linalg.matvec(
      v_k, tf.linalg.matvec(v_k, x_priv - x_pub, transpose_a=True)) + x_pub
  share_pub = eps[public].sum() / eps.sum()
  return tf.cast(share_pub * x_pub + (1.0 - share_pub) * projected, tf.float32)


rule_registry.register(Pfa())
