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
"""A TFF user's first week off the happy path (issue 39, items 1, 4, 6, 7).

`tff.learning.programs.train_model` runs UDP-Alg; checkpoints on disk
(`tff.program.FileProgramStateManager`) resume a stopped run exactly; the
data sources say why `select(k)` takes no other k; a run that never imports
`tff_hdp.runtime` refuses in one line and leaves no worker, while a context
the user installed is kept; bad inputs are refused in one line naming what
is allowed; `ditto_step` takes an empty cohort.
"""

import asyncio
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from tff_hdp import models
from tff_hdp.data import client_data
import tff_hdp.fedhdp
import tff_hdp.robust_hdp
import tff_hdp.udp
from tff_hdp.privacy.preferences import Preferences
from tests import user_code

PACKAGE = user_code.PACKAGE
SIZES = [10 + i for i in range(6)]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _build(system, mechanism_seed=1):
  """A tiny process of `system` (seeded)."""
  if system == 'fedhdp':
    return tff_hdp.fedhdp.build_fedhdp_process(
        PACKAGE,
        Preferences(levels=(0, 0, None, 0, None, 0)),
        config=tff_hdp.fedhdp.FedHdpConfig(noise_multiplier=0.25,
                                           sampling_rate=0.5,
                                           local_epochs=1,
                                           batch_size=4,
                                           seed=1,
                                           mechanism_seed=mechanism_seed))
  if system == 'udp':
    return tff_hdp.udp.build_udp_process(PACKAGE,
                                         Preferences(num_examples=SIZES),
                                         config=tff_hdp.udp.UdpConfig(
                                             sampling_rate=0.5,
                                             noise_multiplier=1.0,
                                             clip=0.1,
                                             sample_cap=12.0,
                                             local_steps=2,
                                             batch_size=4,
                                             hidden=8,
                                             hidden_layers=1,
                                             seed=1,
                                             mechanism_seed=mechanism_seed))
  return tff_hdp.robust_hdp.build_robust_hdp_process(
      PACKAGE,
      Preferences(epsilons=(2.0, 4.0, 8.0, 2.0, 4.0, 8.0),
                  batch_sizes=(4,) * 6,
                  num_examples=SIZES),
      config=tff_hdp.robust_hdp.RobustHdpConfig(algorithm='robust_hdp',
                                                rounds=5,
                                                rpca_method='ialm',
                                                seed=1,
                                                mechanism_seed=mechanism_seed))


def _source(system, process, mechanism_seed=1):
  """A new data source of `process` (seeded), on a new `ClientData`."""
  data = user_code.client_data(SIZES, 'user')
  if system == 'robust_hdp':
    return tff_hdp.robust_hdp.build_data_source(process, data)
  return getattr(tff_hdp, system).build_data_source(
      process, data, mechanism_seed=mechanism_seed)


@pytest.fixture(scope='module', params=['fedhdp', 'udp', 'robust_hdp'])
def system_process(request):
  """(system, its tiny seeded process), built once per system."""
  return request.param, _build(request.param)


def _train(runtime, process, source, rounds, state_manager, models=None):
  """`train_model` for `rounds` rounds in our async context."""
  runtime.install_local_cpp_context(asynchronous=True)
  try:
    asyncio.run(tff.learning.programs.train_model(
        train_process=process, train_data_source=source,
        train_per_round_clients=None, train_total_rounds=rounds,
        program_state_manager=state_manager,
        model_output_manager=models or tff.program.MemoryReleaseManager(),
        train_metrics_manager=tff.program.MemoryReleaseManager(),
        evaluation_manager=None, evaluation_periodicity=1))
  finally:
    runtime.install_local_cpp_context()


def _one_line(error) -> str:
  message = str(error.value)
  assert '\n' not in message, message
  return message


def _tutorial_batched(data):
  """`data` as TFF's tutorials preprocess theirs: (x, y) batches of 4."""
  return data.preprocess(lambda ds: ds.batch(4).map(
      lambda e: (e['x'], e['y'])))


def test_tff_tutorials_batched_client_data_is_every_example_once():
  data = user_code.client_data(SIZES, 'user')
  single = client_data.to_federated_data(data)
  batched = client_data.to_federated_data(_tutorial_batched(data))
  for (x, y), (bx, by) in zip(single.train, batched.train):
    np.testing.assert_array_equal(x, bx)
    np.testing.assert_array_equal(y, by)


def test_tff_tutorials_batched_client_data_trains_in_every_system(
    tff_runtime, system_process):
  del tff_runtime
  system, process = system_process
  data = _tutorial_batched(user_code.client_data(SIZES, 'user'))
  build = getattr(tff_hdp, system).build_data_source
  source = (build(process, data) if system == 'robust_hdp' else
            build(process, data, mechanism_seed=1))
  clients = source.iterator().select()
  state = process.initialize()
  output = process.next(state, clients)
  before = process.get_model_weights(state).trainable
  after = process.get_model_weights(output.state).trainable
  assert all(np.all(np.isfinite(a)) for a in after)
  assert any(not np.array_equal(a, b) for a, b in zip(before, after))


