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
"""The run config every system's config shares (tff_hdp/run_config.py): its
one validation, the records it leaves unchanged, and the binaries' shared
flags, whose defaults are the configs'."""

import dataclasses
import glob
import json
import os
import subprocess
import sys

import pytest

from tff_hdp import checkpoint
from tff_hdp import round_executor
from tff_hdp import run_config
from tff_hdp.fedhdp import config as fedhdp_config
from tff_hdp.robust_hdp import config as robust_hdp_config
from tff_hdp.udp import config as udp_config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = ('rounds', 'eval_every', 'seed', 'mechanism_seed', 'delta',
          'accountant', 'backend', 'tff_workers')


def _valid(config_class):
  """A valid config of `config_class` (Robust-HDP's needs its clients)."""
  if config_class is robust_hdp_config.RobustHdpConfig:
    return config_class(epsilons=(1.0, 2.0), batch_sizes=(16, 16))
  return config_class()


CONFIGS = (fedhdp_config.FedHdpConfig, robust_hdp_config.RobustHdpConfig,
           udp_config.UdpConfig)
# The shared fields' defaults each system gives (its paper's).
SYSTEM_DEFAULTS = {
    fedhdp_config.FedHdpConfig: dict(rounds=500, eval_every=10, delta=1e-4,
                                     backend='tff'),
    robust_hdp_config.RobustHdpConfig: dict(rounds=200, eval_every=10,
                                            delta=1e-4, backend='tff'),
    udp_config.UdpConfig: dict(rounds=500, eval_every=10, delta=1e-5,
                               backend='direct'),
}


def test_the_three_configs_inherit_the_run_config():
  assert [f.name for f in dataclasses.fields(run_config.RunConfig)] == list(
      SHARED)
  for config_class in CONFIGS:
    assert issubclass(config_class, run_config.RunConfig)
    config = _valid(config_class)
    assert {f: getattr(config, f) for f in SHARED} == dict(
        seed=0, mechanism_seed=None, accountant='rdp', tff_workers=(),
        **SYSTEM_DEFAULTS[config_class])
    assert config.run_fields() == {f: getattr(config, f) for f in SHARED}
    # One validation of the shared fields, RunConfig's.
    assert config_class.validate_run is run_config.RunConfig.validate_run
  # The shared fields a system has no default for are its own to give.
  with pytest.raises(TypeError, match='rounds'):
    run_config.RunConfig(eval_every=1, delta=0.1, backend='tff')
  with pytest.raises(TypeError):  # Keyword-only: no field by position.
    udp_config.UdpConfig(500)  # pylint: disable=too-many-function-args


@pytest.mark.parametrize('field,value,message', [
    ('rounds', 0, r'^rounds must be >= 1, got 0$'),
    ('eval_every', 0, r'^eval_every must be >= 1, got 0$'),
    ('seed', -1, r'^seed must be an integer >= 0, got -1$'),
    ('seed', 1.5, r'^seed must be an integer >= 0, got 1.5$'),
    ('mechanism_seed', -2, r'^mechanism_seed must be None .* got -2$'),
    ('mechanism_seed', True, r'^mechanism_seed must be None .* got True$'),
    ('delta', 0.0, r'^delta must be in \(0, 1\), got 0.0$'),
    ('delta', 1.0, r'^delta must be in \(0, 1\), got 1.0$'),
    ('accountant', 'prv', r"^accountant must be one of rdp, pld, got 'prv'$"),
    ('backend', 'gpu', r"^backend must be one of tff, direct, got 'gpu'$"),
])
def test_one_validation_one_line_naming_the_field(field, value, message):
  base = run_config.RunConfig(rounds=3, eval_every=1, delta=1e-5,
                              backend='direct')
  base.validate_run()
  bad = dataclasses.replace(base, **{field: value})
  with pytest.raises(ValueError, match=message):
    bad.validate_run()
  # Each system's validate checks them the same way, with that one check.
  for config_class in CONFIGS:
    with pytest.raises(ValueError, match=message):
      dataclasses.replace(_valid(config_class), **{field: value}).validate()


