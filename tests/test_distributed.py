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
"""The shared distributed runtime: workers, stacks, and a lost worker."""

import collections
import signal
import threading

import numpy as np
import portpicker
import pytest
import tensorflow_federated as tff

from tff_hdp import distributed
from tff_hdp import runtime


@pytest.fixture(scope='module')
def context(two_workers):
  return distributed.create_mergeable_context(
      distributed.local_addresses(two_workers))


@tff.federated_computation(tff.FederatedType(np.float32, tff.CLIENTS))
def _federated_sum(values):
  return tff.federated_sum(values)


@pytest.mark.parametrize('spec,expected', [
    ('127.0.0.1:8000', ['127.0.0.1:8000']),
    (' a:1, b.example.org:65535 ', ['a:1', 'b.example.org:65535']),
    ('[::1]:9000', ['[::1]:9000']),
])
def test_parse_workers(spec, expected):
  assert distributed.parse_workers(spec) == expected


@pytest.mark.parametrize('spec,message', [
    ('', 'at least one'),
    ('localhost', 'not host:port'),
    (':80', 'not host:port'),
    ('h:0', 'not host:port'),
    ('h:70000', 'not host:port'),
    ('h:x', 'not host:port'),
    ('a:1,,b:2', 'not host:port'),
    ('a:1,a:1', 'listed twice'),
])
def test_parse_workers_refuses(spec, message):
  with pytest.raises(ValueError, match=message) as e:
    distributed.parse_workers(spec)
  assert '\n' not in str(e.value)


def test_unreachable_worker_is_named(two_workers):
  address = f'127.0.0.1:{portpicker.pick_unused_port()}'
  running = distributed.local_addresses(two_workers)
  distributed.check_workers(running, timeout=5)
  with pytest.raises(ConnectionError, match=address) as e:
    distributed.check_workers(running + [address], timeout=0.5)
  assert '\n' not in str(e.value)
  with pytest.raises(ConnectionError, match=address):
    distributed.create_mergeable_context([address], timeout=0.5)


def test_federated_sum_over_two_workers(context):
  with tff.framework.get_context_stack().install(context):
    assert _federated_sum([1.0, 2.0, 3.0, 4.0, 5.0]) == 15.0

  # The same sum as an explicit form counting its subrounds: one per worker.
  @tff.federated_computation(tff.FederatedType(np.float32, tff.CLIENTS))
  def up_to_merge(values):
    return tff.federated_zip(
        (tff.federated_sum(values), tff.federated_value(1, tff.SERVER)))

  @tff.tensorflow.computation((np.float32, np.int32), (np.float32, np.int32))
  def merge(a, b):
    return a[0] + b[0], a[1] + b[1]

  @tff.federated_computation(up_to_merge.type_signature.parameter,
                             up_to_merge.type_signature.result)
  def after_merge(values, merged):
    del values
    return merged

  form = tff.framework.MergeableCompForm(up_to_merge=up_to_merge, merge=merge,
                                         after_merge=after_merge)
  total, subrounds = context.invoke(form, [1.0, 2.0, 3.0, 4.0, 5.0])
  assert (total, subrounds) == (15.0, 2)


def _stack_form(item_type):
  """A form that stacks (item, position) per worker and concatenates."""
  positions_type = tff.FederatedType(np.int32, tff.CLIENTS)
  items_type = tff.FederatedType(item_type, tff.CLIENTS)

  @tff.federated_computation(items_type, positions_type)
  def up_to_merge(items, positions):
    return distributed.gather_stack(items, positions, item_type)

  merged_type = up_to_merge.type_signature.result.member
  concat = distributed.stack_computations(item_type)[2]

  @tff.tensorflow.computation(merged_type)
  def sort(stack):
    return distributed.sorted_by_position(stack)

  @tff.federated_computation(up_to_merge.type_signature.parameter,
                             up_to_merge.type_signature.result)
  def after_merge(arg, merged):
    del arg
    return merged, tff.federated_map(sort, merged)

  return tff.framework.MergeableCompForm(up_to_merge=up_to_merge,
                                         merge=concat,
                                         after_merge=after_merge)


def test_stacks_come_back_in_cohort_order(context):
  item_type = tff.types.to_type(collections.OrderedDict(
      a=(np.float32, (2,)), b=[(np.int32, ())]))
  n = 7
  items = [collections.OrderedDict(a=np.array([k, -k], np.float32),
                                   b=[np.int32(10 * k)]) for k in range(n)]
  # Positions are a permutation: rows must follow them, not the slices.
  positions = [3, 0, 6, 1, 5, 2, 4]
  stack, in_tf = context.invoke(_stack_form(item_type),
                                [items, [np.int32(p) for p in positions]])
  assert sorted(np.asarray(stack['position']).tolist()) == list(range(n))
  rows = distributed.in_cohort_order(stack, n)
  for position, row in enumerate(rows):
    k = positions.index(position)
    np.testing.assert_array_equal(row['a'], items[k]['a'])
    assert int(row['b'][0]) == 10 * k
  np.testing.assert_array_equal(in_tf['a'], np.stack([r['a'] for r in rows]))
  with pytest.raises(RuntimeError, match='expected 0..7'):
    distributed.in_cohort_order(stack, 8)


def _invoke_with_deadline(context, comp, arg, seconds=120.0):
  """context.invoke(comp, arg), or a test failure if it hangs (retries)."""
  outcome = {}

  def call():
    try:
      outcome['result'] = context.invoke(comp, arg)
    except BaseException as e:  # pylint: disable=broad-except
      outcome['error'] = e

  thread = threading.Thread(target=call, daemon=True)
  thread.start()
  thread.join(seconds)
  assert not thread.is_alive(), f'the call still runs after {seconds}s'
  if 'error' in outcome:
    raise outcome['error']
  return outcome['result']


def test_lost_worker_ends_the_call_in_one_line():
  """A killed worker: one line naming it, no retry; restarted, it serves."""
  worker = runtime.Worker()
  port = worker.port
  try:
    worker.wait_ready()
    address = distributed.local_addresses([worker])[0]
    context = distributed.create_mergeable_context([address])
    assert _invoke_with_deadline(context, _federated_sum, [1.0, 2.0]) == 3.0
    worker.process.send_signal(signal.SIGKILL)
    worker.process.wait()
    with pytest.raises(distributed.WorkerLostError, match=address) as e:
      _invoke_with_deadline(context, _federated_sum, [1.0, 2.0])
    assert '\n' not in str(e.value)
    assert 'resume from the last checkpoint' in str(e.value)
    worker.stop()
    worker = runtime.Worker(port=port)  # Back on the same port.
    worker.wait_ready()
    again = distributed.create_mergeable_context([address])
    assert _invoke_with_deadline(again, _federated_sum, [4.0, 5.0]) == 9.0
  finally:
    worker.stop()


@pytest.mark.parametrize('n,k,sizes', [
    (7, 2, [3, 4]), (5, 3, [1, 2, 2]), (1, 2, [1]), (4, 4, [1, 1, 1, 1]),
    (0, 2, [0]), (10, 1, [10])])
def test_cut_is_contiguous_and_even(n, k, sizes):
  parts = distributed.cut(n, k)
  assert [p.stop - p.start for p in parts] == sizes
  assert parts[0].start == 0 and parts[-1].stop == n
  assert all(a.stop == b.start for a, b in zip(parts, parts[1:]))
