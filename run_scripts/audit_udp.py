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
"""Audits UDP-Alg's phi with canary users (paper 004; issue 11, item 5).

    python run_scripts/audit_udp.py --quick               # offline digits
    python run_scripts/audit_udp.py --quick --planted_noise_scale=0.5
    python run_scripts/audit_udp.py                       # mnist5k defaults

Takes every run flag of `run_udp.py` (`udp_flags.py`; UDP-Alg on the direct
backend) and adds --canaries canary users (`tff_hdp.udp.audit`). Prints

    group=phi epsilon_accounted=<x> epsilon_estimate=<y> epsilon_lower_bound=<z>

as `audit_fedhdp.py` does for FedHDP's groups, and writes `results.json`
and `audit.txt` to --output_dir. `--planted_noise_scale=f` (a self-check,
refused by `run_udp.py`) runs the mechanism with z times f while the
accountant keeps z. Bad input: one line, exit 2, nothing written.
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
from tff_hdp.run_scripts import udp_flags
from tff_hdp.privacy import canary_audit

_CANARIES = flags.DEFINE_integer(
    'canaries', 200, 'Canary users m, each inserted with probability 1/2.')
_PLANTED_SCALE = flags.DEFINE_float(
    'planted_noise_scale', 1.0, 'Audit self-check: multiply the mechanism\'s '
    'noise multiplier by this (> 0); the accountant keeps the configured one.')
_OBSERVE, _STATISTIC = run_flags.define_audit_flags(
    release='the noised estimator of grad phi every round, minus the real '
    'users\' known records',
    global_view='phi\'s round steps')
flags.DEFINE_bool(  # Read by run_flags.begin_audit.
    'quick', False, 'The offline digits (50 users, 100 rounds), unless '
    '--dataset is on the command line: about 30 s on 2 cores.')
# --help lists the system's flags and the shared ones too.
flags.adopt_module_key_flags(udp_flags)
flags.adopt_module_key_flags(run_flags)


def main(argv):
  run_flags.begin_audit(argv, {'dataset': 'digits'})
  cli.check(flags.FLAGS.algorithm == 'udp',
            f'--algorithm must be udp for an audit of phi, got '
            f'{flags.FLAGS.algorithm}')
  cli.check(flags.FLAGS.backend == 'direct',
            f'--backend must be direct for an audit, got '
            f'{flags.FLAGS.backend}')
  run_flags.check_canaries('canaries', _CANARIES.value, _PLANTED_SCALE.value)
  run_flags.check_audit_flags(_OBSERVE.value, _STATISTIC.value)
  data, (config,) = udp_flags.load_and_configure()

  # Everything was checked: only now is anything written.
  from tff_hdp import models  # pylint: disable=g-import-not-at-top
  from tff_hdp.udp import audit as audit_lib  # pylint: disable=g-import-not-at-top
  from tff_hdp.udp import hypernetwork  # pylint: disable=g-import-not-at-top

  target = models.build_model(config.target, data.input_shape,
                              data.num_classes)
  net = hypernetwork.HyperNetwork(
      target, config.embedding_dim or
      hypernetwork.default_embedding_dim(data.num_clients))
  audit = audit_lib.UdpAudit(net, canaries=_CANARIES.value,
                             sampling_rate=config.sampling_rate,
                             seed=config.seed,
                             planted_noise_scale=_PLANTED_SCALE.value,
                             noise_multiplier=config.noise_multiplier,
                             observe=_OBSERVE.value)
  output_dir = flags.FLAGS.output_dir
  output_dirs.claim_output_dir(output_dir)
  record = audit_lib.train_audited(config, data, audit, _STATISTIC.value,
                                   progress=flags.FLAGS.progress)
  line = canary_audit.format_line(record['audit'][0])
  title = (f'audit: UDP-Alg dataset={data.name} users={data.num_clients} '
           f'rounds={config.rounds} q={config.sampling_rate:g} '
           f'z={config.noise_multiplier:.4g} S={config.clip:g} '
           f'delta={config.delta:g} canaries={_CANARIES.value} '
           f'planted_noise_scale={_PLANTED_SCALE.value:g} '
           f'observe={_OBSERVE.value} statistic={_STATISTIC.value}')
  record['argv'] = sys.argv
  resume.write_audit(output_dir, title, [line], record)


if __name__ == '__main__':
  flags.FLAGS.set_default('algorithm', 'udp')
  flags.FLAGS.set_default('output_dir', 'results/audit_udp')
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