def test_udp_runs_under_train_model(tff_runtime):
  process = _build('udp', mechanism_seed=None)
  source = _source('udp', process, mechanism_seed=None)
  states, models = user_code.MemoryState(), tff.program.MemoryReleaseManager()
  _train(tff_runtime, process, source, 2, states, models)
  assert max(states.saved) == 2
  assert process.round_num(states.saved[2].state) == 2
  released = models.values()['training_checkpoint_round_2']
  # The state train_model releases as "the model" holds no key: with secret
  # randomness (no mechanism_seed) the state has none.
  assert set(released) == {'round_num', 'phi', 'embeddings'}


def test_checkpoint_on_disk_resumes_as_the_uninterrupted_run(
    tff_runtime, tmp_path, system_process):
  system, process = system_process
  whole = tff.program.FileProgramStateManager(str(tmp_path / 'whole'))
  _train(tff_runtime, process, _source(system, process), 2, whole)
  # A run stopped after its round-1 checkpoint, resumed by a new program
  # (new data sources, of the same configuration and seeds).
  stopped = str(tmp_path / 'stopped')
  _train(tff_runtime, process, _source(system, process), 1,
         tff.program.FileProgramStateManager(stopped))
  source = _source(system, process)
  resumed = tff.program.FileProgramStateManager(stopped)
  _train(tff_runtime, process, source, 2, resumed)
  a, b = (_load(m, process, source) for m in (whole, resumed))
  assert a.round_number == b.round_number == 2
  assert process.round_num(a.state) == process.round_num(b.state) == 2
  assert a.data_iterator == b.data_iterator
  for x, y in zip(process.get_model_weights(a.state).trainable,
                  process.get_model_weights(b.state).trainable):
    np.testing.assert_array_equal(x, y)
  # The next cohorts are the same too (the iterators' key was saved).
  assert len(a.data_iterator.select()) == len(b.data_iterator.select())


def _load(manager, process, source):
  """The latest `tff.learning.programs.ProgramState` `manager` saved."""
  structure = tff.learning.programs.ProgramState(
      process.initialize(), 0, 0, source.iterator())
  loaded, _ = asyncio.run(manager.load_latest(structure))
  return loaded


@pytest.mark.parametrize('system_process', ['fedhdp', 'udp'], indirect=True)
def test_select_k_says_why_it_takes_only_the_expected_cohort(system_process):
  system, process = system_process
  iterator = _source(system, process).iterator()
  with pytest.raises(ValueError) as error:
    iterator.select(4)
  message = _one_line(error)
  assert ('draws Poisson cohorts at rate 0.5 (expected 3 of 6 clients); '
          'select(k) takes k=None or 3, got 4') in message
  assert 'epsilon assumes Poisson sampling at that rate' in message
  assert 'the mechanism draws the cohort size' in message


_STOCK_FEDAVG_BESIDE_OURS = textwrap.dedent('''
    import importlib, pkgutil
    import numpy as np
    import tensorflow as tf
    import tensorflow_federated as tff
    import tff_hdp
    from tests import conftest, user_code
    # Every public module of the package, imported.
    for info in pkgutil.walk_packages(tff_hdp.__path__, 'tff_hdp.'):
      if '.reference' not in info.name:
        importlib.import_module(info.name)
    from tff_hdp import fedhdp, privacy
    ours = fedhdp.build_fedhdp_process(
        user_code.PACKAGE, privacy.Preferences(levels=[0] * 6),
        config=fedhdp.FedHdpConfig(sampling_rate=0.5,
                                   clipped_count_stddev=1.0))
    # TFF's stock FedAvg, as its tutorials run it: no context manager.
    def model_fn():
      keras = tf.keras.Sequential([
          tf.keras.layers.InputLayer((4,)), tf.keras.layers.Dense(3)])
      return tff.learning.models.from_keras_model(
          keras, loss=tf.keras.losses.SparseCategoricalCrossentropy(
              from_logits=True),
          input_spec=(tf.TensorSpec((None, 4), tf.float32),
                      tf.TensorSpec((None,), tf.int32)))
    stock = tff.learning.algorithms.build_weighted_fed_avg(
        model_fn, client_optimizer_fn=tff.learning.optimizers.build_sgdm(0.1))
    rng = np.random.default_rng(0)
    clients = [tf.data.Dataset.from_tensor_slices(
        (rng.random((8, 4)).astype(np.float32),
         rng.integers(0, 3, 8).astype(np.int32))).batch(4) for _ in range(3)]
    output = stock.next(stock.initialize(), clients)
    print('STOCK', output.metrics['client_work']['train']['num_examples'])
    print('OURS', ours.round_num(ours.initialize()))
    print('WORKERS', *conftest.worker_children())
    ''')


