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
"""Audits Robust-HDP's clients' DP-SGD with canary gradients (paper 003).

    python run_scripts/audit_robust_hdp.py --quick
    python run_scripts/audit_robust_hdp.py --quick --planted_noise_scale=0.5
    python run_scripts/audit_robust_hdp.py --rounds=40 --audit_clients=5,13

Takes the client flags of `run_robust_hdp.py` (`robust_hdp_flags.py`: data,
privacy distribution, rounds, DP-SGD settings; the aggregation rule does not
enter a client's guarantee) and audits the clients named by --audit_clients (default: the
first of each distinct batch size) with m = --canaries canary gradients
each (`tff_hdp.robust_hdp.audit`). Prints one line per audited client:

    client=<i> epsilon_accounted=<x> epsilon_estimate=<y>
        epsilon_lower_bound=<z>

epsilon_accounted is the RDP accountant's for the client's calibrated z_i
(its target epsilon_i); results.json also has the PLD accountant's, and
both ratios. `--planted_noise_scale=f` (a self-check, refused by every other
binary) runs the audited clients' DP-SGD with z_i times f while the
accountant keeps z_i. `--quick`: 10 rounds and 1,000 canaries per client
unless set, about a minute on 2 cores. Writes `results.json` and `audit.txt`
to --output_dir. Bad input: one line, exit 2, nothing written.
"""

import os
import sys

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position

from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import output_dirs
from tff_hdp.run_scripts import resume
from tff_hdp.run_scripts import run_flags
from tff_hdp.run_scripts import robust_hdp_flags
from tff_hdp.privacy import canary_audit
from tff_hdp.robust_hdp import rule_registry
import tff_hdp.robust_hdp.rules  # pylint: disable=unused-import  # Registered.

_CANARIES = flags.DEFINE_integer(
    'canaries', 1000, 'Canary gradients m per audited client, each inserted '
    'with probability 1/2.')
_CLIENTS = flags.DEFINE_list(
    'audit_clients', None, 'Indices of the clients to audit (default: the '
    'first client of each distinct batch size).')
_PLANTED_SCALE = flags.DEFINE_float(
    'planted_noise_scale', 1.0, 'Audit self-check: multiply the audited '
    'clients\' z_i by this (> 0) in the mechanism only.')
_, _STATISTIC = run_flags.define_audit_flags(
    release='each DP-SGD step\'s noised sum, minus the batch\'s own clipped '
    'gradients')
flags.DEFINE_bool(  # Read by run_flags.begin_audit.
    'quick', False, '10 rounds and 1,000 canaries per client, unless set on '
    'the command line.')
# --help lists the system's flags and the shared ones too.
flags.adopt_module_key_flags(robust_hdp_flags)
flags.adopt_module_key_flags(run_flags)

_QUICK_FLAGS = {'rounds': 10, 'canaries': 1000}


def main(argv):
  run_flags.begin_audit(argv, _QUICK_FLAGS)
  output_dir = flags.FLAGS.output_dir
  run_flags.check_canaries('canaries', _CANARIES.value, _PLANTED_SCALE.value)
  cli.check(flags.FLAGS.poisson_sampling, '--nopoisson_sampling is not '
            'audited: the accounting (and the audit) assumes Poisson batches')
  cli.check(not flags.FLAGS.tff_workers,
            '--tff_workers is not supported by an audit (one client\'s '
            'DP-SGD runs in this process)')
  config = robust_hdp_flags.build_configs()[0]
  cli.check(rule_registry.get(config.algorithm).private,
            f'--algorithm={config.algorithm} has no private client to audit')

  indices = None
  if _CLIENTS.value is not None:
    n = flags.FLAGS.num_clients
    try:
      indices = [int(i) for i in _CLIENTS.value]
    except ValueError:
      raise cli.UsageError('--audit_clients takes client indices, got '
                           f'{",".join(_CLIENTS.value)}') from None
    cli.check(all(0 <= i < n for i in indices),
              f'--audit_clients must be in 0..{n - 1}, got '
              f'{",".join(_CLIENTS.value)}')
    cli.check(len(set(indices)) == len(indices),
              f'--audit_clients repeats a client: {",".join(_CLIENTS.value)}')

  data = robust_hdp_flags.load_data()

  from tff_hdp import models  # pylint: disable=g-import-not-at-top
  from tff_hdp.robust_hdp import audit as audit_lib  # pylint: disable=g-import-not-at-top
  from tff_hdp.robust_hdp import dp_sgd  # pylint: disable=g-import-not-at-top
  from tff_hdp.robust_hdp import process  # pylint: disable=g-import-not-at-top

  privacy = process.client_privacy(config, [len(y) for _, y in data.train])
  if indices is None:
    indices = audit_lib.default_clients(privacy)
  clients = [audit_lib.AuditedClient(i, *data.train[i], privacy[i])
             for i in indices]
  spec = models.build_model(config.model, data.input_shape, data.num_classes)
  settings = dp_sgd.DpSgdSettings(
      clip=config.clip, learning_rate=config.learning_rate,
      local_epochs=config.local_epochs, poisson=config.poisson)
  audit = audit_lib.RobustHdpAudit(
      spec, clients, canaries=_CANARIES.value, rounds=config.rounds,
      settings=settings, seed=config.seed,
      mechanism_seed=config.mechanism_seed,
      planted_noise_scale=_PLANTED_SCALE.value)

  # Everything was checked: only now is anything written.
  output_dirs.claim_output_dir(output_dir)
  audit.run(progress=flags.FLAGS.progress)
  rows = audit.report(config.delta, _STATISTIC.value)
  lines = [canary_audit.format_line(row, key='client') for row in rows]
  title = (f'audit: Robust-HDP clients dataset={data.name} '
           f'privacy={config.distribution} rounds={config.rounds} '
           f'clip={config.clip} delta={config.delta:g} '
           f'canaries={_CANARIES.value} '
           f'planted_noise_scale={_PLANTED_SCALE.value:g} observe=release '
           f'statistic={_STATISTIC.value}')
  resume.write_audit(output_dir, title, lines,
                  {'argv': sys.argv, 'config': config.__dict__, 'audit': rows},
                  default=str)


if __name__ == '__main__':
  flags.FLAGS.set_default('algorithm', 'robust_hdp')
  flags.FLAGS.set_default('output_dir', 'results/audit_robust_hdp')
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
