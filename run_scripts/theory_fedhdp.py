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
r"""Regenerates Figures 1-5 of paper 001 from the theory of FedHDP.

Each figure draws the closed form (lines) and a Monte-Carlo simulation of
Algorithm 1 or 3 (markers, with +-2 standard-error bars) on the same axes, and
the script prints the gains the figure shows. No dataset and no TensorFlow are
needed. Usage:

  python run_scripts/theory_fedhdp.py --output_dir=figures/

The paper does not state its figures' parameters; those used here are the
constants below, chosen to show each effect at a glance, and are printed with
the results. Common conventions:

  * N clients; a private client adds N(0, N_p gamma^2) to its update, so the
    private group's average carries privacy noise gamma^2 (eq. (11));
    sigma_c^2 = alpha^2 + tau^2, alpha^2 = beta^2 / n_s.
  * "Server variance" is E||theta - phi||^2 / d; a client's "loss" is the
    per-coordinate mean-squared error of its personal model,
    E||theta_j(lambda) - phi_j||^2 / d (the Bayes risk of (Local Bayes obj.)
    without its factor 1/2).
  * Simulations follow Algorithm 1 as written: a private client's own privacy
    noise stays in the global model it personalises from (see
    `tff_hdp.theory.multi_level`); the closed forms drawn include it too.
  * Figures 1, 2 and 5 compare two worlds that differ only in client k's
    choice: the other N - 1 clients' choices are fixed, so opting out moves
    one client from the private group to the non-private one (and changes
    N_p, hence every private client's noise N_p gamma^2, and r*). FedHDP uses
    each world's r*; HDP-FedAvg + Ditto uses r = 1. The loss of client k is
    estimated as the average over its group (the clients of a group are
    exchangeable).

Figures written to --output_dir:
  fig1_opt_out_lambda_linear_regression.png   (paper Figure 1, Section 3.1.4)
  fig2_opt_out_lambda_linear_regression_large.png  (Figure 2, Appendix A.5)
  fig3_server_variance_vs_ratio.png           (Figure 3, Appendix B)
  fig4_server_variance_vs_rho_np.png          (Figure 4, Appendix B)
  fig5_opt_out_lambda_point_estimation.png    (Figure 5, Appendix B)
"""

import os

# pylint: disable=g-import-not-at-top,wrong-import-position
from tff_hdp.run_scripts import cli

import dataclasses
import time
from typing import List, Sequence

from absl import app
from absl import flags
import matplotlib
matplotlib.use('Agg')
from matplotlib import pyplot as plt
import numpy as np

from tff_hdp import theory
# pylint: enable=g-import-not-at-top,wrong-import-position

_OUTPUT_DIR = flags.DEFINE_string(
    'output_dir', 'figures/', 'Directory the five PNG files are written to.')
_NUM_TRIALS = flags.DEFINE_integer(
    'num_trials', 2000,
    'Monte-Carlo trials per simulated point of Figures 1-4; Figure 5 (point '
    'estimation, d = 1, few clients) uses 10 times as many.')
_SEED = flags.DEFINE_integer('seed', 0, 'Seed of the simulations.')

# Figures 3 and 4: federated point estimation (Algorithm 3).
_SERVER_N = 100  # N.
_SERVER_RHO_NP = 0.1  # Fraction of non-private clients (Figure 3).
_SERVER_SAMPLES = 10  # n_s.
_SERVER_GAMMA2S = (0.01, 0.1, 1.0)  # Figure 3 (left), at sigma_c^2 = 1.
_SERVER_SIGMA_C2S = (0.25, 1.0, 4.0)  # Figure 3 (right), at gamma^2 = 0.1.
_SERVER_SIGMA_C2 = 1.0  # Figure 4, and Figure 3 (left).
_SERVER_GAMMA2 = 0.1  # Figure 4, and Figure 3 (right).
# alpha^2 = tau^2 = sigma_c^2 / 2 throughout Figures 3 and 4 (the server's
# variance depends on sigma_c^2 only).


