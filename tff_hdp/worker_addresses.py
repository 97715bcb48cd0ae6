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
"""TFF worker addresses: parsing and the readiness check, without TensorFlow.

Kept apart from `tff_hdp.distributed` (which imports TensorFlow and TFF) so
that a binary refuses a bad or unreachable `--tff_workers` in one line before
it loads TensorFlow.
"""

from typing import Sequence

import grpc

START_COMMAND = ('<site-packages>/tensorflow_federated/data/worker_binary '
                 '--port=PORT')


def parse_workers(spec: str) -> list[str]:
  """'host:port,host:port' -> ['host:port', ...], checked.

  Args:
    spec: Comma-separated worker addresses (IPv6 hosts in brackets,
      '[::1]:8000').

  Returns:
    The addresses, in order.

  Raises:
    ValueError: (one line) empty list, an entry that is not host:port with an
      integer port in [1, 65535], or an address given twice.
  """
  items = [s.strip() for s in spec.split(',')] if spec.strip() else []
  if not items:
    raise ValueError('tff_workers must list at least one host:port')
  addresses = []
  for item in items:
    host, sep, port = item.rpartition(':')
    if not sep or not host or not port.isdigit() or not (
        1 <= int(port) <= 65535):
      raise ValueError(f'tff_workers: {item!r} is not host:port with a port '
                       'in [1, 65535]')
    address = f'{host}:{int(port)}'
    if address in addresses:
      raise ValueError(f'tff_workers: {address} is listed twice')
    addresses.append(address)
  return addresses


def wait_ready(channel: grpc.Channel, address: str, timeout: float) -> None:
  """Returns once `channel` to `address` is ready; else closes it and raises
  ConnectionError (one line naming the address)."""
  try:
    grpc.channel_ready_future(channel).result(timeout=timeout)
  except grpc.FutureTimeoutError:
    channel.close()
    raise ConnectionError(
        f'tff_workers: no TFF worker answers at {address} after {timeout:g}s '
        f'(start one with {START_COMMAND})') from None


def check_workers(addresses: Sequence[str], timeout: float = 10.0) -> None:
  """Raises ConnectionError (one line naming it) unless every worker answers.

  For drivers that refuse bad input before writing anything.
  """
  for address in addresses:
    channel = grpc.insecure_channel(address)
    wait_ready(channel, address, timeout)
    channel.close()
