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
"""What a UDP-Alg variant is: one object that says what its round does.

Paper 004's Algorithm 1 clips each sampled user's hypernetwork gradient to
S, weighs it by w_u and adds Gaussian noise to the estimator; its ablations
keep the clip and drop the noise, or drop both; pFedHN, the non-private
method it builds on, takes one user a step, unweighted. A variant declares
which, as a frozen dataclass registered from its own file:

    @dataclasses.dataclass(frozen=True)
    class Mine(algorithm.Algorithm):
      name = 'mine'
      label = 'Mine'
      clips = True

    algorithm_registry.register(Mine())

The config, the builder, the driver, the tables and the claims read these
attributes; nothing else in the package names a variant. TensorFlow-free.
"""

import dataclasses

from tff_hdp import registry

ROLES = registry.ROLES


@dataclasses.dataclass(frozen=True)
class Algorithm:
  """A UDP-Alg variant (module doc).

  Class attributes:
    name: Its name in the registry, `--algorithm` and results.
    label: Its name in tables and figures.
    role: What it is in a comparison (`registry.ROLES`).
    private: Whether its round adds noise and is accounted (then it also
      clips).
    clips: Whether each user's gradient is clipped to S and weighed by w_u
      through the estimator.
    one_user_per_step: pFedHN's loop: one user a step, unweighted (the
      driver's; `build_udp_process` runs Poisson cohorts only).
  """
  name = ''
  label = ''
  role = 'baseline'
  private = False
  clips = False
  one_user_per_step = False