@dataclasses.dataclass(frozen=True)
class OptOutSetup:
  """The parameters of one opting-out figure (Figures 1, 2 and 5).

  Attributes:
    title: Short description used in titles and printed lines.
    num_clients: N, client k included.
    nonprivate_others: Non-private clients among the other N - 1.
    alpha2: alpha^2 = beta^2 / n_s.
    tau2: tau^2, data heterogeneity.
    gamma2: gamma^2, privacy noise of the private group's average.
    dim: d (1: point estimation, Algorithm 3; else Algorithm 1).
    num_samples: n_s, samples per client.
    trials_factor: Trials are this times --num_trials.
  """
  title: str
  num_clients: int
  nonprivate_others: int
  alpha2: float
  tau2: float
  gamma2: float
  dim: int
  num_samples: int
  trials_factor: int = 1


# Figure 1: a small federation, where one client's choice matters.
FIGURE1 = OptOutSetup('linear regression, small federation', num_clients=10,
                      nonprivate_others=1, alpha2=1.0, tau2=0.1, gamma2=0.5,
                      dim=10, num_samples=20)
# Figure 2: a larger federation with 5% opted out and stronger privacy.
FIGURE2 = OptOutSetup('linear regression, larger federation', num_clients=100,
                      nonprivate_others=5, alpha2=1.0, tau2=0.3, gamma2=2.0,
                      dim=10, num_samples=20)
# Figure 5: point estimation, small federation, strong privacy.
FIGURE5 = OptOutSetup('point estimation', num_clients=10, nonprivate_others=1,
                      alpha2=1.0, tau2=0.3, gamma2=2.0, dim=1, num_samples=10,
                      trials_factor=10)

_LAMBDA_CURVE = np.logspace(-2, 3, 200)
_LAMBDA_POINTS = np.logspace(-2, 3, 11)
_RATIO_CURVE = np.logspace(-3, 0, 200)
_RATIO_POINTS = np.logspace(-3, 0, 7)
_RHO_CURVE = np.linspace(0.0, 1.0, 201)
_RHO_POINTS = np.round(np.concatenate([[0.0, 0.05], np.arange(0.1, 1.01, 0.1)]),
                       2)
_COLORS = ('tab:blue', 'tab:orange', 'tab:green')


def _simulate(dim, num_samples, **kwargs):
  if dim == 1:
    return theory.simulate_point_estimation(num_samples=num_samples, **kwargs)
  return theory.simulate_linear_regression(dim=dim, num_samples=num_samples,
                                           **kwargs)


def _server_point(sigma_c2, group_sizes, gamma2s, ratios, trials, seed):
  result = theory.simulate_point_estimation(
      groups=theory.Groups(group_sizes, gamma2s, ratios),
      data=theory.DataModel(sigma_c2 / 2, sigma_c2 / 2),
      num_samples=_SERVER_SAMPLES, num_trials=trials, seed=seed)
  return result.server_mse, result.server_mse_se


def _errorbar(ax, x, means, ses, color, label=None):
  ax.errorbar(x, means, yerr=2 * np.asarray(ses), fmt='o', ms=4, capsize=2,
              color=color, label=label)


