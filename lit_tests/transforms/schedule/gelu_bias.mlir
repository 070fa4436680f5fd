// gelu(x + bias) with the bias broadcast along rows: 16384 rows of 4096 f32 take a 2-D grid of
// 4-wide vectors, 2 per thread (16 loaded elements: x and bias), 128 threads a block; the bias
// is read at the innermost index, x and y at the flat one.
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="16384x4096,4096"}' | filecheck %s
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="16384x4096,4096"}' | fuser-opt | filecheck %s

fusion.fusion @gelu_bias(%x: tensor<?x?xf32>, %bias: tensor<?xf32>) -> (tensor<?x?xf32>) {
  %n = fusion.dim %x[0] : tensor<?x?xf32>
  %b = fusion.broadcast_in_dim %bias [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %t = fusion.add %x, %b : tensor<?x?xf32>
  %y = fusion.gelu %t none : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}

// The fusion stays; the kernel follows it.
// CHECK:      fusion.fusion @gelu_bias(
// CHECK:        fusion.output %y
// CHECK:      kernel.func @gelu_bias_pointwise(%x: !kernel.tensor<f32, 2>, %bias: !kernel.tensor<f32, 1>, %y: !kernel.tensor<f32, 2>)
// CHECK-SAME:   fuser.scheduler = "pointwise"
// CHECK-SAME:   fuser.params = "PointwiseParams(block=(128, 1, 1), reference=0, vector_width=4, unroll=2, index_bits=32, grid_2d=True, dense_reads=(True, False), dense_outputs=(True,))"
// CHECK-SAME:   fuser.launch = "grid=[4, 16384, 1] block=[128, 1, 1] smem=0"
// CHECK-SAME:   max_threads = 128 : i64

// Extents and strides are read once, in i32; a bias of extent 1 would be read with stride 0.
// CHECK:        %thread_id_x = kernel.thread_id x : i32
// CHECK:        %block_id_y = kernel.block_id y : i32
// CHECK:        %[[YS:.*]] = kernel.size %y[1] : !kernel.tensor<f32, 2>
// CHECK-NEXT:   %y_size1 = arith.trunci %[[YS]] : i64 to i32
// CHECK-NEXT:   %row_vectors = arith.divsi %y_size1, %{{.*}} : i32
// CHECK:        %bias_bstride0 = arith.select
// CHECK:        %x_buf = kernel.alloc : !kernel.array<8xf32, local>
// CHECK-NEXT:   %bias_buf = kernel.alloc : !kernel.array<8xf32, local>
// CHECK-NEXT:   %y_buf = kernel.alloc : !kernel.array<4xf32, local>

// First every load of the thread's 2 vectors...
// CHECK:        scf.for %k = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK:          %vec = arith.addi
// CHECK-NEXT:     %inner = arith.muli %vec, %{{.*}} : i32
// CHECK-NEXT:     %in_bounds = arith.cmpi slt, %vec, %row_vectors : i32
// CHECK-NEXT:     scf.if %in_bounds {
// CHECK-NEXT:       %[[ROW:.*]] = arith.muli %block_id_y, %y_size1 : i32
// CHECK-NEXT:       %elem = arith.addi %[[ROW]], %inner : i32
// CHECK-NEXT:       %[[XV:.*]] = kernel.load %x[%elem] : !kernel.tensor<f32, 2>, i32 -> vector<4xf32>
// CHECK:            kernel.array_store %[[XV]], %x_buf[%{{.*}}] : vector<4xf32>, !kernel.array<8xf32, local>, i32
// CHECK-NEXT:       %bias_off = arith.muli %inner, %bias_bstride0 : i32
// CHECK-NEXT:       %[[BV:.*]] = kernel.load %bias[%bias_off] : !kernel.tensor<f32, 1>, i32 -> vector<4xf32>
// CHECK:            kernel.array_store %[[BV]], %bias_buf[%{{.*}}]
// CHECK:        } {unroll}

// ...then, per vector, the fusion element by element and a vector store.
// CHECK:        scf.for %k_1 = {{.*}} : i32 {
// CHECK:            scf.for %j = {{.*}} : i32 {
// CHECK-NEXT:         kernel.comment "fusion.broadcast_in_dim %b"
// CHECK:              %b = kernel.array_load %bias_buf[%{{.*}}] : !kernel.array<8xf32, local>, i32 -> f32
// CHECK-NEXT:         kernel.comment "fusion.add %t"
// CHECK:              %[[XE:.*]] = kernel.array_load %x_buf[%{{.*}}] : !kernel.array<8xf32, local>, i32 -> f32
// CHECK-NEXT:         %t = arith.addf %[[XE]], %b : f32
// CHECK-NEXT:         kernel.comment "fusion.gelu %y"
// CHECK-NEXT:         %[[C:.*]] = arith.constant 0.707106769 : f32
// CHECK-NEXT:         %[[S:.*]] = arith.mulf %t, %[[C]] : f32
// CHECK-NEXT:         %[[E:.*]] = math.erf %[[S]] : f32
// CHECK-NEXT:         %[[H:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:         %[[HX:.*]] = arith.mulf %[[H]], %t : f32
// CHECK-NEXT:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:         %[[P:.*]] = arith.addf %[[ONE]], %[[E]] : f32
// CHECK-NEXT:         %[[Y:.*]] = arith.mulf %[[HX]], %[[P]] : f32
// CHECK-NEXT:         kernel.array_store %[[Y]], %y_buf[%j] : f32, !kernel.array<4xf32, local>, i32
// CHECK-NEXT:       } {unroll}
// CHECK:            %[[YV:.*]] = kernel.array_load %y_buf[%{{.*}}] : !kernel.array<4xf32, local>, i32 -> vector<4xf32>
// CHECK-NEXT:       kernel.store %[[YV]], %y[%elem_1] : vector<4xf32>, !kernel.tensor<f32, 2>, i32
// CHECK:        kernel.return
