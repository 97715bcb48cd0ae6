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
"""Trains FedHDP or a baseline of paper 001 and writes its results.

    python run_scripts/run_fedhdp.py --algorithm=all      # offline mnist5k
    python run_scripts/run_fedhdp.py --preset=digits --algorithm=all
    python run_scripts/run_fedhdp.py --preset=femnist --algorithm=fedhdp \
        --r=0.01 --lambda_p=0.25 --lambda_np=0.25 --data_dir=~/.tff

A preset of `tff_hdp/fedhdp/presets.py` (paper 001's Table 7 for mnist,
skewed_mnist, fmnist, femnist; ours for the offline `mnist5k`, the default,
and `digits`) fills every flag the command line does not set (the flags are
`fedhdp_flags.py`'s). `--algorithm=all` runs Non-Private, DP-FedAvg,
HDP-FedAvg and FedHDP on the same clients and opt-out set, in the papers'
table layout. Each client takes part in a round with probability q and each
private group's mean divides by its expected count, so the printed epsilon
is a bound (add/remove one client; other settings: docs/privacy.md).

The noise and cohorts come from a secret key drawn at the start of each run
(--seed is public); --mechanism_seed makes them reproducible, and the table
then says epsilon is not a guarantee. Each run checkpoints, with its key,
every --checkpoint_every rounds under `<output_dir>/checkpoints/<run>/`
(0600 files in 0700 folders); the same command run again after a kill
resumes and ends with exactly the results of an uninterrupted run. Once
results.json is written the checkpoints are deleted (--keep_checkpoints
keeps them), and the same command again reuses the finished results.

Writes to --output_dir: `results.json` (every run's resolved config,
metrics, epsilon per privacy group and what it is, and its history: clip
norm, unclipped fraction, group weights, test loss and accuracy; no
realised count of a round's clients), `table.txt` and TensorBoard summaries
under `tensorboard/<run>/`. Bad input: one line, exit status 2.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
import dataclasses

from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import resume
from tff_hdp.run_scripts import run_flags
from tff_hdp.run_scripts import fedhdp_flags
from tff_hdp.fedhdp import table_rows

# --help lists the system's flags and the shared ones too.
flags.adopt_module_key_flags(fedhdp_flags)
flags.adopt_module_key_flags(run_flags)


def _store_dir(config, data, output_dir, name):
  """Where the run's Ditto models live: None (memory) unless they are large,
  then among the run's checkpoints, deleted with them
  (`personal_store.directory_for`)."""
  from tff_hdp import models  # pylint: disable=g-import-not-at-top
  from tff_hdp.fedhdp import personal_store  # pylint: disable=g-import-not-at-top
  if not config.ditto:
    return None
  spec = models.build_model(config.model, data.input_shape, data.num_classes)
  return personal_store.directory_for(
      data.num_clients, spec.num_parameters,
      os.path.join(output_dir, resume.CHECKPOINTS, name))


def main(argv):
  run = fedhdp_flags.RUN
  run_flags.begin_main(argv, run)
  configs, preset, num_clients = fedhdp_flags.build_configs()
  run_flags.check_tff_workers(run.tff_workers.value,
                             run.tff_worker_timeout.value)
  data = fedhdp_flags.load_data(configs, preset, num_clients)
  # A run on other draws of the clients' images is another run: its name
  # says so, so neither reuses nor resumes the other's results.
  draws = '' if data.draw in (None, 'disjoint') else f'_{data.draw}_draws'
  if fedhdp_flags.examples_per_client() is not None:
    draws += f'_{fedhdp_flags.examples_per_client()}_each'
  named_configs = [(table_rows.run_name(c) + draws, c) for c in configs]
  resume.check_finished(run, named_configs)

  # Everything was checked: only now is anything written.
  from tff_hdp.fedhdp import training  # pylint: disable=g-import-not-at-top
  resume.train_and_write(
      run, named_configs, training.train, data, table_rows,
      table_rows.title(data.name, data.num_clients, configs[0]),
      lambda config, name: dict(
          store_dir=_store_dir(config, data, run.output_dir.value, name)),
      preset=dataclasses.asdict(preset))


if __name__ == '__main__':
  app.run(cli.run_main(main),
          flags_parser=cli.parser_refusing('planted_noise', 'audit_fedhdp.py'))
