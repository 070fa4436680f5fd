// Malformed input ends in a located diagnostic and a non-zero exit, never a traceback.
// RUN: not fuser-opt %s 2>&1 | filecheck %s
// RUN: not fuser-opt %s -p 'no-such-pass' 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not fuser-opt %S/does-not-exist.mlir 2>&1 | filecheck %s --check-prefix=FILE

fusion.fusion @f(%x: tensor<4xf32>, %y: tensor<5xf32>) -> (tensor<4xf32>) {
  %z = fusion.add %x, %y : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  fusion.output %z : tensor<4xf32>
}

// CHECK: errors.mlir:7:3: error: 'fusion.add' operand #1 has shape [5], incompatible with result shape [4]
// CHECK-NOT: Traceback
// PASS: fuser-opt: error: bad pass pipeline 'no-such-pass': Unrecognized passes: ['no-such-pass']
// FILE: fuser-opt: error: No such file or directory:
