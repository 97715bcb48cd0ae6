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
"""Individualized DP by per-client clip norms, as an HDP-Bench method.

Boenisch, Muehl, Dziedzic, Rinberg and Papernot ("Have it your way:
Individualized privacy assignment for DP-SGD", NeurIPS 2023), method
*Scale*, federated at the client level (ours). Threat model: a trusted
server, which adds the noise. Everyone is sampled at the benchmark's q
(Poisson); client i's update is clipped to its own norm S_i and the server
adds ONE Gaussian of std sigma to the sum, so client i's value query has
noise multiplier sigma / S_i. Accounted per client: every global model is
(epsilon_i, delta)-DP with respect to client i's whole data.

Derivation. z_i = the multiplier whose T rounds at q spend exactly
epsilon_i (`noise_multipliers_for_epsilons`). The round is DP-FedAvg's (one
group of `tff_hdp.fedhdp`, fixed clip, expected denominator q N), whose
clipped count (sensitivity 1/2, std z_b = 2 max_i z_i, as `idp_sample`)
composes with the value query: z_eff = ((sigma/S_i)^-2 + (2 z_b)^-2)^-1/2
(`clip_noise`, eq. 1). So S_i = sigma / v_i, v_i = split(z_i, z_b), gives
client i exactly z_i. sigma = S mean_i v_i over the private clients: the
authors' `get_weights` (sprintml/idp-sgd, opacus/accountants/utils.py)
sets C_p = C sigma_bar / sigma_p, sigma_bar the clients' mean multiplier,
so the clips' *harmonic* mean (not the arithmetic mean their docstring
names) is the non-individualized S. The group clips to S_max = max_i S_i
at value multiplier min_i v_i (the least private client's): a no-op on
updates pre-clipped to S_i. A client who opts out (epsilon_i infinite) is
clipped to S_max and has no guarantee.
"""

import dataclasses
import math
from typing import Optional, Sequence

import numpy as np

from tff_hdp import round_executor
from tff_hdp.bench import method
from tff_hdp.bench import registry
from tff_hdp.bench.methods import global_model_runs
from tff_hdp.fedhdp import clip_noise


@dataclasses.dataclass(frozen=True)
class IndividualClips:
  """Per-client clip norms meeting every epsilon_i (`individual_clips`).

  Attributes:
    noise_multipliers: z_i per client, the effective multiplier its T
      rounds spend epsilon_i at; None for an opt-out.
    clips: S_i per client (S_max for an opt-out).
    clipped_count_stddev: z_b of the clipped count.
    noise_stddev: sigma, the value noise's std on the sum.
    group_clip: S_max, the group's clip norm.
    group_noise_multiplier: The group's z_eff: min_i z_i.
  """
  noise_multipliers: tuple[Optional[float], ...]
  clips: tuple[float, ...]
  clipped_count_stddev: float
  noise_stddev: float
  group_clip: float
  group_noise_multiplier: float


def individual_clips(epsilons: Sequence[float], sampling_rate: float,
                     rounds: int, delta: float, mean_clip: float = 1.0,
                     accountant: str = 'rdp') -> IndividualClips:
  """Each client's clip norm S_i (module doc): the harmonic mean of the
  private clients' S_i is `mean_clip`.

  Raises:
    ValueError: No client asks for privacy.
  """
  private = [e for e in epsilons if math.isfinite(e)]
  if not private:
    raise ValueError('individual clip norms need a client with a finite '
                     'epsilon')
  distinct = sorted(set(private))
  z = dict(zip(distinct, method.noise_multipliers_for_epsilons(
      distinct, sampling_rate, rounds, delta, accountant)))
  z_b = 2 * max(z.values())
  v = {e: clip_noise.split_noise_multiplier(z_e, z_b)[0]
       for e, z_e in z.items()}
  sigma = mean_clip * float(np.mean([v[e] for e in private]))
  group_clip = sigma / min(v.values())
  return IndividualClips(
      noise_multipliers=tuple(z.get(e) for e in epsilons),
      clips=tuple(sigma / v[e] if e in v else group_clip for e in epsilons),
      clipped_count_stddev=z_b, noise_stddev=sigma, group_clip=group_clip,
      group_noise_multiplier=min(z.values()))


def effective_noise_multipliers(value_noise_multiplier: float,
                                group_clip: float, clips: Sequence[float],
                                clipped_count_stddev: float
                                ) -> tuple[float, ...]:
  """Per client, the z_eff of its round: the group's value noise std
  (`value_noise_multiplier` x `group_clip`) over its clip S_i, composed
  with the clipped count (`clip_noise.effective_noise_multiplier`)."""
  return tuple(clip_noise.effective_noise_multiplier(
      value_noise_multiplier * group_clip / s, clipped_count_stddev)
               for s in clips)


