// host.launch: grid, block, dynamic shared memory, ins and outs, checked against the kernel.func
// of the same module when there is one; host.grid: the grid a kernel's launch rule gives, per call.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP
// RUN: fuser-opt %s --print-op-generic | filecheck %s --check-prefix=CHECK-GENERIC

// y = x * alpha + 1 elementwise on a contiguous 1-d tensor, one element per thread.
kernel.func @axpb(%x: !kernel.tensor<f32, 1>, %alpha: f32, %y: !kernel.tensor<f32, 1>) attributes {max_threads = 128 : i64} {
  %tid = kernel.thread_id x : i64
  %bid = kernel.block_id x : i64
  %bdim = kernel.block_dim x : i64
  %t = arith.muli %bid, %bdim : i64
  %i = arith.addi %t, %tid : i64
  %n = kernel.size %x[0] : !kernel.tensor<f32, 1>
  %in = arith.cmpi slt, %i, %n : i64
  scf.if %in {
    %v = kernel.load %x[%i] : !kernel.tensor<f32, 1>, i64 -> f32
    %one = arith.constant 1.000000e+00 : f32
    %m = arith.mulf %v, %alpha : f32
    %r = arith.addf %m, %one : f32
    kernel.store %r, %y[%i] : f32, !kernel.tensor<f32, 1>, i64
  }
  kernel.return
}

// A kernel over a 2-d tensor with an integer scalar and a boolean output.
kernel.func @mask(%x: !kernel.tensor<bf16, 2>, %k: i64, %m: !kernel.tensor<i1, 2>) {
  kernel.return
}

host.program @main(%x: tensor<?xf32>, %alpha: f32, %b: tensor<7x?xbf16>) -> (tensor<?xf32>, tensor<7x?xi1>) {
  %n = host.dim %x[0] : tensor<?xf32>
  %c1 = arith.constant 1 : index
  %c127 = arith.constant 127 : index
  %c128 = arith.constant 128 : index
  %np = arith.addi %n, %c127 : index
  %blocks = arith.divui %np, %c128 : index
  %y = host.allocate(%n) : tensor<?xf32>
  host.launch @axpb grid(%blocks, %c1, %c1) block [128, 1, 1] smem 0 ins(%x, %alpha : tensor<?xf32>, f32) outs(%y : tensor<?xf32>)
  %d = host.dim %b[1] : tensor<7x?xbf16>
  %m = host.allocate(%d) : tensor<7x?xi1>
  %k = arith.constant 3 : i64
  host.launch @mask grid(%d, %c1, %c1) block [32, 8, 4] smem 4096 ins(%b, %k : tensor<7x?xbf16>, i64) outs(%m : tensor<7x?xi1>)
  // Kernels compiled elsewhere are not checked; a launch may take no operands at all.
  host.launch @elsewhere grid(%c1, %c1, %c1) block [1, 1, 1] smem 0 outs(%y : tensor<?xf32>)
  host.launch @nothing grid(%c1, %c1, %c1) block [1024, 1, 1] smem 0
  // The grid of the kernel's own rule for these arguments, computed when the program runs.
  %gx, %gy, %gz = host.grid @axpb ins(%x, %alpha : tensor<?xf32>, f32)
  host.launch @axpb grid(%gx, %gy, %gz) block [128, 1, 1] smem 0 ins(%x, %alpha : tensor<?xf32>, f32) outs(%y : tensor<?xf32>)
  %g2:3 = host.grid @elsewhere
  host.return %y, %m : tensor<?xf32>, tensor<7x?xi1>
}

// CHECK:      host.program @main(%x: tensor<?xf32>, %alpha: f32, %b: tensor<7x?xbf16>) -> (tensor<?xf32>, tensor<7x?xi1>) {
// CHECK:        %y = host.allocate(%n) : tensor<?xf32>
// CHECK-NEXT:   host.launch @axpb grid(%blocks, %c1, %c1) block [128, 1, 1] smem 0 ins(%x, %alpha : tensor<?xf32>, f32) outs(%y : tensor<?xf32>)
// CHECK:        host.launch @mask grid(%d, %c1, %c1) block [32, 8, 4] smem 4096 ins(%b, %k : tensor<7x?xbf16>, i64) outs(%m : tensor<7x?xi1>)
// CHECK-NEXT:   host.launch @elsewhere grid(%c1, %c1, %c1) block [1, 1, 1] smem 0 outs(%y : tensor<?xf32>)
// CHECK-NEXT:   host.launch @nothing grid(%c1, %c1, %c1) block [1024, 1, 1] smem 0
// CHECK-NEXT:   %gx, %gy, %gz = host.grid @axpb ins(%x, %alpha : tensor<?xf32>, f32)
// CHECK-NEXT:   host.launch @axpb grid(%gx, %gy, %gz) block [128, 1, 1] smem 0 ins(%x, %alpha : tensor<?xf32>, f32) outs(%y : tensor<?xf32>)
// CHECK-NEXT:   %{{.*}}, %{{.*}}, %{{.*}} = host.grid @elsewhere
// CHECK-NEXT:   host.return %y, %m : tensor<?xf32>, tensor<7x?xi1>

// CHECK-GENERIC:      "host.launch"(%blocks, %c1, %c1, %x, %alpha, %y) <{kernel = @axpb, block = array<i64: 128, 1, 1>, smem = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 2, 1, 0>}> : (index, index, index, tensor<?xf32>, f32, tensor<?xf32>) -> ()
// CHECK-GENERIC:      "host.launch"(%d, %c1, %c1, %b, %k, %m) <{kernel = @mask, block = array<i64: 32, 8, 4>, smem = 4096 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 2, 1, 0>}> : (index, index, index, tensor<7x?xbf16>, i64, tensor<7x?xi1>) -> ()
// CHECK-GENERIC-NEXT: "host.launch"(%c1, %c1, %c1, %y) <{kernel = @elsewhere, block = array<i64: 1, 1, 1>, smem = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0>}> : (index, index, index, tensor<?xf32>) -> ()
// CHECK-GENERIC-NEXT: "host.launch"(%c1, %c1, %c1) <{kernel = @nothing, block = array<i64: 1024, 1, 1>, smem = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (index, index, index) -> ()
// CHECK-GENERIC-NEXT: %gx, %gy, %gz = "host.grid"(%x, %alpha) <{kernel = @axpb}> : (tensor<?xf32>, f32) -> (index, index, index)

// A kernel in a nested module is found through a nested symbol reference.
builtin.module @kernels {
  kernel.func @copy(%x: !kernel.tensor<i32, 1>, %y: !kernel.tensor<i32, 1>) {
    kernel.return
  }
}

host.program @nested(%x: tensor<5xi32>) -> tensor<5xi32> {
  %c1 = arith.constant 1 : index
  %y = host.allocate() : tensor<5xi32>
  host.launch @kernels::@copy grid(%c1, %c1, %c1) block [5, 1, 1] smem 0 ins(%x : tensor<5xi32>) outs(%y : tensor<5xi32>)
  host.return %y : tensor<5xi32>
}

// CHECK:       host.launch @kernels::@copy grid(%c1, %c1, %c1) block [5, 1, 1] smem 0 ins(%x : tensor<5xi32>) outs(%y : tensor<5xi32>)
// CHECK-GENERIC: "host.launch"(%c1, %c1, %c1, %x, %y) <{kernel = @kernels::@copy,
