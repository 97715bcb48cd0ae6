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
"""Trains UDP-Alg (paper 004) or a baseline and writes its results.

    python run_scripts/run_udp.py --algorithm=all
    python run_scripts/run_udp.py --dataset=cifar10 --data_dir=DIR \
        --clip=0.1 --target_epsilon=4
    python run_scripts/run_udp.py --backend=tff --tff_workers=hostA:8000,hostB:8000

`--algorithm=all` runs UDP-Alg, its clip-only ablation (z = 0: what
clipping alone costs), Noiseless (the same HyperNetFL without clipping or
noise) and pFedHN (one user per step, unweighted; it takes round(qN) steps
per round, so each algorithm makes the same expected number of user
updates) on the same users, initial hypernetwork and embeddings; a
comma-separated list runs some of them. Every flag the command line does
not set comes from the dataset's preset in `tff_hdp/udp/presets.py` (the
offline MNIST images, the default: 200 users, the FC NN as target network;
the offline digits: 50 users; CIFAR-10, FEMNIST and CelebA: LeNet and paper
004's settings); the flags are `udp_flags.py`'s, shared with `audit_udp.py`.
The sample cap w_hat defaults to the median user's training size.

Writes to --output_dir: `results.json` (per run: the config, epsilon and
what it is, the per-round noise stddev, accuracy every --eval_every rounds,
and the final per-user accuracies of the generated models with their mean
and variance; no round publishes how many users it sampled), `table.txt`,
and TensorBoard summaries. Bad input is refused with one line and exit 2
before anything is written. Checkpoints (with the run's secret key, 0600 in
0700 folders) go under `<output_dir>/checkpoints/<run>/`: after a kill the
same command resumes exactly; once results.json is written they are
deleted (unless --keep_checkpoints) and the same command reuses the results.
"""

import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
from absl import app
from absl import flags

from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import resume
from tff_hdp.run_scripts import run_flags
from tff_hdp.run_scripts import udp_flags
from tff_hdp.udp import table_rows

# --help lists the system's flags and the shared ones too.
flags.adopt_module_key_flags(udp_flags)
flags.adopt_module_key_flags(run_flags)


def main(argv):
  run = udp_flags.RUN
  run_flags.begin_main(argv, run)
  data, configs = udp_flags.load_and_configure()
  run_flags.check_tff_workers(run.tff_workers.value,
                             run.tff_worker_timeout.value)
  named_configs = [(c.algorithm, c) for c in configs]
  resume.check_finished(run, named_configs)

  # Everything was checked: only now is anything written.
  from tff_hdp.udp import training  # pylint: disable=g-import-not-at-top
  resume.train_and_write(
      run, named_configs, training.train, data,
      table_rows, table_rows.title(data.name, data.num_clients, configs[0]))


if __name__ == '__main__':
  app.run(cli.run_main(main),
          flags_parser=cli.parser_refusing('planted_noise', 'audit_udp.py'))
