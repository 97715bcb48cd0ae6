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
"""Runs that resume: each named config trained into its own folder of
--output_dir, a finished one (its results.json and the same config) reused,
the results and the audit written once every run has finished.
"""

import dataclasses
import json
import os
import sys
from typing import Any, Callable, Optional, Sequence

from tff_hdp.run_scripts import cli
from tff_hdp.run_scripts import output_dirs
from tff_hdp.run_scripts import run_flags


def train_each(run: run_flags.RunFlags, named_configs, train: Callable[..., dict],
               data, describe: Callable[[dict], str],
               extra_arguments: Optional[Callable[[Any, str], dict]] = None
               ) -> list[dict]:
  """What every `run_<system>.py` does once its input is checked: claims the
  output directory, then trains each (name, config) on `data` with its
  TensorBoard summaries under `tensorboard/<name>/` and its checkpoints
  under `checkpoints/<name>/` (a 0700 folder; resuming from them), in our
  TFF context (`_tff_context`), printing `<name>: <describe(record)>` after
  each.

  The checkpoints are kept until `train_and_write` has written results.json:
  a command of several runs killed after the first resumes each exactly. A
  run that results.json already holds, finished with the same configuration
  and without a checkpoint left, is not run again: its record is reused.

  Args:
    run: The binary's `run_flags.define_run_flags`.
    named_configs: (name, config) pairs.
    train: The system's `training.train`.
    data: The federated data.
    describe: A record's one-line summary.
    extra_arguments: (config, name) -> more keyword arguments of `train`.

  Returns:
    The records, each with its 'name'.
  """
  output_dir = run.output_dir.value
  output_dirs.claim_output_dir(output_dir)
  finished = _finished_records(output_dir)
  reused = {name: _reusable(finished.get(name), name, config, output_dir)
            for name, config in named_configs}
  run_flags.mechanism_notice(run.mechanism_seed.value)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tff_hdp import checkpoint  # pylint: disable=g-import-not-at-top
  records = []
  with _tff_context(config for _, config in named_configs):
    for name, config in named_configs:
      if reused[name] is not None:
        records.append(reused[name])
        print(f'{name}: {describe(reused[name])} (finished: from '
              'results.json)', flush=True)
        continue
      checkpoint.make_private_dir(os.path.join(output_dir, CHECKPOINTS))
      checkpoint_dir = os.path.join(output_dir, CHECKPOINTS, name)
      writer = tf.summary.create_file_writer(
          os.path.join(output_dir, 'tensorboard', name))
      try:
        record = train(
            config, data, summary_writer=writer, progress=run.progress.value,
            checkpoint_dir=checkpoint_dir,
            checkpoint_every=run.checkpoint_every.value,
            keep_checkpoints=True,  # Until results.json is written.
            **(extra_arguments(config, name) if extra_arguments else {}))
      except checkpoint.CheckpointMismatchError as e:
        raise cli.UsageError(str(e)) from None
      finally:
        writer.close()
      record['name'] = name
      records.append(record)
      print(f'{name}: {describe(record)}', flush=True)
  return records


def _tff_context(configs):
  """Our TFF context (`runtime.local_cpp_context`, its worker started now)
  if any of `configs` runs on the TFF backend; else
  `runtime.on_demand_context()`: the direct backend's rounds, evaluation and
  checkpoints run no TFF computation, so runs on it alone start no worker
  (a second's wait for it to answer, in every command)."""
  from tff_hdp import runtime  # pylint: disable=g-import-not-at-top
  if any(config.backend == 'tff' for config in configs):
    return runtime.local_cpp_context()
  return runtime.on_demand_context()


# A binary's checkpoints: <output_dir>/CHECKPOINTS/<run>/.
CHECKPOINTS = 'checkpoints'


def check_finished(run: run_flags.RunFlags, named_configs) -> None:
  """Refuses, in one line, a (name, config) of `named_configs` that
  --output_dir's results.json holds finished under another configuration
  (`train_each` reuses one of the same). A binary calls it before it loads
  TensorFlow, whose import prints lines of its own."""
  output_dir = run.output_dir.value
  finished = _finished_records(output_dir)
  for name, config in named_configs:
    _reusable(finished.get(name), name, config, output_dir)


