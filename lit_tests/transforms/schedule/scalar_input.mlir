// A scalar input is a kernel parameter used directly in the element code; `shapes` skips it.
// f64 takes vectors of 2.
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="1000,1000"}' | filecheck %s

fusion.fusion @axpy(%a: f64, %x: tensor<?xf64>, %y: tensor<?xf64>) -> (tensor<?xf64>) {
  %ax = fusion.mul %a, %x : (f64, tensor<?xf64>) -> tensor<?xf64>
  %z = fusion.add %ax, %y : tensor<?xf64>
  fusion.output %z : tensor<?xf64>
}

// CHECK:      kernel.func @axpy_pointwise(%a: f64, %x: !kernel.tensor<f64, 1>, %y: !kernel.tensor<f64, 1>, %z: !kernel.tensor<f64, 1>)
// CHECK-SAME:   vector_width=2, unroll=1, index_bits=32, grid_2d=False, dense_reads=(True, True)
// CHECK-SAME:   fuser.launch = "grid=[4, 1, 1] block=[128, 1, 1] smem=0"
// CHECK-NOT:    kernel.load %a
// CHECK:        kernel.comment "fusion.mul %ax"
// CHECK-NEXT:   %[[X:.*]] = kernel.array_load %x_buf[%j] : !kernel.array<2xf64, local>, i32 -> f64
// CHECK-NEXT:   %ax = arith.mulf %a, %[[X]] : f64
// CHECK-NEXT:   kernel.comment "fusion.add %z"
// CHECK-NEXT:   %[[Y:.*]] = kernel.array_load %y_buf[%j] : !kernel.array<2xf64, local>, i32 -> f64
// CHECK-NEXT:   %[[Z:.*]] = arith.addf %ax, %[[Y]] : f64
