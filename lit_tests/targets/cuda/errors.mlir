// An op the emitter does not know is a one-line error naming it and its kernel; nothing else
// is printed.
// RUN: not fuser-opt %s -t cuda 2>&1 | filecheck %s
// RUN: not fuser-opt %s -t cuda 2>&1 | wc -l | filecheck %s --check-prefix=LINES

kernel.func @bits(%x: f32, %out: !kernel.tensor<i32, 1>) {
  %b = arith.bitcast %x : f32 to i32
  %c0 = arith.constant 0 : i32
  kernel.store %b, %out[%c0] : i32, !kernel.tensor<i32, 1>, i32
  kernel.return
}

// CHECK:       fuser-opt: error: cannot emit 'arith.bitcast' in kernel.func @bits as CUDA: the emitter does not support this operation
// LINES:       {{^ *1$}}
