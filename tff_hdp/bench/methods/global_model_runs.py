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
"""The end of an HDP-Bench run on FedHDP's driver (`tff_hdp.fedhdp`), shared
by the methods built on it (fedhdp_levels, idp_sample, idp_scale): the
global model's mean local test accuracy and each client's spent epsilon.

TensorFlow is imported when a run needs it: the benchmark's flag checks
import every method.
"""

from typing import Any, Callable, Optional, Sequence

import numpy as np

from tff_hdp.bench import method


def outcome(experiment, run, setting: method.Setting,
            entries: Sequence[Optional[str]]) -> method.Outcome:
  """`run`'s outcome: the mean over the clients of its global model's local
  test accuracy (%), and per client the epsilon its ledger entry spent
  (`method.client_epsilons`)."""
  from tff_hdp import templates  # pylint: disable=g-import-not-at-top
  from tff_hdp.fedhdp import evaluation  # pylint: disable=g-import-not-at-top
  accuracies = evaluation.per_client_accuracy(
      experiment.spec, templates.global_weights(run.state),
      setting.data.test)
  return method.Outcome(
      accuracy=100.0 * float(np.nanmean(accuracies)),
      epsilons=method.client_epsilons(run.ledger, entries, setting))


def run_accounted_per_client(
    calibration: method.Calibration, setting: method.Setting,
    rounds_for: Callable[[Any, Any, Sequence[int]], Any], *, seed: int,
    mechanism_seed: Optional[int]) -> method.Outcome:
  """One run of a method that calibrates client by client on FedHDP's
  driver, and its `outcome`.

  Args:
    calibration: Its `config` is (the `FedHdpConfig`, the clients' own
      values: rates, clips); `accounted` are the clients it gives a
      mechanism.
    setting: The population.
    rounds_for: `rounds_for(experiment, values, accounted)`, the run's
      `round_loop.System`, whose ledger keeps one entry per accounted
      client, `method.client_entry(i)`.
    seed, mechanism_seed: As `method.prepare_run`'s.
  """
  from tff_hdp import round_loop  # pylint: disable=g-import-not-at-top
  from tff_hdp.fedhdp import training  # pylint: disable=g-import-not-at-top
  from tff_hdp.privacy import privacy_ledger  # pylint: disable=g-import-not-at-top
  config, values = calibration.config
  experiment = method.prepare_run(training, config, setting, seed=seed,
                                  mechanism_seed=mechanism_seed)
  config = experiment.config
  accounted = [i for i, m in enumerate(calibration.clients) if m is not None]
  run = round_loop.run(
      rounds_for(experiment, values, accounted), config,
      total_rounds=config.rounds, eval_every=config.eval_every,
      ledger=privacy_ledger.PrivacyLedger(**config.ledger_terms()))
  return outcome(experiment, run, setting, [
      method.client_entry(i) if m is not None else None
      for i, m in enumerate(calibration.clients)])
