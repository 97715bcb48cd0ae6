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
"""FedHDP's memory at FEMNIST's size: 3,400 clients' personal models.

The peak resident memory (/proc/self/status) of a direct-backend run of
FEMNIST's size: 3,400 clients' CNN personal models in a memory-mapped store
(`personal_store.PersonalModelStore`), 3% of the clients per round, Ditto
on, synthetic data; then the resident memory once every client holds a
personal model (the store's worst case). `benchmark_fedhdp.py` runs it
first, so that its peak is its own.
"""

import collections
import tempfile
import time

import fedhdp_rounds

FEMNIST_CLIENTS = 3400
FEMNIST_RATE = 0.03


def _direct_round(spec):
  """FedHDP's direct round with Ditto on `spec`: one private level and the
  opt-out group, FEMNIST's lambdas and learning rate."""
  from tff_hdp.fedhdp import algorithms
  from tff_hdp.fedhdp import direct_backend
  from tff_hdp.fedhdp import hdp_factory
  from tff_hdp.fedhdp import privacy_groups
  from tff_hdp.fedhdp import tff_backend
  groups = privacy_groups.build_groups(
      algorithms.FedHdp(ratio=0.1), noise_multipliers=[1.0], lambda_p=0.25,
      lambda_np=0.25)
  factory = hdp_factory.HeterogeneousDPFactory(
      groups, initial_clip=2.0, clipped_count_stddev=5.0, mechanism_seed=0)
  settings = tff_backend.ClientSettings(
      ditto_lambdas=(0.25, 0.25), local_epochs=1,
      batch_size=fedhdp_rounds.BATCH_SIZE, learning_rate=0.02,
      personal_learning_rate=0.02, ditto=True, seed=0)
  return direct_backend.DirectRound(spec, spec.init(0), factory, settings)


def _run(executor, store, rounds, max_samples):
  """`rounds` rounds of random cohorts; the final state, seconds per round."""
  import numpy as np
  from tff_hdp import templates
  from tff_hdp.fedhdp import executors
  from tff_hdp.privacy import mechanism_key
  cohort_size = round(FEMNIST_RATE * FEMNIST_CLIENTS)
  state = executor.initialize(mechanism_key.new_key(0))
  seconds = []
  for r in range(rounds):
    rng = np.random.default_rng([7, r])
    cohort = np.sort(rng.choice(FEMNIST_CLIENTS, cohort_size, replace=False))
    sizes = rng.integers(max_samples // 4, max_samples + 1, len(cohort))
    data = [(rng.random((n, 28, 28), np.float32),
             rng.integers(0, 62, n).astype(np.int32)) for n in sizes]
    info = [collections.OrderedDict(group=np.int32(c % 20 == 0),
                                    client_id=np.int32(c)) for c in cohort]
    theta = templates.global_weights(state)
    start = time.perf_counter()
    output = executor.next(state, executors.Cohort(
        data, info, store.gather(cohort, theta)))
    state = output.state
    store.scatter(cohort, output.clients)
    seconds.append(time.perf_counter() - start)
  return state, seconds


def femnist_memory(rounds: int, max_samples: int):
  """Peak resident memory of a FEMNIST-sized direct-backend run with Ditto."""
  import numpy as np
  from tff_hdp import models
  from tff_hdp import templates
  from tff_hdp.fedhdp import personal_store
  spec = models.cnn_model((28, 28), 62)
  executor = _direct_round(spec)
  cohort_size = round(FEMNIST_RATE * FEMNIST_CLIENTS)
  before = fedhdp_rounds.read_status()
  with tempfile.TemporaryDirectory() as directory:
    store = personal_store.PersonalModelStore(FEMNIST_CLIENTS, spec.shapes,
                                              directory=directory)
    state, seconds = _run(executor, store, rounds, max_samples)
    store.flush()
    after = fedhdp_rounds.read_status()
    # A long run ends with every client holding a personal model: write them
    # all, as the store's worst case.
    theta = templates.global_weights(state)
    for start in range(0, FEMNIST_CLIENTS, 200):
      ids = np.arange(start, min(start + 200, FEMNIST_CLIENTS))
      store.scatter(ids, [theta] * len(ids))
    store.flush()
    full = fedhdp_rounds.read_status()
    store_gib = store.nbytes / 2**30
  return dict(clients=FEMNIST_CLIENTS, cohort=cohort_size, rounds=rounds,
              samples_per_client=f'{max_samples // 4}..{max_samples}',
              store_gib_on_disk=store_gib, seconds_per_round=seconds,
              rss_mib_before=before['VmRSS'], rss_mib=after['VmRSS'],
              rss_anon_mib=after.get('RssAnon'),
              rss_file_mib=after.get('RssFile'),
              peak_rss_mib=after['VmHWM'],
              all_stored_rss_mib=full['VmRSS'],
              all_stored_rss_anon_mib=full.get('RssAnon'),
              all_stored_rss_file_mib=full.get('RssFile'),
              all_stored_peak_rss_mib=full['VmHWM'])


def print_femnist_memory(femnist):
  """The result of `femnist_memory`, in one line."""
  print(f"# FEMNIST-sized run ({femnist['clients']} clients x CNN personal "
        f"models, {femnist['store_gib_on_disk']:.2f} GiB memory-mapped store, "
        f"{femnist['cohort']} clients/round, {femnist['rounds']} rounds): "
        f"peak resident {femnist['peak_rss_mib']:.0f} MiB (anonymous "
        f"{femnist['rss_anon_mib']:.0f}, file-backed "
        f"{femnist['rss_file_mib']:.0f}); after writing all "
        f"{femnist['clients']} personal models: resident "
        f"{femnist['all_stored_rss_mib']:.0f} MiB (anonymous "
        f"{femnist['all_stored_rss_anon_mib']:.0f}, file-backed pages of the "
        f"store {femnist['all_stored_rss_file_mib']:.0f})", flush=True)