def clip_each(deltas: Sequence[np.ndarray],
              clips: Sequence[float]) -> list[np.ndarray]:
  """Client k's update (row k of every [K, ...] tensor) scaled to global L2
  norm at most clips[k], as `tf.clip_by_global_norm` (an update within its
  norm is unchanged)."""
  deltas = [np.asarray(d) for d in deltas]
  squares = sum(np.sum(np.square(d, dtype=np.float64),
                       axis=tuple(range(1, d.ndim))) for d in deltas)
  clips = np.asarray(clips, np.float64)
  scale = clips / np.maximum(np.sqrt(squares), clips)
  return [d * scale.reshape((-1,) + (1,) * (d.ndim - 1)).astype(d.dtype)
          for d in deltas]


class IndividualScale(method.Method):
  """Individualized per-client clip norms (module doc)."""

  name = 'idp_scale'
  threat_model = 'trusted server'
  guarantee = method.CLIENT_LEVEL
  server_knows = "each client's clip norm S_i (from epsilon_i)"

  def __init__(self, *, sampling_rate: Optional[float] = None,
               clip: float = 1.0):
    """`sampling_rate`: q (None: the setting's); `clip`: S, the harmonic
    mean of the private clients' clip norms."""
    self.sampling_rate = sampling_rate
    self.clip = clip

  def calibrate(self, setting, preferences):
    from tff_hdp.fedhdp import config as config_lib  # pylint: disable=g-import-not-at-top
    rate = self.sampling_rate or setting.sampling_rate
    clips = individual_clips(preferences.epsilons, rate, setting.rounds,
                             setting.delta, self.clip, setting.accountant)
    config = config_lib.FedHdpConfig(
        algorithm='dp_fedavg', ditto=False, model=setting.model,
        rounds=setting.rounds,
        clients_per_round=max(1, round(rate * setting.num_clients)),
        sampling_rate=rate, poisson_sampling=True, denominators='expected',
        local_epochs=setting.local_epochs, batch_size=setting.batch_size,
        learning_rate=setting.learning_rate, initial_clip=clips.group_clip,
        clip_learning_rate=0.0,
        noise_multiplier=clips.group_noise_multiplier,
        privacy_levels=(0,) * setting.num_clients,
        clipped_count_stddev=clips.clipped_count_stddev, delta=setting.delta,
        accountant=setting.accountant, eval_every=setting.rounds,
        backend='direct')
    config.validate(setting.num_clients)
    return method.Calibration(
        clients=tuple(None if z is None else
                      method.ClientMechanism(rate, z, setting.rounds)
                      for z in clips.noise_multipliers),
        config=(config, clips.clips))

  def run(self, setting, calibration, *, seed,
          mechanism_seed: Optional[int] = None):
    return global_model_runs.run_accounted_per_client(
        calibration, setting, scaled_rounds, seed=seed,
        mechanism_seed=mechanism_seed)


def scaled_rounds(experiment, clips: Sequence[float],
                  accounted: Sequence[int]):
  """DP-FedAvg's rounds of `experiment` (`tff_hdp.fedhdp.training`, direct
  backend) with client i's update clipped to clips[i] before the server's
  step, and one ledger entry per client in `accounted`: its (q, z_eff) every
  round, z_eff from the group's value noise, its clip and z_b
  (`effective_noise_multipliers`).

  The class is made when a run needs it: importing this file (the
  benchmark's flag checks import every method) stays TensorFlow-free.
  """
  from tff_hdp.fedhdp import training  # pylint: disable=g-import-not-at-top
  executor = experiment.executor
  if not hasattr(executor, 'client_work'):
    raise ValueError(f'idp_scale clips between the client work and the '
                     f"server's step: it needs the 'direct' backend, got "
                     f'{experiment.config.backend!r}')
  (group,) = experiment.setup.groups
  clips = np.asarray(clips, np.float64)
  noise = effective_noise_multipliers(
      group.noise_multiplier, experiment.config.initial_clip, clips,
      experiment.setup.clipped_count_stddev)

  class ScaledRounds(training.FedHdpRounds):
    """`scaled_rounds`'s rounds."""

    def execute(self, state, cohort):
      work = executor.client_work(state, cohort)
      state, measurements, _ = executor.aggregate(
          state, clip_each(work.deltas, clips[work.client_ids]), work.groups)
      return round_executor.RoundOutput(state, measurements, work.personal)

    def account(self, ledger, round_num):
      del round_num  # Every round spends the same.
      for i in accounted:
        ledger.step(method.client_entry(i), experiment.config.sampling_rate,
                    noise[i])

  return ScaledRounds(experiment)


registry.register(IndividualScale())