def figure_ratio(path: str, trials: int, seed: int) -> List[str]:
  """Figure 3: server variance against r, for several gamma^2 and sigma_c^2."""
  n_np = int(round(_SERVER_RHO_NP * _SERVER_N))
  n_p = _SERVER_N - n_np
  fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=False)
  lines = []
  panels = (
      ('gamma', [(_SERVER_SIGMA_C2, g) for g in _SERVER_GAMMA2S]),
      ('sigma', [(s, _SERVER_GAMMA2) for s in _SERVER_SIGMA_C2S]),
  )
  printed = set()
  for ax, (which, cases) in zip(axes, panels):
    for curve_index, (color, (sigma_c2, gamma2)) in enumerate(
        zip(_COLORS, cases)):
      label = (f'$\\gamma^2$={gamma2:g}' if which == 'gamma' else
               f'$\\sigma_c^2$={sigma_c2:g}')
      curve = theory.server_variance(sigma_c2, gamma2, _SERVER_N,
                                     _SERVER_RHO_NP, _RATIO_CURVE)
      ax.plot(_RATIO_CURVE, curve, color=color, label=label)
      r_star = theory.optimal_ratio(sigma_c2, gamma2, n_p)
      points = np.append(_RATIO_POINTS, r_star)
      # Common random numbers along a curve (same seed for every r), fresh
      # draws for each curve.
      sims = [_server_point(sigma_c2, (n_np, n_p), (0.0, gamma2), (1.0, r),
                            trials, seed + curve_index) for r in points]
      means, ses = zip(*sims)
      _errorbar(ax, points, means, ses, color)
      best = theory.optimal_server_variance(sigma_c2, gamma2, _SERVER_N,
                                            _SERVER_RHO_NP)
      ax.plot([r_star], [best], marker='*', ms=14, color=color, mec='k')
      hdp = theory.hdp_fedavg_server_variance(sigma_c2, gamma2, _SERVER_N,
                                              _SERVER_RHO_NP)
      empirical_best = points[int(np.argmin(means))]
      if (sigma_c2, gamma2) in printed:
        continue
      printed.add((sigma_c2, gamma2))
      lines.append(
          f'Figure 3: sigma_c^2={sigma_c2:g}, gamma^2={gamma2:g}: '
          f'r*={r_star:.4g}, server variance at r* {best:.4g} (simulated '
          f'{means[-1]:.4g} +- '
          f'{ses[-1]:.2g}) vs {hdp:.4g} at r=1 (HDP-FedAvg): '
          f'{100 * (1 - best / hdp):.1f}% lower; simulated minimum over the '
          f'grid at r={empirical_best:.3g}')
    ax.set_xscale('log')
    ax.set_yscale('log')
    ax.set_xlabel('ratio r (weight of a private / a non-private client)')
    ax.set_ylabel('server variance $\\sigma_s^2$')
    ax.legend()
  axes[0].set_title(f'$\\sigma_c^2$={_SERVER_SIGMA_C2:g}, varying $\\gamma^2$')
  axes[1].set_title(f'$\\gamma^2$={_SERVER_GAMMA2:g}, varying $\\sigma_c^2$')
  fig.suptitle(f'Server variance vs r (point estimation, N={_SERVER_N}, '
               f'$\\rho_{{np}}$={_SERVER_RHO_NP:g}; lines: closed form, '
               'points: simulation, stars: r*)', fontsize=10)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)
  return lines


def figure_rho(path: str, trials: int, seed: int) -> List[str]:
  """Figure 4: server variance against rho_np for the three aggregators."""
  sigma_c2, gamma2, n = _SERVER_SIGMA_C2, _SERVER_GAMMA2, _SERVER_N
  fig, ax = plt.subplots(figsize=(6.5, 4.2))
  algorithms = (
      ('DP-FedAvg', theory.dp_fedavg_server_variance),
      ('HDP-FedAvg (r = 1)', theory.hdp_fedavg_server_variance),
      ('FedHDP (r = r*)', theory.optimal_server_variance),
  )
  simulated = {}
  for color, (name, closed_form) in zip(_COLORS, algorithms):
    ax.plot(_RHO_CURVE, closed_form(sigma_c2, gamma2, n, _RHO_CURVE),
            color=color, label=name)
    means, ses = [], []
    for rho in _RHO_POINTS:
      n_np = int(round(rho * n))
      n_p = n - n_np
      if name.startswith('DP-FedAvg'):
        config = ((n,), ((n_p / n) * gamma2,), (1.0,))
      elif name.startswith('HDP'):
        config = ((n_np, n_p), (0.0, gamma2), (1.0, 1.0))
      else:
        config = ((n_np, n_p), (0.0, gamma2),
                  (1.0, theory.optimal_ratio(sigma_c2, gamma2, n_p)))
      mean, se = _server_point(sigma_c2, *config, trials, seed)
      means.append(mean)
      ses.append(se)
    simulated[name] = np.array(means)
    _errorbar(ax, _RHO_POINTS, means, ses, color)
  ax.set_yscale('log')
  ax.set_xlabel('fraction of non-private clients $\\rho_{np}$')
  ax.set_ylabel('server variance $\\sigma_s^2$')
  ax.set_title(f'Server variance vs $\\rho_{{np}}$ (point estimation, N={n}, '
               f'$\\sigma_c^2$={sigma_c2:g}, $\\gamma^2$={gamma2:g})',
               fontsize=10)
  ax.legend()
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)

  lines = []
  for rho in (0.05, 0.1, 0.3):
    opt = theory.optimal_server_variance(sigma_c2, gamma2, n, rho)
    hdp = theory.hdp_fedavg_server_variance(sigma_c2, gamma2, n, rho)
    dp = theory.dp_fedavg_server_variance(sigma_c2, gamma2, n, rho)
    lines.append(
        f'Figure 4: rho_np={rho:g}: server variance FedHDP {opt:.4g}, '
        f'HDP-FedAvg {hdp:.4g}, DP-FedAvg {dp:.4g}: FedHDP is '
        f'{100 * (1 - opt / hdp):.1f}% below HDP-FedAvg and '
        f'{100 * (1 - opt / dp):.1f}% below DP-FedAvg (gaps (79)-(80): '
        f'{theory.gap_hdp_fedavg_optimal(sigma_c2, gamma2, n, rho):.4g}, '
        f'{theory.gap_dp_fedavg_optimal(sigma_c2, gamma2, n, rho):.4g})')
  ratio = (theory.optimal_server_variance(sigma_c2, gamma2, n, _RHO_CURVE) /
           theory.hdp_fedavg_server_variance(sigma_c2, gamma2, n, _RHO_CURVE))
  k = int(np.argmin(ratio))
  lines.append(
      f'Figure 4: largest gain over HDP-FedAvg at rho_np={_RHO_CURVE[k]:.3g}: '
      f'{100 * (1 - ratio[k]):.1f}% lower server variance')
  return lines


