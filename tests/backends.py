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
"""A driver's config on each of the three backends, for the tests that run
every system on every one (tests/test_empty_cohorts.py,
tests/test_round_conformance.py)."""

import dataclasses

from tff_hdp import distributed

BACKENDS = ('direct', 'tff', 'distributed')


def executor_workers(backend: str, request) -> tuple[str, ...]:
  """What a round executor on `backend` ('direct', 'tff' or 'distributed',
  `tff_hdp.round_executor.BACKENDS`) needs of the test session: our TFF
  context unless direct, and the addresses of the session's two local
  workers for 'distributed' (returned; none otherwise)."""
  if backend == 'direct':
    return ()
  request.getfixturevalue('tff_runtime')
  if backend != 'distributed':
    return ()
  return tuple(distributed.local_addresses(
      request.getfixturevalue('two_workers')))


def on_backend(config, backend: str, request):
  """`config` on `backend`: 'direct', 'tff' (our TFF context) or
  'distributed' (TFF over the session's two local workers)."""
  if backend == 'direct':
    return dataclasses.replace(config, backend='direct')
  request.getfixturevalue('tff_runtime')
  workers = ()
  if backend == 'distributed':
    workers = tuple(distributed.local_addresses(
        request.getfixturevalue('two_workers')))
  return dataclasses.replace(config, backend='tff', tff_workers=workers)
