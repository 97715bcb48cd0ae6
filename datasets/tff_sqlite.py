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
"""Checks of TFF's simulation databases (`SqlClientData`) before TFF opens one.

TFF downloads a missing file and opens a cached one without checking it, so
an interrupted download fails much later. The EMNIST and CelebA loaders check
the file first with these: an SQLite file whose size matches its header's
page count, with the tables and columns TFF's `SqlClientData` reads and the
splits the loader needs.
"""

import contextlib
import os
import pathlib
import sqlite3
from typing import Optional, Sequence

from tff_hdp.datasets.errors import DataFileError

_SQLITE_MAGIC = b'SQLite format 3\x00'
# What TFF's `SqlClientData` needs (its `_check_database_format`, plus the
# `client_metadata` columns its client listing reads).
_REQUIRED_COLUMNS = {
    'examples': ('split_name', 'client_id', 'serialized_example_proto'),
    'client_metadata': ('client_id', 'split_name'),
}


def connect(path: str) -> sqlite3.Connection:
  """Opens `path` read-only (never creates or changes it)."""
  uri = pathlib.Path(os.path.abspath(path)).as_uri() + '?mode=ro'
  return sqlite3.connect(uri, uri=True)


def header_problem(path: str) -> Optional[str]:
  """What is wrong with the file as an SQLite file, or None."""
  size = os.path.getsize(path)
  if size == 0:
    return 'the file is empty'
  with open(path, 'rb') as f:
    header = f.read(100)
  if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
    return 'it is not an SQLite database'
  page_size = int.from_bytes(header[16:18], 'big')
  page_size = 65536 if page_size == 1 else page_size
  page_count = int.from_bytes(header[28:32], 'big')
  # The header's page count is valid when its version-valid-for number
  # (bytes 92-95) equals the change counter (bytes 24-27).
  if header[92:96] == header[24:28] and size < page_size * page_count:
    return (f'it is truncated ({size} bytes, its header says '
            f'{page_size * page_count})')
  return None


def schema_problem(connection: sqlite3.Connection,
                    split_names: Sequence[str]) -> Optional[str]:
  """What is missing from the database for TFF's `SqlClientData`, or None."""
  tables = {row[0] for row in connection.execute(
      "SELECT name FROM sqlite_master WHERE type = 'table';")}
  for table, needed in _REQUIRED_COLUMNS.items():
    if table not in tables:
      return f'it has no table {table!r} (tables: {sorted(tables)})'
    columns = {row[1] for row in connection.execute(
        f'PRAGMA table_info({table});')}
    missing = [c for c in needed if c not in columns]
    if missing:
      return f'table {table!r} lacks columns {missing}'
  for split in split_names:
    if connection.execute(
        'SELECT 1 FROM client_metadata WHERE split_name = ? LIMIT 1;',
        (split,)).fetchone() is None:
      return f'it has no clients in split {split!r}'
  return None


def check_database(path: str, label: str, split_names: Sequence[str],
                   how_to_fetch: str) -> None:
  """Raises DataFileError unless `path` is a usable TFF database.

  Args:
    path: The database file.
    label: The dataset's name in messages, e.g. 'EMNIST'.
    split_names: Splits that must have clients.
    how_to_fetch: The end of every message: how to get a good copy.

  Raises:
    DataFileError: The file is missing, empty, not an SQLite database,
      truncated, or lacks TFF's tables, columns or the splits; the message
      names the file and says how to fetch it.
  """
  if not os.path.isfile(path):
    raise DataFileError(f'{label} file {path} not found: {how_to_fetch}')
  problem = header_problem(path)
  if problem is None:
    try:
      with contextlib.closing(connect(path)) as connection:
        problem = schema_problem(connection, split_names)
    except sqlite3.DatabaseError as e:
      problem = f'SQLite cannot read it ({e})'
  if problem is not None:
    raise DataFileError(f'{label} file {path} is unusable: {problem}; delete '
                        f'it and {how_to_fetch}')
