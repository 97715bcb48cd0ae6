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
"""Non-Private (paper 001, Section 5): FedAvg of every client, no clipping,
no noise; the reference a private run is compared with."""

import dataclasses

from tff_hdp.fedhdp import algorithm
from tff_hdp.fedhdp import algorithm_registry


@algorithm_registry.register
@dataclasses.dataclass(frozen=True)
class NonPrivate(algorithm.Algorithm):
  """Everyone in the opt-outs' group, unclipped, unnoised."""
  name = 'non_private'
  label = 'Non-Private'
  role = 'reference'
  noised = False
  one_group = True

  def combine(self, private, non_private):
    del private
    return (dataclasses.replace(non_private, clip=False),)

  def assign(self, opted_out, levels, num_levels):
    return algorithm.single_group(opted_out)
