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
"""Paper 003's published Table 2, and the setting it was computed in.

Table 2 prints, for FMNIST with E = 200 rounds and each privacy distribution
(Dist1-Dist9), the noise power sum_i w_i^2 sigma_i^2 / (p eta_l^2) of each
rule's aggregate (`TABLE_RULES`, the table's rows). The values are
transcribed in `tff_hdp/robust_hdp/reference/paper003_table2.csv` (package
data, read with `importlib.resources`), numbers as printed; `SETTING` is the
setting they were computed in. Our computation of the same entries is
`noise_power`; run_scripts/table2_robust_hdp.py prints both. TensorFlow-free.
"""

import csv
from importlib import resources
import pathlib
from typing import Optional

# Package data (setup.py's package_data), found wherever tff_hdp is installed.
REFERENCE_CSV = (resources.files('tff_hdp.robust_hdp') / 'reference' /
                 'paper003_table2.csv')
TABLE_RULES = ('weiavg', 'dpfedavg', 'min_epsilon', 'robust_hdp', 'oracle')
# Table 2's setting: FMNIST, 20 clients of 2,400 training images, E = 200,
# K = 1, and the authors' code defaults c = 3, eta_l = 0.1, delta = 1e-4; p
# of the cnn5 model on 28 x 28 images.
SETTING = dict(num_clients=20, num_examples=2400, rounds=200, local_epochs=1,
               clip=3.0, learning_rate=0.1, delta=1e-4, num_parameters=28938)


def load_reference(path: Optional[str] = None
                   ) -> dict[str, dict[str, float]]:
  """{rule: {distribution: noise power}} as the paper prints it (from
  `path`, default the package's `REFERENCE_CSV`)."""
  source = REFERENCE_CSV if path is None else pathlib.Path(path)
  with source.open(newline='', encoding='utf-8') as f:
    return {row.pop('algorithm'): {k: float(v) for k, v in row.items()}
            for row in csv.DictReader(f)}
