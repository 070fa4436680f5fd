// Two reductions of one input in one kernel, a prologue (x * 2) feeding one of them, and an
// epilogue on the reduced values (sum / max + b, with b read once per row before the loop).
// The two states travel through the loop together and are combined by two block reductions.
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="1000x96,1000"}' | filecheck %s

fusion.fusion @two(%x: tensor<?x?xf32>, %b: tensor<?xf32>) -> (tensor<?xf32>, tensor<?x1xf32>) {
  %two = fusion.constant 2.0 : f32
  %y = fusion.mul %x, %two : (tensor<?x?xf32>, f32) -> tensor<?x?xf32>
  %s = fusion.sum %y [1] : tensor<?x?xf32> -> tensor<?xf32>
  %m = fusion.max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %r = fusion.div %s, %m : tensor<?xf32>
  %rb = fusion.add %r, %b : tensor<?xf32>
  %mk = fusion.broadcast_in_dim %m [0] : tensor<?xf32> -> tensor<?x1xf32>
  fusion.output %rb, %mk : tensor<?xf32>, tensor<?x1xf32>
}

// CHECK:      kernel.func @two_reduction(%x: !kernel.tensor<f32, 2>, %b: !kernel.tensor<f32, 1>, %rb: !kernel.tensor<f32, 1>, %mk: !kernel.tensor<f32, 2>)
// CHECK-SAME: fuser.scheduler = "reduction"
// CHECK-SAME: AccessPlan(param=1, map=(0,), dims=(0,), kept='unit', reduced='none', vector=False)
// CHECK-SAME: AccessPlan(param=3, map=(0, None), dims=(0, None), kept='unit', reduced='none', vector=False)
// CHECK-SAME: vector_width=4
// CHECK:      kernel.comment "load (once per row)"
// CHECK-NEXT: %b_buf = kernel.alloc : !kernel.array<1xf32, local>
// CHECK:      scf.if %row_ok {
// CHECK-NEXT:   %{{.*}} = kernel.load %b[%row] : !kernel.tensor<f32, 1>, i32 -> f32
// CHECK:      %{{.*}}, %{{.*}} = scf.for %col = %{{.*}} to %end step %{{.*}} iter_args(%[[S:.*]] = %acc, %[[M:.*]] = %acc_1) -> (f32, f32) : i32 {
// CHECK:        kernel.load %x[%{{.*}}] : !kernel.tensor<f32, 2>, i32 -> vector<4xf32>
// CHECK:        kernel.comment "fusion.mul %y"
// CHECK:        kernel.comment "reduce fusion.sum y"
// CHECK:        arith.addf %[[S]], %{{.*}} : f32
// CHECK:        kernel.comment "reduce fusion.max x"
// CHECK:        arith.maximumf %[[M]], %{{.*}} : f32
// CHECK:        scf.yield
// CHECK:      %s = kernel.block_reduce sum %{{.*}} along x : f32
// CHECK:      %m = kernel.block_reduce max %{{.*}} along x : f32
// CHECK:      kernel.comment "epilogue"
// CHECK:      %r = arith.divf %s, %m : f32
// CHECK:      %[[B:.*]] = kernel.array_load %b_buf[%{{.*}}] : !kernel.array<1xf32, local>, i32 -> f32
// CHECK:      %[[RB:.*]] = arith.addf %r, %[[B]] : f32
// CHECK:      scf.if
// CHECK-NEXT:   kernel.comment "store output #0"
// CHECK-NEXT:   kernel.store %[[RB]], %rb[%row] : f32, !kernel.tensor<f32, 1>, i32
// CHECK-NEXT:   kernel.comment "store output #1"
// CHECK-NEXT:   kernel.store %m, %mk[%row] : f32, !kernel.tensor<f32, 2>, i32
