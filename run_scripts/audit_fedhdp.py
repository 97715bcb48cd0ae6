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
"""Audits a FedHDP run's privacy per group with canary clients (paper 001).

    python run_scripts/audit_fedhdp.py --quick
    python run_scripts/audit_fedhdp.py --quick --planted_noise_scale=0.5
    python run_scripts/audit_fedhdp.py --preset=mnist --dataset=mnist5k \
        --rounds=50 --noditto --canaries_per_group=2000

Takes every run flag of `run_fedhdp.py` (`fedhdp_flags.py`; one algorithm,
default fedhdp, on the direct backend) and adds m = --canaries_per_group
canary clients to each privacy group (`tff_hdp.fedhdp.audit`). By default
the auditor sees each group's own noised release every round, minus the
trained clients' known updates (--observe=release), and reads it with the
likelihood-ratio statistic (--statistic=lr); --observe=global watches the
global model instead (with --statistic=max or sum). Prints one line per
group:

    group=<name> epsilon_accounted=<x> epsilon_estimate=<y>
        epsilon_lower_bound=<z>

epsilon_accounted is the RDP accountant's (none for a non-private group;
results.json also has the PLD accountant's and the estimate's ratio to
each), epsilon_estimate Andrew et al.'s one-shot estimate (the equal-variance
fit for lr), epsilon_lower_bound Steinke et al.'s one-run bound at 95%
confidence. `--planted_noise_scale=f` (a self-check of the audit, refused by
every other binary) runs the mechanism of --planted_noise_group (default:
every private group) with its value noise multiplied by f while the
accountant and the statistic keep the configured noise.

`--quick`: the offline digits preset without Ditto (personal models do not
touch the audited releases), 1,000 canaries per group, about 20 s on 2
cores. Writes `results.json` (the config, the real clients' metrics, and per
group the epsilons, the canary counts and the statistics' moments) and
`audit.txt` to --output_dir. Bad input: one line, exit 2, nothing written.
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
from tff_hdp.run_scripts import fedhdp_flags
from tff_hdp.privacy import canary_audit

_CANARIES = flags.DEFINE_integer(
    'canaries_per_group', 200, 'Canary clients m per privacy group, each '
    'inserted with probability 1/2.')
_PLANTED_SCALE = flags.DEFINE_float(
    'planted_noise_scale', 1.0, 'Audit self-check: multiply the noise of '
    '--planted_noise_group by this (> 0) in the mechanism only.')
_PLANTED_GROUP = flags.DEFINE_list(
    'planted_noise_group', [], 'Groups whose noise --planted_noise_scale '
    'scales (default: every private group).')
_OBSERVE, _STATISTIC = run_flags.define_audit_flags(
    release='each private group\'s own noised release every round, minus '
    'the trained clients\' known records',
    global_view='the global model after each round')
flags.DEFINE_bool(  # Read by run_flags.begin_audit.
    'quick', False, 'The offline digits preset, --noditto and 1,000 canaries '
    'per group, unless set on the command line.')
# --help lists the system's flags and the shared ones too.
flags.adopt_module_key_flags(fedhdp_flags)
flags.adopt_module_key_flags(run_flags)

# What --quick sets when the flag is not on the command line.
_QUICK_FLAGS = {'preset': 'digits', 'ditto': False,
               'canaries_per_group': 1000}


def main(argv):
  run_flags.begin_audit(argv, _QUICK_FLAGS)
  run_flags.check_canaries('canaries_per_group', _CANARIES.value,
                     _PLANTED_SCALE.value)
  run_flags.check_audit_flags(_OBSERVE.value, _STATISTIC.value)
  cli.check(flags.FLAGS.backend == 'direct',
            '--backend must be direct for an audit (canaries join the '
            'direct round), got ' + flags.FLAGS.backend)
  cli.check(not flags.FLAGS.tff_workers,
            '--tff_workers is not supported by an audit (direct only)')
  cli.check(flags.FLAGS.algorithm != 'all',
            '--algorithm=all is not audited; give one of '
            f'{", ".join(fedhdp_flags.ALGORITHMS)}')
  configs, preset, num_clients = fedhdp_flags.build_configs()
  data = fedhdp_flags.load_data(configs, preset, num_clients)
  (config,) = configs

  from tff_hdp.fedhdp import audit as audit_lib  # pylint: disable=g-import-not-at-top
  from tff_hdp.fedhdp import config as config_lib  # pylint: disable=g-import-not-at-top

  setup = config_lib.resolve(config, data)
  planted = _PLANTED_GROUP.value or None
  try:
    audit_lib.planted_group_names(setup.groups, _PLANTED_SCALE.value, planted)
  except ValueError as e:
    raise cli.UsageError(f'--{e}') from None

  # TensorFlow is imported only now, so that refusing bad input stays quiet.
  from tff_hdp import models  # pylint: disable=g-import-not-at-top
  from tff_hdp import runtime  # pylint: disable=g-import-not-at-top

  spec = models.build_model(config.model, data.input_shape, data.num_classes)
  audit = audit_lib.FedHdpAudit(
      setup.groups, spec, canaries_per_group=_CANARIES.value,
      sampling_rate=config.sampling_rate, seed=config.seed,
      planted_noise_scale=_PLANTED_SCALE.value, planted_groups=planted,
      observe=_OBSERVE.value)

  # Everything was checked: only now is anything written.
  output_dir = flags.FLAGS.output_dir
  output_dirs.claim_output_dir(output_dir)
  with runtime.on_demand_context():  # The direct backend: no TFF call.
    record = audit_lib.train_audited(config, data, audit, _STATISTIC.value,
                                     progress=flags.FLAGS.progress)
  lines = [canary_audit.format_line(row) for row in record['audit']]
  title = (f'audit: algorithm={config.algorithm} dataset={data.name} '
           f'rounds={config.rounds} q={config.sampling_rate:g} '
           f'delta={config.delta:g} canaries_per_group={_CANARIES.value} '
           f'planted_noise_scale={_PLANTED_SCALE.value:g} '
           f'observe={_OBSERVE.value} statistic={_STATISTIC.value}')
  record['argv'] = sys.argv
  resume.write_audit(output_dir, title, lines, record)


if __name__ == '__main__':
  flags.FLAGS.set_default('backend', 'direct')
  flags.FLAGS.set_default('output_dir', 'results/audit')
  app.run(cli.run_main(main), flags_parser=cli.parse_flags)