def test_workers_need_the_tff_backend():
  for config_class in CONFIGS:
    config = dataclasses.replace(_valid(config_class), backend='direct',
                                 tff_workers=('localhost:8000',))
    with pytest.raises(ValueError, match=r"^tff_workers needs backend tff "
                       r"\(TFF workers run TFF computations\), got backend "
                       r"'direct'$"):
      config.validate()
    dataclasses.replace(config, backend='tff').validate()


def test_the_round_backend_of_each_config():
  # What the three systems' executors are built for: 'tff' with workers is
  # the distributed round.
  for config_class in CONFIGS:
    config = _valid(config_class)
    assert dataclasses.replace(
        config, backend='direct').round_backend == round_executor.DIRECT
    assert dataclasses.replace(
        config, backend='tff').round_backend == round_executor.TFF
    assert dataclasses.replace(
        config, backend='tff',
        tff_workers=('127.0.0.1:1',)).round_backend == (
            round_executor.DISTRIBUTED)


# checkpoint.identity of each config's defaults, computed before the shared
# fields moved to RunConfig: a run recorded then is the same run now.
DEFAULT_IDENTITIES = {
    fedhdp_config.FedHdpConfig: (
        '{"accountant": "rdp", "algorithm": "fedhdp", "backend": "tff", '
        '"batch_size": 20, "clients_per_round": 100, "clip_learning_rate": '
        '0.2, "clipped_count_stddev": null, "delta": 0.0001, "denominators": '
        '"expected", "ditto": true, "eval_every": 10, "initial_clip": 0.5, '
        '"lambda_np": 0.05, "lambda_p": 0.05, "learning_rate": 0.5, '
        '"level_fractions": [], "local_epochs": 25, "lr_decay_factor": 0.9, '
        '"lr_decay_rounds": 50, "mechanism_seed": null, "model": "fc", '
        '"noise_multiplier": 1.5, "optout_fraction": 0.05, '
        '"personal_learning_rate": 0.5, "poisson_sampling": true, '
        '"privacy_levels": null, "ratio": 0.1, "rounds": 500, '
        '"sampling_rate": 0.05, "seed": 0, "skewed_optout": false, '
        '"target_quantile": 0.5}'),
    robust_hdp_config.RobustHdpConfig: (
        '{"accountant": "rdp", "algorithm": "robust_hdp", "backend": "tff", '
        '"batch_sizes": [], "block_rows": null, "clip": 3.0, "clip_only": '
        'false, "delta": 0.0001, "distribution": "", "epsilons": [], '
        '"eval_every": 10, "first_round_only": false, "learning_rate": 0.1, '
        '"local_epochs": 1, "mechanism_seed": null, "model": "cnn5", '
        '"pfa_rank": 1, "poisson": true, "rounds": 200, '
        '"rpca_max_iterations": 1000, "rpca_method": "ialm", "seed": 0}'),
    udp_config.UdpConfig: (
        '{"accountant": "rdp", "algorithm": "udp", "backend": "direct", '
        '"batch_size": 64, "clip": 0.1, "delta": 1e-05, "embedding_dim": '
        'null, "embedding_learning_rate": 0.01, "eval_every": 10, "hidden": '
        '100, "hidden_layers": 3, "hyper_learning_rate": 0.01, '
        '"local_learning_rate": 0.001, "local_steps": 50, "mechanism_seed": '
        'null, "noise_multiplier": 5.0, "rounds": 500, "sample_cap": null, '
        '"sampling_rate": 0.1, "seed": 0, "target": "lenet"}'),
}
# The fields the identity leaves out at these values.
LEFT_OUT = {fedhdp_config.FedHdpConfig: {'tff_workers', 'ditto_init'},
            robust_hdp_config.RobustHdpConfig: {'tff_workers',
                                                'calibration_rounds'},
            udp_config.UdpConfig: {'tff_workers'}}


@pytest.mark.parametrize('config_class', CONFIGS,
                         ids=lambda c: c.__name__)
