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

Only the `tff_hdp` package is installed. `datasets/` and `run_scripts/` are
used from the repository checkout: a top-level package called `datasets` would
collide with the Hugging Face distribution of that name.
"""

import setuptools

setuptools.setup(
    name='tff_hdp',
    version='0.1.0',
    description=('Federated learning with heterogeneous differential privacy '
                 '(FedHDP) on TensorFlow Federated.'),
    license='Apache-2.0',
    python_requires='>=3.9,<3.12',
    packages=setuptools.find_packages(include=['tff_hdp', 'tff_hdp.*']),
    # The pinned versions live in requirements.txt; TFF is installed apart.
    install_requires=[],
)
