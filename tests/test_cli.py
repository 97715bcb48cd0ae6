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
"""The binaries' shared edges (run_scripts/cli.py): --algorithm lists, an
--output_dir that is a file, and an --output_dir a live run holds."""

import fcntl
import os
import subprocess
import sys

import pytest

from tests import binaries
from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import subprocess_jobs
from tff_hdp.run_scripts import output_dirs

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_algorithm_lists():
  allowed = ('a', 'b', 'c')
  assert cli.algorithms('all', allowed) == allowed
  assert cli.algorithms('c,a', allowed) == ('c', 'a')
  for bad in ('d', 'a,a', 'a,,b'):
    with pytest.raises(cli.UsageError, match='give all, or distinct names'):
      cli.algorithms(bad, allowed)


def test_output_dir_that_is_a_file(tmp_path):
  path = tmp_path / 'results'
  path.write_text('keep me')
  with pytest.raises(cli.UsageError, match='is a file, not a directory'):
    output_dirs.check_output_dir(str(path))
  with pytest.raises(cli.UsageError, match='cannot be written'):
    output_dirs.check_output_dir(str(path / 'below'))  # Its parent is the file.
  assert path.read_text() == 'keep me'
  output_dirs.check_output_dir(str(tmp_path / 'new' / 'deeper'))  # Created later.


def _run(script, args):
  return subprocess.run(
      [sys.executable, os.path.join(REPO, 'run_scripts', script), *args],
      capture_output=True, text=True, timeout=300, cwd=REPO, check=False)


@pytest.mark.parametrize('script', ['run_fedhdp.py', 'run_robust_hdp.py',
                                    'run_udp.py', 'audit_fedhdp.py',
                                    'audit_udp.py'])
def test_binaries_refuse_a_file_as_output_dir(tmp_path, script):
  path = tmp_path / 'results'
  path.write_text('keep me')
  # Refused before TensorFlow loads: in binaries.run_before_tensorflow's
  # kept process.
  result = binaries.run_before_tensorflow(script, [f'--output_dir={path}'])
  assert result.returncode == 2, result.stderr
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1 and 'is a file, not a directory' in lines[0], (
      result.stderr)
  assert path.read_text() == 'keep me'


def test_a_directory_in_use_is_refused_then_free_once_its_holder_ends(
    tmp_path):
  out = tmp_path / 'out'
  out.mkdir()
  args = ['--dataset=digits', '--algorithm=robust_hdp', '--model=fc',
          '--rounds=1', '--num_clients=2', '--epsilons=2,3',
          '--batch_sizes=16,16', '--backend=direct', '--noprogress',
          f'--output_dir={out}']
  with open(out / '.lock', 'a+') as holder:  # A live run's lock.
    fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    # Refused before TensorFlow loads (the kept process of
    # binaries.run_before_tensorflow).
    result = binaries.run_before_tensorflow('run_robust_hdp.py', args)
  assert result.returncode == 2, result.stderr
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1 and 'is in use by a running run' in lines[0], (
      result.stderr)
  assert not (out / 'results.json').exists()
  # The holder has ended (its file closed, its .lock left behind): the
  # directory is free, the binary's claim on it (above, refused) succeeds.
  # That the same command then runs, in a folder whose holder was killed,
  # is tests/fedhdp/test_run_fedhdp.py's
  # test_killed_run_resumes_to_the_uninterrupted_run_of_its_key.
  assert (out / '.lock').exists()
  output_dirs.claim_output_dir(str(out))
  assert (out / '.lock').read_text() == f'pid {os.getpid()}'


def test_a_lost_worker_ends_the_binary_in_one_line(capsys):
  from tff_hdp import distributed  # pylint: disable=g-import-not-at-top

  def main(argv):
    del argv
    raise distributed.WorkerLostError('tff_workers: the TFF worker at h:1 '
                                      'stopped answering')

  with pytest.raises(SystemExit) as e:
    cli.run_main(main)(['binary'])
  assert e.value.code == cli.EXIT_RUNTIME == 1
  err = capsys.readouterr().err
  assert err.count('\n') == 1 and 'the TFF worker at h:1' in err

  def other(argv):  # Any other ConnectionError is not ours to hide.
    del argv
    raise ConnectionError('elsewhere')

  with pytest.raises(ConnectionError, match='elsewhere'):
    cli.run_main(other)(['binary'])


@pytest.mark.parametrize('script,listed', [
    ('run_fedhdp.py', ['--rounds', '--backend', '--output_dir', '--seed']),
    ('run_robust_hdp.py', ['--rounds', '--backend', '--output_dir']),
    ('run_udp.py', ['--rounds', '--backend', '--output_dir', '--accountant']),
    ('audit_fedhdp.py', ['--canaries_per_group', '--rounds', '--observe',
                         '--statistic', '--output_dir']),
    ('audit_robust_hdp.py', ['--canaries', '--rounds', '--statistic',
                             '--output_dir']),
    ('audit_udp.py', ['--canaries', '--rounds', '--observe', '--statistic',
                      '--output_dir']),
    ('privacy_report.py', ['--mechanism', '--accountant']),
])
def test_help_lists_the_system_and_shared_flags(script, listed):
  # absl's --help lists a binary's own flags; the system's flag module and
  # the shared ones (run_scripts/cli.py) are adopted as key flags. It ends
  # before TensorFlow loads: in the process binaries.run_before_tensorflow
  # keeps, as `python <script> --help` runs it.
  result = binaries.run_before_tensorflow(script, ['--help'])
  defined = {line.split(':')[0].strip().replace('[no]', '')
             for line in result.stdout.splitlines()
             if line.startswith('  --')}
  assert set(listed) <= defined, result.stdout


def test_runs_at_a_time_share_the_cores(tmp_path, monkeypatch):
  # A sweep's --parallel=k: each run's TensorFlow gets the cores / k threads
  # (one run keeps TensorFlow's default), through its environment.
  monkeypatch.setattr(os, 'sched_getaffinity', lambda _: {0, 1, 2, 3},
                      raising=False)
  assert subprocess_jobs.threads_per_job(1) is None
  assert [subprocess_jobs.threads_per_job(k) for k in (2, 3, 4, 8)] == [2, 1, 1, 1]
  # Runs at a time share a GPU too: each grows its memory as it needs it.
  monkeypatch.delenv('TF_FORCE_GPU_ALLOW_GROWTH', raising=False)
  names = ('TF_NUM_INTRAOP_THREADS', 'TF_NUM_INTEROP_THREADS',
           'TF_FORCE_GPU_ALLOW_GROWTH')
  show = [sys.executable, '-c', 'import os; print(*(os.environ.get(n) for n '
          f'in {names!r}))']
  assert subprocess_jobs.run_logged(show, str(tmp_path / 'a'), threads=2) == 0
  assert subprocess_jobs.run_logged(show, str(tmp_path / 'b')) == 0
  assert (tmp_path / 'a' / 'log.txt').read_text() == '2 2 true\n'
  unset = ' '.join(str(os.environ.get(n)) for n in names) + '\n'
  assert (tmp_path / 'b' / 'log.txt').read_text() == unset
  # A setting of the user's is kept.
  monkeypatch.setenv('TF_FORCE_GPU_ALLOW_GROWTH', 'false')
  assert subprocess_jobs.run_logged(show, str(tmp_path / 'c'), threads=1) == 0
  assert (tmp_path / 'c' / 'log.txt').read_text() == '1 1 false\n'
