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
"""Writes small files in TFF's SQL client-data format with TFF's own
writer, as the loaders' tests need them (no download)."""

import os
import shutil
import sqlite3


def write_client_data(path: str, parts) -> None:
  """Writes `parts` to one SQLite file at `path`, as TFF's datasets are.

  Args:
    path: The file.
    parts: A sequence of (split name, {client id: OrderedDict of feature
      arrays}), written one at a time by
      `tff.simulation.datasets.save_to_sql_client_data` and merged in order.
      Several parts of one split put a client's rows apart in the table
      (as in TFF's files); the split keeps one metadata row per client,
      counting all its rows.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  pieces = []
  for i, (split, part) in enumerate(parts):
    piece = f'{path}.{i}'
    tff.simulation.datasets.save_to_sql_client_data(
        sorted(part),
        lambda cid, part=part: tf.data.Dataset.from_tensor_slices(part[cid]),
        piece, split_names_by_client_id={c: split for c in part})
    pieces.append((split, piece))
  shutil.copy(pieces[0][1], path)
  with_metadata = {pieces[0][0]}
  with sqlite3.connect(path) as connection:
    for split, piece in pieces[1:]:
      connection.execute('ATTACH DATABASE ? AS piece;', (piece,))
      connection.execute('INSERT INTO examples SELECT * FROM piece.examples;')
      if split not in with_metadata:
        connection.execute(
            'INSERT INTO client_metadata SELECT * FROM piece.client_metadata;')
        with_metadata.add(split)
      connection.commit()
      connection.execute('DETACH DATABASE piece;')
    connection.execute(
        'UPDATE client_metadata SET num_examples = (SELECT COUNT(*) FROM '
        'examples AS e WHERE e.client_id = client_metadata.client_id AND '
        'e.split_name = client_metadata.split_name);')
  connection.close()
  for _, piece in pieces:
    os.remove(piece)