def _finished_records(output_dir: str) -> dict[str, dict]:
  """{name: record} of the runs in `output_dir`'s results.json ({} if it
  has none, or cannot be read)."""
  try:
    with open(os.path.join(output_dir, 'results.json')) as f:
      runs = json.load(f).get('runs', [])
    return {r['name']: r for r in runs if isinstance(r, dict) and 'name' in r}
  except (OSError, ValueError, AttributeError):
    return {}


def _reusable(record: Optional[dict], name: str, config,
              output_dir: str) -> Optional[dict]:
  """`record`, a finished run's in results.json, if `name` needs no
  training: it has no checkpoint left (a run with one resumes from it) and
  the same configuration (another is refused, as its checkpoint was)."""
  if record is None or os.path.isdir(
      os.path.join(output_dir, CHECKPOINTS, name)):
    return None
  from tff_hdp import checkpoint  # pylint: disable=g-import-not-at-top
  if checkpoint.identity(record.get('config', {})) != checkpoint.identity(
      dataclasses.asdict(config)):
    raise cli.UsageError(
        f'{os.path.join(output_dir, "results.json")} holds a finished run '
        f'{name} of another configuration; use another --output_dir or '
        'delete it')
  return record


def retire_checkpoints(output_dir: str, names: Sequence[str]) -> None:
  """Deletes the checkpoints of the runs `names` (they hold their runs'
  keys), and <output_dir>/checkpoints/ if nothing else is left in it."""
  from tff_hdp import checkpoint  # pylint: disable=g-import-not-at-top
  for name in names:
    checkpoint.retire(os.path.join(output_dir, CHECKPOINTS, name))
  try:
    os.rmdir(os.path.join(output_dir, CHECKPOINTS))
  except OSError:
    pass  # Missing, or holding another command's runs.


def train_and_write(
    run: run_flags.RunFlags, named_configs, train: Callable[..., dict], data, rows,
    title: str, extra_arguments: Optional[Callable[[Any, str], dict]] = None,
    **extra) -> None:
  """`train_each`, then `write_results` of the records under `title`, then
  the runs' checkpoints are deleted unless --keep_checkpoints.

  Args:
    run: The binary's `run_flags.define_run_flags`.
    named_configs: (name, config) pairs.
    train: The system's `training.train`.
    data: The federated data.
    rows: The system's `table_rows` module: its `summary` describes a record,
      its `table` the records.
    title: The table's title.
    extra_arguments: (config, name) -> more keyword arguments of `train`.
    **extra: More entries of `results.json`.
  """
  records = train_each(run, named_configs, train, data, rows.summary,
                       extra_arguments)
  write_results(run.output_dir.value, title, rows.table(records), records,
                **extra)
  if not run.keep_checkpoints.value:
    retire_checkpoints(run.output_dir.value,
                       [name for name, _ in named_configs])


def write_results(output_dir: str, title: str, table: str,
                  records: Sequence[dict], **extra) -> None:
  """Prints the table under its title and writes `results.json` (`extra`,
  the command line, where it ran (`tff_hdp.machine.provenance`: the commit,
  the CPU and, after a run of 5 minutes or more, the matmul peak) and the
  records) and `table.txt`."""
  print('\n' + title + '\n' + table)
  from tff_hdp import machine  # pylint: disable=g-import-not-at-top
  seconds = sum(r.get('wall_clock_seconds') or 0.0 for r in records)
  tf = None
  if seconds >= machine.PEAK_AFTER_SECONDS:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with open(os.path.join(output_dir, 'results.json'), 'w') as f:
    json.dump({**extra, 'argv': sys.argv,
               'provenance': machine.provenance(tf, seconds),
               'runs': list(records)}, f, indent=1)
  with open(os.path.join(output_dir, 'table.txt'), 'w') as f:
    f.write(title + '\n' + table + '\n')
  print(f'\nwrote {os.path.join(output_dir, "results.json")}')


def write_audit(output_dir: str, title: str, lines: Sequence[str],
                results: dict, default=None) -> None:
  """Prints the audit's rows under their title and writes `results.json`
  (`results`; `default` as `json.dump`'s) and `audit.txt`."""
  print(title)
  print('\n'.join(lines), flush=True)
  with open(os.path.join(output_dir, 'results.json'), 'w') as f:
    json.dump(results, f, indent=1, default=default)
  with open(os.path.join(output_dir, 'audit.txt'), 'w') as f:
    f.write(title + '\n' + '\n'.join(lines) + '\n')
  print(f'wrote {os.path.join(output_dir, "results.json")}')