def _opt_out_worlds(setup: OptOutSetup):
  """(name, group sizes, client k's group index) of the two worlds."""
  n_np = setup.nonprivate_others
  n_p = setup.num_clients - n_np
  return (('stays private', (n_np, n_p), 1),
          ('opts out', (n_np + 1, n_p - 1), 0))


def figure_opt_out(path: str, setup: OptOutSetup, figure: int, trials: int,
                   seed: int) -> List[str]:
  """Figures 1, 2 and 5: client k's loss against lambda, private or not."""
  s = setup
  sigma_c2 = s.alpha2 + s.tau2
  trials *= s.trials_factor
  fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
  minima = {}
  lines = []
  for ax, algorithm in zip(axes, ('HDP-FedAvg+Ditto', 'FedHDP')):
    for color, (world, sizes, group) in zip(_COLORS, _opt_out_worlds(s)):
      n_p = sizes[1]
      r = (1.0 if algorithm == 'HDP-FedAvg+Ditto' else
           theory.optimal_ratio(sigma_c2, s.gamma2, n_p))
      config = dict(alpha2=s.alpha2, tau2=s.tau2,
                    gamma2s=(0.0, s.gamma2), group_sizes=sizes,
                    ratios=(1.0, r), group=group)
      curve = theory.multi_level_local_risk(_LAMBDA_CURVE, **config)
      ax.plot(_LAMBDA_CURVE, curve, color=color, label=f'client k {world}')
      result = _simulate(
          s.dim, s.num_samples,
          groups=theory.Groups(sizes, (0.0, s.gamma2), (1.0, r)),
          data=theory.DataModel(s.alpha2, s.tau2),
          lambdas=_LAMBDA_POINTS, num_trials=trials, seed=seed)
      _errorbar(ax, _LAMBDA_POINTS, result.client_mse[group],
                result.client_mse_se[group], color)
      lam = theory.multi_level_optimal_lambda(**config)
      best = float(theory.multi_level_local_risk(lam, **config))
      ax.plot([lam], [best], marker='*', ms=14, color=color, mec='k')
      minima[(algorithm, world)] = (lam, best, r)
    ax.set_xscale('log')
    ax.set_xlabel('$\\lambda$')
    ax.set_title(algorithm)
    ax.legend()
  axes[0].set_ylabel('loss of client k, $E\\|\\theta_k - \\phi_k\\|^2 / d$')
  fig.suptitle(
      f'Opting out, {s.title}: N={s.num_clients} (of the other '
      f'{s.num_clients - 1}, {s.nonprivate_others} non-private), d={s.dim}, '
      f'$n_s$={s.num_samples}, '
      f'$\\alpha^2$={s.alpha2:g}, $\\tau^2$={s.tau2:g}, '
      f'$\\gamma^2$={s.gamma2:g} (stars: $\\lambda^*$)', fontsize=10)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)

  prefix = f'Figure {figure} ({s.title})'
  for algorithm in ('HDP-FedAvg+Ditto', 'FedHDP'):
    lam_p, private, _ = minima[(algorithm, 'stays private')]
    lam_np, opted_out, _ = minima[(algorithm, 'opts out')]
    lines.append(
        f'{prefix}: {algorithm}: minimum loss {private:.4g} if client k stays '
        f'private (lambda*={lam_p:.3g}), {opted_out:.4g} if it opts out '
        f'(lambda*={lam_np:.3g}): opting out lowers it by '
        f'{100 * (1 - opted_out / private):.1f}%')
  for world in ('stays private', 'opts out'):
    hdp = minima[('HDP-FedAvg+Ditto', world)][1]
    fedhdp = minima[('FedHDP', world)][1]
    lines.append(
        f'{prefix}: client k {world}: FedHDP (r*) lowers its minimum loss by '
        f'{100 * (1 - fedhdp / hdp):.1f}% against HDP-FedAvg+Ditto')
  # Theorem 8's lambda* assume the client removed its own noise (eq. (44)).
  n_p = s.num_clients - s.nonprivate_others
  lam_p, best_p, r_star = minima[('FedHDP', 'stays private')]
  paper_p = float(theory.optimal_lambda_p(s.alpha2, s.tau2, s.gamma2,
                                          s.num_clients, n_p))
  paper_np = float(theory.optimal_lambda_np(s.alpha2, s.tau2))
  data = theory.DataModel(s.alpha2, s.tau2)
  risk_paper_p = float(theory.local_risk(paper_p, data, s.gamma2,
                                         s.num_clients, n_p, r_star, True))
  bayes_p = float(theory.bayes_local_risk(data, s.gamma2, s.num_clients, n_p,
                                          True))
  lines.append(
      f'{prefix}: Theorem 8 gives lambda*_p={paper_p:.3g}, '
      f'lambda*_np={paper_np:.3g}; with its own noise left in the global model '
      f'(Algorithm 1) the private client\'s best lambda is {lam_p:.3g} and '
      f'lambda*_p costs {100 * (risk_paper_p / best_p - 1):.2f}% more; its '
      f'Bayes risk (own noise removed) is {bayes_p:.4g} vs {best_p:.4g}')
  return lines


