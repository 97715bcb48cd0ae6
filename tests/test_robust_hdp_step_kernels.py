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
"""`benchmarks/robust_hdp_step_kernels.py`: how it reads oneDNN's verbose
lines and counts a primitive's FLOPs."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)),
                                'benchmarks'))
import robust_hdp_step_kernels as kernels  # pylint: disable=g-import-not-at-top,wrong-import-position

# oneDNN 3.2's lines, as TensorFlow 2.14 prints them (shortened memory
# descriptors), for two timed steps.
_OUTPUT = '''onednn_verbose,info,oneDNN v3.2.1 (commit N/A)
onednn_verbose,info,cpu,isa:Intel AVX2
onednn_verbose,exec,cpu,convolution,jit:avx2,forward_training,src_f32::blocked:acdb::f0,,alg:convolution_direct,mb4_ic16oc32_ih14oh14kh5sh1dh0ph2_iw14ow14kw5sw1dw0pw2,9.0
==timed
onednn_verbose,exec,cpu,convolution,brgconv:avx2,forward_training,src_f32::blocked:acdb::f0,,alg:convolution_direct,mb32_ic16oc32_ih14oh14kh5sh1dh0ph2_iw14ow14kw5sw1dw0pw2,2.5
onednn_verbose,exec,cpu,inner_product,x64:gemm:jit,forward_training,src_f32::blocked:ab::f0,,,mb32ic1568oc10,0.25
onednn_verbose,exec,cpu,convolution,brgconv:avx2,forward_training,src_f32::blocked:acdb::f0,,alg:convolution_direct,mb32_ic16oc32_ih14oh14kh5sh1dh0ph2_iw14ow14kw5sw1dw0pw2,3.5
onednn_verbose,exec,cpu,inner_product,x64:gemm:jit,forward_training,src_f32::blocked:ab::f0,,,mb32ic1568oc10,0.05
==wall 0.0099
'''


def test_it_sums_each_primitive_per_step_after_the_warm_up_only():
  isa, wall, rows = kernels.parse_verbose(_OUTPUT, steps=2)
  assert isa == 'Intel AVX2'
  assert wall == 0.0099
  conv = ('convolution', 'brgconv:avx2', 'forward_training',
          'mb32_ic16oc32_ih14oh14kh5sh1dh0ph2_iw14ow14kw5sw1dw0pw2')
  dense = ('inner_product', 'x64:gemm:jit', 'forward_training',
           'mb32ic1568oc10')
  # The warm-up's mb4 line is not counted; longest first.
  assert [r[1:] for r in rows] == [conv, dense]
  assert rows[0][0] == pytest.approx(3.0)
  assert rows[1][0] == pytest.approx(0.15)


def test_flops_of_a_convolution_and_an_inner_product():
  # cnn5's second convolution: 14 x 14 outputs of 32 channels, each a 5 x 5
  # x 16 window, for 32 examples; its dense layer 1568 -> 10.
  conv = 'mb32_ic16oc32_ih14oh14kh5sh1dh0ph2_iw14ow14kw5sw1dw0pw2'
  assert kernels.primitive_flops('convolution', conv) == (
      2 * 32 * 14 * 14 * 32 * 5 * 5 * 16)
  assert kernels.primitive_flops('inner_product', 'mb32ic1568oc10') == (
      2 * 32 * 1568 * 10)
  assert kernels.primitive_flops(
      'pooling', 'mb32ic16_ih28oh14kh2sh2dh0ph0_iw28ow14kw2sw2dw0pw0') == 0