def test_tffs_own_fedavg_runs_beside_ours_and_no_worker_outlives_it():
  """Issue 62: importing every public module and building one of our
  processes leaves a user's own TFF code running as before, with no context
  manager; the one worker (ours, started on first use) ends with the
  script, and nothing holds the script's pipe (a leaking worker would hang
  `communicate` until the timeout)."""
  env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='2')
  result = subprocess.run([sys.executable, '-c', _STOCK_FEDAVG_BESIDE_OURS],
                          cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
  assert result.returncode == 0, result.stderr[-2000:]
  lines = result.stdout.splitlines()
  assert lines[-3:-1] == ['STOCK 24', 'OURS 0'], result.stdout
  workers = [int(p) for p in lines[-1].split()[1:]]
  assert len(workers) == 1, lines[-1]  # Ours; TFF's never started.
  for pid in workers:  # Ended with the script.
    assert not os.path.exists(f'/proc/{pid}') or _is_zombie(pid), pid


def _is_zombie(pid: int) -> bool:
  try:
    with open(f'/proc/{pid}/stat') as f:
      return f.read().rsplit(')', 1)[1].split()[0] == 'Z'
  except OSError:
    return True


def test_a_context_the_user_installed_is_kept(tff_runtime):
  stack = tff.framework.get_context_stack()
  ours = stack.current

  class Mine(tff.framework.SyncContext):

    def invoke(self, comp, arg):
      del comp, arg
      return 'mine'

  mine = Mine()
  try:
    tff.framework.set_default_context(mine)
    tff_runtime.retire_tffs_default_context()  # What importing runtime does.
    assert stack.current is mine
    # TFF's own local C++ context (its default) is swapped for the managed
    # one (unused here, so it has started no worker).
    tff.framework.set_default_context(
        tff.backends.native.create_sync_local_cpp_execution_context())
    tff_runtime.retire_tffs_default_context()
    assert stack.current is tff_runtime._MANAGED  # pylint: disable=protected-access
  finally:
    tff.framework.set_default_context(ours)


def _keras(activation, loss):
  keras_model = tf.keras.Sequential([
      tf.keras.layers.InputLayer(user_code.SHAPE), tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(10, activation=activation)])
  return keras_model, tff.learning.models.functional_model_from_keras(
      keras_model, loss, (tf.TensorSpec((None,) + user_code.SHAPE, tf.float32),
                          tf.TensorSpec((None,), tf.int32)))


def _fedhdp_refusal(model=PACKAGE, privacy_levels=(0,) * 6, **fields):
  config = tff_hdp.fedhdp.FedHdpConfig(**{
      **dict(sampling_rate=0.5, clipped_count_stddev=1.0, noise_multiplier=1.0),
      **fields})
  with pytest.raises((ValueError, TypeError)) as error:
    tff_hdp.fedhdp.build_fedhdp_process(model,
                                        Preferences(levels=privacy_levels),
                                        config=config)
  return _one_line(error)


def test_bad_inputs_are_refused_in_one_line():
  good = models.as_model_spec(user_code.keras_functional(PACKAGE.init(0)))
  assert good.num_classes == 10  # The checks pass a model of logits.
  keras_model, mse = _keras(None, tf.keras.losses.MeanSquaredError())
  assert _fedhdp_refusal(mse).startswith(
      "the model's loss fails on integer labels [batch] and logits [batch, "
      'classes] (e.g. a mean squared error)')
  _, softmax = _keras('softmax', tf.keras.losses.SparseCategoricalCrossentropy(
      from_logits=True))
  assert _fedhdp_refusal(softmax).startswith('the model outputs probabilities')
  for wrong in (keras_model, lambda: None):  # A Keras model, a model_fn.
    assert 'tff.learning.models.functional_model_from_keras' in (
        _fedhdp_refusal(wrong))
  assert _fedhdp_refusal(
      privacy_levels=(0, 1) * 3, noise_multiplier=(0.5, 1.0)) == (
          'noise_multiplier must be non-increasing, one z_eff per level from '
          'level 0, the strictest, on; got (0.5, 1.0): it is refused, not '
          'sorted, since privacy_levels index into it')
  message = _fedhdp_refusal(sampling_rate=1.5)
  assert message.startswith('sampling_rate must be in (0, 1]')
  assert 'clients_per_round' not in message
  assert _fedhdp_refusal(clipped_count_stddev=None, noise_multiplier=1.5) == (
      'clipped_count_stddev=None gives z_b = 0.05 x round(qN) = 0.05 x 3 = '
      '0.15, which is too small for noise_multiplier 1.5 (z_eff must be < 2 '
      'z_b): set FedHdpConfig.clipped_count_stddev > 0.75, e.g. 1.5, or lower '
      'noise_multiplier')


@pytest.mark.parametrize('system_process', ['fedhdp'], indirect=True)
def test_ditto_step_on_an_empty_cohort_keeps_the_personal_models(
    tff_runtime, system_process):
  system, process = system_process
  del tff_runtime
  state = process.initialize()
  assert process.ditto_step(state, [], []) == []
  # next takes a noise-only step, with the metrics of any other round (none
  # says the cohort was empty).
  empty = process.next(state, [])
  full = process.next(state, _source(system, process).iterator().select())
  assert (tf.nest.map_structure(lambda _: 0, empty.metrics) ==
          tf.nest.map_structure(lambda _: 0, full.metrics))
  assert not np.array_equal(process.get_model_weights(empty.state).trainable[0],
                            process.get_model_weights(state).trainable[0])