def test_the_defaults_are_recorded_as_before(config_class):
  fields = dataclasses.asdict(config_class())
  assert checkpoint.identity(fields) == DEFAULT_IDENTITIES[config_class]
  assert set(fields) == set(json.loads(DEFAULT_IDENTITIES[config_class])) | (
      LEFT_OUT[config_class])


def _config_class(recorded):
  if 'ditto' in recorded:
    return fedhdp_config.FedHdpConfig
  if 'epsilons' in recorded:
    return robust_hdp_config.RobustHdpConfig
  return udp_config.UdpConfig


def _tuples(value):
  """A JSON value as the config holds it (lists as tuples)."""
  return tuple(map(_tuples, value)) if isinstance(value, list) else value


def test_every_kept_record_rebuilds_to_the_same_identity():
  # docs/runs/: FedHDP's records (33 fields, from before ditto_init, and
  # 34), Robust-HDP's (23, from before calibration_rounds, and 24).
  systems = set()
  for path in sorted(glob.glob(os.path.join(REPO, 'docs', 'runs', '**',
                                            'results.json'), recursive=True)):
    with open(path) as f:
      runs = json.load(f)['runs']
    for run in runs:
      recorded = run['config']
      config_class = _config_class(recorded)
      config = config_class(**{k: _tuples(v) for k, v in recorded.items()})
      config.validate_run()
      assert checkpoint.identity(dataclasses.asdict(config)) == (
          checkpoint.identity(recorded)), path
      assert set(recorded) <= set(dataclasses.asdict(config)), path
      systems.add(config_class)
  assert {fedhdp_config.FedHdpConfig,
          robust_hdp_config.RobustHdpConfig} <= systems


# Defines one binary's flags (its flags module), prints their defaults, then
# parses a command line and prints the RunConfig the binary builds from it.
_FLAGS_SCRIPT = """
import json, sys
from absl import flags
from tff_hdp.run_scripts import run_flags
from tff_hdp.run_scripts import {module} as system_flags
names = {shared!r}
defaults = {{n: flags.FLAGS[n].default for n in names}}
flags.FLAGS(['binary', '--rounds=7', '--seed=4', '--mechanism_seed=3',
             '--accountant=pld', '--backend=tff', '--tff_workers=h:1,h:2'])
shared = run_flags.shared_config(system_flags.RUN).run_fields()
owner = {{n: flags.FLAGS.find_module_defining_flag(n) for n in names}}
print(json.dumps([defaults, shared, owner]))
"""


@pytest.mark.parametrize('module,config_class,from_preset', [
    ('fedhdp_flags', fedhdp_config.FedHdpConfig,
     ('rounds', 'eval_every', 'delta')),
    ('robust_hdp_flags', robust_hdp_config.RobustHdpConfig, ()),
    ('udp_flags', udp_config.UdpConfig, ('rounds', 'eval_every')),
])
def test_each_binarys_shared_flags_have_its_configs_defaults(
    module, config_class, from_preset):
  code = _FLAGS_SCRIPT.format(module=module, shared=SHARED)
  result = subprocess.run([sys.executable, '-c', code], cwd=REPO,
                          capture_output=True, text=True, timeout=120,
                          check=False)
  assert result.returncode == 0, result.stderr
  defaults, shared, owner = json.loads(result.stdout.splitlines()[-1])
  config = _valid(config_class)
  expected = {n: None if n in from_preset else getattr(config, n)
              for n in SHARED}
  expected['tff_workers'] = list(expected['tff_workers'])
  assert defaults == expected
  # One definition of them all, run_flags's, shared by the three binaries.
  assert set(owner.values()) == {'tff_hdp.run_scripts.run_flags'}
  # The RunConfig the flags give; a flag left to the preset stays None
  # without one (the binary passes its dataset's).
  assert shared == dict(
      rounds=7, eval_every=expected['eval_every'], seed=4, mechanism_seed=3,
      delta=expected['delta'], accountant='pld', backend='tff',
      tff_workers=['h:1', 'h:2'])
