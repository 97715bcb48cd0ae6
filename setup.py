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
"""Installs the `tff_hdp` library.

Use `make install` rather than `pip install .` directly: TensorFlow Federated
0.87 pins jax/jaxlib 0.4.14, which PyPI no longer serves, so it has to be
installed with `--no-deps` after `requirements.txt` (see README).

The `tff_hdp` package is installed with the papers' reference tables each
system reads (`tff_hdp/<system>/reference/*.csv`, package data read with
`importlib.resources`), so a non-editable install works from any directory
(tests/test_install.py).

The checkout's top-level folders `datasets/` (the loaders) and `run_scripts/`
(the binaries and the helpers they share) stay where users expect them, but
are installed as the subpackages `tff_hdp.datasets` and `tff_hdp.run_scripts`
(`package_dir` below): code imports `from tff_hdp import datasets` and
`from tff_hdp.run_scripts import cli`, and `python run_scripts/run_fedhdp.py`
works from any directory with no `sys.path` edit. The import names are chosen
so that this distribution installs no top-level name but `tff_hdp`:

* `datasets` as a top-level package would collide with Hugging Face's
  `datasets` distribution (whichever comes first on `sys.path` wins, and a
  user with it installed gets the wrong one); a sibling top-level name such
  as `tff_hdp_datasets` would avoid that but add a second top-level name for
  this distribution to own. Under `tff_hdp` nothing can collide, and the
  callers keep their `datasets.load_fedhdp_data(...)`.
* `run_scripts` as a top-level package would be a generic name too (PyPI's
  `run-scripts` distribution is one candidate for a clash), so the binaries'
  shared helpers are `tff_hdp.run_scripts.*` for the same reason.

The checkout's top-level `benchmarks/` (the scripts that time things, and
their `timing` helpers) is not installed, as TFF, Opacus and pfl-research keep
theirs: the installed package holds what users import. The benchmarks run
from the checkout, `python benchmarks/<name>.py`, and import the binaries'
shared `tff_hdp.run_scripts.cli` from the install.

Editable installs (`make install`: `pip install -e .`) map both folders through
setuptools' PEP 660 editable finder, which honours `package_dir` (setuptools
>= 64; the Python 3.11 venv that `make install` builds comes with 65.5).
Non-editable installs copy them into `tff_hdp/datasets/` and
`tff_hdp/run_scripts/`. Both folders are flat (no subpackages).
"""

import setuptools

# Import name: folder of the checkout.
_FOLDERS = {
    'tff_hdp.datasets': 'datasets',
    'tff_hdp.run_scripts': 'run_scripts',
}

LONG_DESCRIPTION = """\
Federated learning where clients want different privacy, on TensorFlow
Federated 0.87: reference implementations of three systems, one subpackage
each, sharing models, privacy accounting, data, checkpoints and tables.

* `tff_hdp.fedhdp`: FedHDP, from N. Aldaghri, H. Mahdavifar and A. Beirami,
  "Federated Learning with Heterogeneous Differential Privacy"
  (arXiv:2110.15252; first published as "FeO2: Federated Learning with
  Opt-Out Differential Privacy").
* `tff_hdp.robust_hdp`: Robust-HDP, from S. Malekmohammadi, Y. Yu and Y. Cao,
  "Noise-Aware Algorithm for Heterogeneous Differentially Private Federated
  Learning", ICML 2024.
* `tff_hdp.udp`: UDP-Alg, from V. Nemala, P. Lai and N. Phan, "Differential
  Privacy in HyperNetworks for Personalized Federated Learning", CIKM 2023.

How to cite them and this software: CITATION.cff.
"""

setuptools.setup(
    name='tff_hdp',
    version='0.1.0',
    description=('Federated learning with heterogeneous differential privacy '
                 'on TensorFlow Federated: FedHDP (Aldaghri et al.), '
                 'Robust-HDP (Malekmohammadi et al., ICML 2024) and UDP-Alg '
                 '(Nemala et al., CIKM 2023).'),
    long_description=LONG_DESCRIPTION,
    long_description_content_type='text/markdown',
    license='Apache-2.0',
    python_requires='>=3.9,<3.12',
    packages=(setuptools.find_packages(include=['tff_hdp', 'tff_hdp.*']) +
              list(_FOLDERS)),
    # The checkout's `datasets/` and `run_scripts/`, as subpackages of tff_hdp
    # (see the module docstring for why these names).
    package_dir=_FOLDERS,
    # Each system's paper tables, read with importlib.resources.
    package_data={
        'tff_hdp.fedhdp': ['reference/*.csv'],
        'tff_hdp.robust_hdp': ['reference/*.csv'],
        'tff_hdp.udp': ['reference/*.csv'],
    },
    # The pinned versions live in requirements.txt; TFF is installed apart.
    install_requires=[],
)
