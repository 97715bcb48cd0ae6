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
"""The mechanism's key: the secret every noise draw and private sample comes from.

A DP guarantee holds only if whoever sees the outputs cannot predict the
mechanism's random draws: its Gaussian noise and the Poisson samples (cohorts,
DP-SGD batches, UDP-Alg's users) that the accountant's amplification assumes
hidden. A run therefore keeps two kinds of randomness apart:

- public, from `seed` (published in results.json): the data split, opt-outs and
  privacy levels, theta^0, dropout, audit canaries; no guarantee rests on it.
- the mechanism's, from one 128-bit key per run: every noise draw, every
  private cohort and batch. `new_key(None)` draws it from the operating
  system's cryptographic generator (`secrets`); it lives in the run's state and
  checkpoints only (secret material: 0600 files, deleted once the run has
  finished, `tff_hdp.checkpoint`) and in no results file, table, log or
  TensorBoard event.

`new_key(mechanism_seed)` derives it from a published integer instead, for
bit-reproducible research runs. Anyone holding that integer regenerates
every draw, so such a run's epsilon is the mechanism's, not a guarantee for
its outputs, and the run says so (`ledger_terms`, `privacy_record`). TF Privacy's and TFF's DP
queries draw from an unseeded generator; Opacus' `secure_mode` from a CSPRNG,
warning whenever it is off. We take the key from `secrets` and derive each
draw's seed from it with TensorFlow's counter-based Philox generator, keeping
all 128 bits at every step (`fold_in`, and see there why not TF's own).

TensorFlow-free; `fold_in` and `initial_key` import TensorFlow when called.
"""

import secrets
from typing import Any, Mapping, Optional

import numpy as np

KEY_SHAPE = (2,)  # int64 words: the stateless seed of TensorFlow's ops.
_REPRODUCTION_DOMAIN = 0x6d656368  # 'mech': keeps the key apart from `seed`.
_COHORT = 0x636f68  # 'coh': the cohorts' key, derived from the run's.


def check_mechanism_seed(mechanism_seed: Any) -> Optional[int]:
  """`mechanism_seed` as an int >= 0 or None, or a one-line ValueError."""
  if mechanism_seed is None:
    return None
  if (isinstance(mechanism_seed, (bool, np.bool_)) or
      not isinstance(mechanism_seed, (int, np.integer)) or mechanism_seed < 0):
    raise ValueError('mechanism_seed must be None (a secret key from the '
                     'operating system, the default) or an integer >= 0 (a '
                     'reproducible run whose epsilon is not a guarantee), '
                     f'got {mechanism_seed!r}')
  return int(mechanism_seed)


def new_key(mechanism_seed: Optional[int] = None) -> np.ndarray:
  """A run's key, int64 [2]: 128 bits from `secrets`, or derived from
  `mechanism_seed` (reproducible, and then not secret)."""
  mechanism_seed = check_mechanism_seed(mechanism_seed)
  if mechanism_seed is None:
    words = np.array([secrets.randbits(64), secrets.randbits(64)], np.uint64)
  else:
    words = np.random.SeedSequence(
        [mechanism_seed, _REPRODUCTION_DOMAIN]).generate_state(2, np.uint64)
  return words.view(np.int64)


def as_key(key) -> np.ndarray:
  """`key` as an int64 [2] array, or a one-line ValueError."""
  key = np.asarray(key)
  if key.shape != KEY_SHAPE or key.dtype != np.int64:
    raise ValueError(f'a mechanism key is int64 {list(KEY_SHAPE)}, got '
                     f'{key.dtype} {list(key.shape)}')
  return key


def _words(key) -> list[int]:
  return [int(w) for w in as_key(key).view(np.uint64)]


def cohort_key(key) -> np.ndarray:
  """The key of a run's cohorts (and of its sampled clients' local data
  order), derived from the run's key so that it is as secret as the noise."""
  words = np.random.SeedSequence(_words(key) + [_COHORT]).generate_state(
      2, np.uint64)
  return words.view(np.int64)


def round_rng(key, round_num: int, stream: int = 0) -> np.random.Generator:
  """Round `round_num`'s numpy generator under `key` (`stream` separates its
  uses): every round draws from its own, so a resumed run draws exactly what
  an uninterrupted one would."""
  return np.random.default_rng(_words(key) + [int(round_num), int(stream)])


