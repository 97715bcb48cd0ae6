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
"""Privacy accounting shared by every system, on `dp_accounting`.

TensorFlow-free: `accounting` computes epsilon from noise multipliers and
sampling rates (and the inverse) with the RDP or PLD accountant (`pld`), and
`privacy_ledger` keeps each run's record, the ledger a resumed run continues.
The audit's statistics are `auditing`, `canaries` and `canary_audit`.

Public API (docs/api.md): `compute_epsilon`, `noise_multiplier_for_epsilon`
and its `Accountant` (how epsilon is accounted), `PrivacyLedger`, and
`Preferences`, what each client asks of a process (`preferences`).
"""

from tff_hdp import public_api

# The public API (the rest may change), imported when first used: importing
# the package stays TensorFlow-free for the binaries' flag checks.
_PUBLIC = {
    'tff_hdp.privacy.accounting': ('Accountant', 'compute_epsilon',
                                   'noise_multiplier_for_epsilon'),
    'tff_hdp.privacy.privacy_ledger': ('PrivacyLedger',),
    'tff_hdp.privacy.preferences': ('Preferences',),
}
__all__, __getattr__ = public_api.lazy(__name__, _PUBLIC)
