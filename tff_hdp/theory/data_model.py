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
"""The data model of paper 001's theory: how each client's data is drawn.

Paper 001, Section 3 and Appendix A.1, eqs. (6)-(7): client j's parameter
and observations are

  phi_j = phi + p_j,         p_j ~ N(0, tau^2 I_d)                    (7)
  x_j = F_j phi_j + v_j,     v_j ~ N(0, beta^2 I_{n_s}),
                             beta^2 = alpha^2 n_s                     (6)

so (alpha^2, tau^2) is what every closed form and simulator of
`tff_hdp.theory` takes about the data, and sigma_c^2 = alpha^2 + tau^2 the
variance of a client's local estimate around phi (`server_aggregation`).
"""

from typing import NamedTuple


class DataModel(NamedTuple):
  """alpha^2 and tau^2 of eqs. (6)-(7), checked where they are used.

  Attributes:
    alpha2: alpha^2 = beta^2 / n_s > 0, the local estimate's variance per
      coordinate around phi_j.
    tau2: tau^2 >= 0, the variance of phi_j around phi (the data
      heterogeneity).
  """
  alpha2: float
  tau2: float


def check_data_model(data) -> DataModel:
  """`data`, if it is a `DataModel`, or a one-line TypeError."""
  if not isinstance(data, DataModel):
    raise TypeError('data must be a tff_hdp.theory.DataModel(alpha2, tau2), '
                    f'got {type(data).__name__}')
  return data
