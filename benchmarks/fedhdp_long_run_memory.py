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
"""FedHDP's memory over a long run through the driver, on each backend.

The resident memory (/proc/self/status) at given rounds of a small-model run
through the driver (`training.train`, digits, FedHDP with Poisson sampling,
so the cohort and the size of each privacy group change every round), on
the direct or the TFF backend; for the TFF backend, the worker process's
memory too. A leak shows as memory that grows from one reading to the next.
`benchmark_fedhdp.py` runs it on both backends.
"""

import time

import fedhdp_rounds


def _config(backend, rounds):
  """The run's FedHDP config: 100 digits clients, rate 0.1, Poisson."""
  from tff_hdp.fedhdp import config as config_lib
  return config_lib.FedHdpConfig(
      algorithm='fedhdp', ratio=0.5, model='fc', rounds=rounds,
      clients_per_round=10, sampling_rate=0.1, poisson_sampling=True,
      local_epochs=1, batch_size=fedhdp_rounds.BATCH_SIZE, learning_rate=0.1,
      personal_learning_rate=0.1, initial_clip=0.5, noise_multiplier=1.0,
      clipped_count_stddev=1.0, optout_fraction=0.2, eval_every=rounds,
      lambda_p=0.1, lambda_np=0.1, seed=0, mechanism_seed=0, backend=backend)


def _cohort_variety(config, data):
  """How many cohort sizes and splits into privacy groups the run has.

  The run's cohorts, recomputed from its (reproducible) mechanism key: the
  run publishes no count.
  """
  import numpy as np
  from tff_hdp.data import sampling
  from tff_hdp.fedhdp import config as config_lib
  from tff_hdp.privacy import mechanism_key
  client_groups = config_lib.resolve(config, data).client_groups
  key = mechanism_key.cohort_key(mechanism_key.new_key(0))
  cohorts = [sampling.sample_cohort(
      data.num_clients, 0, mechanism_key.round_rng(key, r), poisson=True,
      sampling_rate=config.sampling_rate) for r in range(config.rounds)]
  sizes = {len(c) for c in cohorts}
  group_counts = {tuple(np.bincount(client_groups[c], minlength=2))
                  for c in cohorts}
  return len(sizes), len(group_counts)


def long_run_memory(checkpoints: list[int], backend: str, worker=None):
  """Resident memory at `checkpoints` of a Poisson-sampled digits run."""
  from tff_hdp import datasets
  from tff_hdp.fedhdp import training
  data = datasets.load_fedhdp_data('digits', num_clients=100, seed=0)
  rounds = checkpoints[-1]
  config = _config(backend, rounds)
  readings = {}
  sizes, group_counts = _cohort_variety(config, data)

  def on_round(round_num, entry):
    del entry
    if round_num in checkpoints:
      reading = {'rss_mib': fedhdp_rounds.read_status()['VmRSS']}
      if worker is not None and worker.process.poll() is None:
        reading['worker_rss_mib'] = fedhdp_rounds.status_of(
            worker.process.pid)['VmRSS']
      readings[round_num] = reading

  start = time.perf_counter()
  training.train(config, data, on_round=on_round)
  return dict(backend=backend, rounds=rounds, readings=readings,
              distinct_cohort_sizes=sizes,
              distinct_group_counts=group_counts,
              seconds=time.perf_counter() - start)


def print_long_run(run):
  """The result of `long_run_memory`, in one line."""
  print(f"# {run['backend']} backend, {run['rounds']} rounds "
        f"({run['distinct_cohort_sizes']} cohort sizes, "
        f"{run['distinct_group_counts']} group splits): resident MiB at "
        + ', '.join(f'round {k}: {v}' for k, v in run['readings'].items()),
        flush=True)
