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
"""`benchmarks/fedhdp_fc_step_profile.py`'s ceiling of a FedHDP round:
which matmuls it times, and the round it adds them up to."""

import os
import sys

import pytest

from tff_hdp import models

# The benchmarks import their helpers as plain modules (a script's own
# folder first); so does this test.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)),
                                'benchmarks'))
import fedhdp_fc_step_profile  # pylint: disable=g-import-not-at-top,wrong-import-position


def test_a_round_of_only_the_matmuls_adds_each_step_for_each_model():
  # Batch 20: 0.003 s forward + 0.004 s gradient, 25 steps; batch 7: 0.001 +
  # 0.002, 25 steps; two models.
  ceiling = {20: (0.003, 0.004), 7: (0.001, 0.002)}
  seconds = fedhdp_fc_step_profile.ceiling_seconds(ceiling, {20: 25, 7: 25},
                                                   models=2)
  assert seconds == pytest.approx(2 * (25 * 0.007 + 25 * 0.003))


def test_it_times_layer_one_at_each_batch_size():
  tf = pytest.importorskip('tensorflow')
  spec = models.fc_model()
  ceiling = fedhdp_fc_step_profile.matmul_ceiling(tf, spec, num_clients=2,
                                                  batches=(5, 3))
  assert list(ceiling) == [5, 3]
  assert all(len(v) == 2 and all(s > 0 for s in v) for v in ceiling.values())


def test_it_times_the_forms_in_turn_per_model_against_the_form_as_run(
    capsys, caplog):
  tf = pytest.importorskip('tensorflow')
  spec = models.fc_model()
  with caplog.at_level('WARNING', logger='tensorflow'):
    layouts = fedhdp_fc_step_profile.other_layouts(tf, spec, num_clients=2,
                                                   batches=(5, 3), repeats=2)
  # Each form is traced once per batch size: nothing TensorFlow reads as
  # retracing (its warning would be noise in the benchmark's output).
  assert not [r for r in caplog.records if 'retracing' in r.getMessage()]
  assert list(layouts) == ['as run', 'side by side', 'transposed', 'xla']
  for by_batch in layouts.values():
    assert list(by_batch) == [5, 3]
    assert all(len(v) == 2 and all(s > 0 for s in v)
               for v in by_batch.values())
  # Each other form's ratio is its milliseconds over the form as run's.
  fedhdp_fc_step_profile.print_layouts({
      'as run': {5: (0.002, 0.004), 3: (0.001, 0.002)},
      'transposed': {5: (0.001, 0.006), 3: (0.001, 0.001)}})
  lines = capsys.readouterr().out.splitlines()
  assert lines == [
      '# the same matmuls timed in turn, ms per model: as run: batch 5: '
      'x @ W1 2.00, x^T dz 4.00; batch 3: x @ W1 1.00, x^T dz 2.00',
      '#   transposed (ratio to as run): batch 5: x @ W1 1.00 (0.50), '
      'x^T dz 6.00 (1.50); batch 3: x @ W1 1.00 (1.00), x^T dz 1.00 (0.50)']