def main(argv: Sequence[str]) -> None:
  cli.check_no_arguments(argv)
  cli.check(_NUM_TRIALS.value >= 2,
            f'--num_trials must be >= 2, got {_NUM_TRIALS.value}')
  output_dir = _OUTPUT_DIR.value
  try:
    os.makedirs(output_dir, exist_ok=True)
  except OSError as e:
    raise cli.UsageError(f'--output_dir: cannot create {output_dir!r}: '
                         f'{e.strerror}') from e
  start = time.time()
  trials, seed = _NUM_TRIALS.value, _SEED.value
  print(f'theory_fedhdp: --num_trials={trials} --seed={seed} '
        f'--output_dir={output_dir}')
  print(f'Figures 3-4 (point estimation): N={_SERVER_N}, n_s={_SERVER_SAMPLES}'
        f', rho_np={_SERVER_RHO_NP:g} (Figure 3), alpha^2 = tau^2 = '
        f'sigma_c^2 / 2, gamma^2 in {_SERVER_GAMMA2S} at sigma_c^2='
        f'{_SERVER_SIGMA_C2:g}, sigma_c^2 in {_SERVER_SIGMA_C2S} at gamma^2='
        f'{_SERVER_GAMMA2:g}')
  for number, setup in ((1, FIGURE1), (2, FIGURE2), (5, FIGURE5)):
    print(f'Figure {number}: {setup}')
  jobs = (
      ('fig1_opt_out_lambda_linear_regression.png',
       lambda p: figure_opt_out(p, FIGURE1, 1, trials, seed)),
      ('fig2_opt_out_lambda_linear_regression_large.png',
       lambda p: figure_opt_out(p, FIGURE2, 2, trials, seed)),
      ('fig3_server_variance_vs_ratio.png',
       lambda p: figure_ratio(p, trials, seed)),
      ('fig4_server_variance_vs_rho_np.png',
       lambda p: figure_rho(p, trials, seed)),
      ('fig5_opt_out_lambda_point_estimation.png',
       lambda p: figure_opt_out(p, FIGURE5, 5, trials, seed)),
  )
  for name, job in jobs:
    path = os.path.join(output_dir, name)
    for line in job(path):
      print(line)
    print(f'wrote {path}')
  print(f'theory_fedhdp: done in {time.time() - start:.1f}s')


if __name__ == '__main__':
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