def fold_in(key, data):
  """A new int64 [2] key from `key` and the integer `data` (a round, a
  client, a step, a tensor's index), keeping its 128 bits.

  TensorFlow's `tf.random.experimental.stateless_fold_in(key, data)` is
  [one random word, data]: 64 unknown bits for int64 data and only 32 for
  int32 data (a Python int), which an adversary holding a noised release
  could search. Here the data is xor-ed into the key's second word and the
  128-bit result is Philox's output for that seed (what
  `tf.random.experimental.stateless_split` does), so every derived key is
  as hard to guess as the run's.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  key = tf.convert_to_tensor(key, tf.int64)
  seed = tf.stack([key[0], tf.bitwise.bitwise_xor(
      key[1], tf.cast(data, tf.int64))])
  return tf.random.stateless_uniform(KEY_SHAPE, seed=seed, minval=None,
                                     maxval=None, dtype=tf.int64)


def key_tensor(mechanism_seed: Optional[int] = None):
  """Inside a TensorFlow computation: a mechanism key as a tensor.

  With a `mechanism_seed`, `new_key(mechanism_seed)` as a constant. Without,
  a fresh key at every execution, as TF Privacy's and TFF's noise is fresh
  at every call: 128 bits from `secrets`, drawn when the computation is
  built and held in its graph, folded with TensorFlow's nondeterministic
  draw of that execution. (That draw alone would not do: TensorFlow seeds
  its nondeterministic generator once per process with 32 bits of
  /dev/urandom, `std::mt19937_64(std::random_device()())` in
  tsl/platform/random.cc.)
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  mechanism_seed = check_mechanism_seed(mechanism_seed)
  if mechanism_seed is not None:
    return tf.constant(new_key(mechanism_seed))
  fresh = tf.random.uniform([2], minval=tf.int64.min, maxval=tf.int64.max,
                            dtype=tf.int64)
  return fold_in(fold_in(tf.constant(new_key()), fresh[0]), fresh[1])


def fresh_rng() -> np.random.Generator:
  """A numpy generator seeded by 128 fresh bits of `secrets`."""
  return np.random.default_rng([secrets.randbits(64), secrets.randbits(64)])


def not_a_guarantee(mechanism_seed: int) -> str:
  """Why a reproducible run's epsilon is not a guarantee, in one line."""
  return (f'its noise and sampling can be regenerated from the published '
          f'mechanism_seed={mechanism_seed}: epsilon is the mechanism\'s, '
          'not a guarantee for this run\'s outputs')


def ledger_terms(mechanism_seed: Optional[int],
                 accounting_caveat: Optional[str] = None) -> dict[str, Any]:
  """`PrivacyLedger`'s (and `round_privacy.RoundPrivacy`'s) `is_bound` and
  `not_bound_because` for a run of `mechanism_seed` whose accounting is a
  bound for its sampling unless `accounting_caveat` says why not."""
  reasons = [accounting_caveat] if accounting_caveat else []
  if mechanism_seed is not None:
    reasons.append(not_a_guarantee(mechanism_seed))
  return dict(is_bound=not reasons,
              not_bound_because='; '.join(reasons) or None)


def disclosure(mechanism_seed: Optional[int]) -> str:
  """What results.json says of the mechanism's randomness."""
  if mechanism_seed is None:
    return ('secret: a 128-bit key from the operating system\'s entropy, '
            'kept in the checkpoints only, which are secret material '
            '(docs/secrets.md)')
  return f'reproducible from the published mechanism_seed={mechanism_seed}'


def privacy_record(ledger, mechanism_seed: Optional[int], units,
                   unprotected: Optional[Mapping[str, str]] = None
                   ) -> dict[str, Any]:
  """The 'privacy' entry of a run's results record.

  Args:
    ledger: The run's `PrivacyLedger`, made with `ledger_terms`.
    mechanism_seed: The run's (None: its key was secret).
    units: The accounted units (groups, clients, users) to describe.
    unprotected: The run's other units, which no noise protects, each with
      why (an opted-out group, a non-private baseline).

  Returns:
    {'is_bound': whether each epsilon bounds what the run published,
    'not_bound_because' (when it does not), 'mechanism_randomness',
    'guarantee': per unit of the run, in words ('none: <why>' for the
    unprotected ones)}.
  """
  record = {'is_bound': bool(ledger.is_bound)}
  if not ledger.is_bound:
    record['not_bound_because'] = ledger.not_bound_because
  record['mechanism_randomness'] = disclosure(mechanism_seed)
  record['guarantee'] = {u: ledger.guarantee(u) for u in units}
  record['guarantee'].update(
      {u: f'none: {why}' for u, why in (unprotected or {}).items()})
  return record
