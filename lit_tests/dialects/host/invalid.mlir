// One case per verifier rule of the host dialect; each must report its message.
// RUN: fuser-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s
// Every case fails: none prints a module.
// RUN: fuser-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s --check-prefix=ALL-FAIL
// ALL-FAIL-NOT: builtin.module

// host.program and host.return.

"host.program"() <{sym_name = "p", function_type = (tensor<?xf32>) -> ()}> ({
^bb0(%x: tensor<?xf64>):
  "host.return"() : () -> ()
}) : () -> ()
// CHECK: error: 'host.program @p' block argument types do not match its signature

// -----

host.program @p(%x: tensor<*xf32>) {
  host.return
}
// CHECK: error: 'host.program @p' argument #0 has type tensor<*xf32>, expected a ranked tensor or a scalar of f16, bf16, f32, f64, i32, i64, i1 or index

// -----

host.program @p(%x: tensor<4xi8>) {
  host.return
}
// CHECK: error: 'host.program @p' argument #0 has type tensor<4xi8>, expected a ranked tensor or a scalar

// -----

host.program @p(%s: !host.stream) -> !host.stream {
  host.return %s : !host.stream
}
// CHECK: error: 'host.program @p' argument #0 has type !host.stream, expected a ranked tensor or a scalar

// -----

"host.program"() <{sym_name = "p", function_type = () -> memref<4xf32>}> ({
  %m = "test.op"() : () -> memref<4xf32>
  "host.return"(%m) : (memref<4xf32>) -> ()
}) : () -> ()
// CHECK: error: 'host.program @p' result #0 has type memref<4xf32>, expected a ranked tensor or a scalar

// -----

host.program @p() {
  %c = arith.constant 0 : index
}
// CHECK: error: 'host.program @p' must end with a 'host.return'

// -----

host.program @p(%x: tensor<?xf32>) -> tensor<4xf32> {
  host.return %x : tensor<?xf32>
}
// CHECK: error: 'host.return' types (tensor<?xf32>) do not match the results of @p (tensor<4xf32>)

// -----

host.program @p(%x: tensor<?xf32>) -> (tensor<?xf32>, f32) {
  host.return %x : tensor<?xf32>
}
// CHECK: error: 'host.return' types (tensor<?xf32>) do not match the results of @p (tensor<?xf32>, f32)

// -----

host.return
// CHECK: error: 'host.return' expects parent op 'host.program'

// -----

// Extents, allocation, views.

%x = "test.op"() : () -> tensor<?x?xf32>
%d = host.dim %x[2] : tensor<?x?xf32>
// CHECK: error: 'host.dim' axis 2 is out of range for rank 2

// -----

%n = "test.op"() : () -> index
%t = host.allocate(%n) : tensor<?x?xf32>
// CHECK: error: 'host.allocate' needs one size operand per dynamic dim of tensor<?x?xf32>: expected 2, got 1

// -----

%n = "test.op"() : () -> index
%t = host.allocate(%n) : tensor<3x4xf32>
// CHECK: error: 'host.allocate' needs one size operand per dynamic dim of tensor<3x4xf32>: expected 0, got 1

// -----

%t = host.allocate() : tensor<3xui8>
// CHECK: error: 'host.allocate' result has type tensor<3xui8>, expected a ranked tensor of f16, bf16, f32, f64, i32, i64 or i1

// -----

%x, %i = "test.op"() : () -> (tensor<?x?xf32>, index)
%v = host.alias_select %x[%i] axis 2 : tensor<?x?xf32> -> tensor<?xf32>
// CHECK: error: 'host.alias_select' axis 2 is out of range for rank 2

// -----

%x, %i = "test.op"() : () -> (tensor<3x?xf32>, index)
%v = host.alias_select %x[%i] axis 1 : tensor<3x?xf32> -> tensor<?xf32>
// CHECK: error: 'host.alias_select' result type tensor<?xf32> must be the operand's without dim 1: [3] of f32

// -----

%x, %i = "test.op"() : () -> (tensor<3x?xf32>, index)
%v = host.alias_select %x[%i] axis 0 : tensor<3x?xf32> -> tensor<?xf64>
// CHECK: error: 'host.alias_select' result type tensor<?xf64> must be the operand's without dim 0: [?] of f32

// -----

%x = "test.op"() : () -> tensor<3x?xf32>
%i = arith.constant 3 : index
%v = host.alias_select %x[%i] axis 0 : tensor<3x?xf32> -> tensor<?xf32>
// CHECK: error: 'host.alias_select' constant index 3 is out of range for extent 3

// -----

// Launches.

%c = arith.constant 1 : index
"host.launch"(%c, %c, %c) <{kernel = @k, block = array<i64: 32, 1>, smem = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (index, index, index) -> ()
// CHECK: error: 'host.launch' block must have 3 extents, got 2

// -----

%c = arith.constant 1 : index
host.launch @k grid(%c, %c, %c) block [32, 0, 1] smem 0
// CHECK: error: 'host.launch' block extent y = 0 must be between 1 and 1024

// -----

%c = arith.constant 1 : index
host.launch @k grid(%c, %c, %c) block [1, 1, 128] smem 0
// CHECK: error: 'host.launch' block extent z = 128 must be between 1 and 64

// -----

%c = arith.constant 1 : index
host.launch @k grid(%c, %c, %c) block [64, 32, 1] smem 0
// CHECK: error: 'host.launch' block [64, 32, 1] has 2048 threads, more than 1024

// -----

%c = arith.constant 1 : index
host.launch @k grid(%c, %c, %c) block [32, 1, 1] smem -4
// CHECK: error: 'host.launch' smem -4 is negative

// -----

%c = arith.constant 1 : index
host.launch @k grid(%c, %c, %c) block [32, 1, 1] smem 0 ins(%c : index)
// CHECK: error: 'host.launch' input #0 has type index, expected a ranked tensor or a scalar of f16, bf16, f32, f64, i32, i64 or i1

// -----

%c = arith.constant 1 : index
%f = arith.constant 1.0 : f32
host.launch @k grid(%c, %c, %c) block [32, 1, 1] smem 0 outs(%f : f32)
// CHECK: error: 'host.launch' output #0 has type f32, expected a ranked tensor of f16, bf16, f32, f64, i32, i64 or i1

// -----

host.program @k() {
  %c = arith.constant 1 : index
  host.launch @k grid(%c, %c, %c) block [32, 1, 1] smem 0
  host.return
}
// CHECK: error: 'host.launch' @k is a 'host.program', not a kernel.func

// -----

kernel.func @k(%x: !kernel.tensor<f32, 1>, %y: !kernel.tensor<f32, 1>) {
  kernel.return
}
host.program @p(%x: tensor<?xf32>) {
  %c = arith.constant 1 : index
  host.launch @k grid(%c, %c, %c) block [32, 1, 1] smem 0 outs(%x : tensor<?xf32>)
  host.return
}
// CHECK: error: 'host.launch' passes 1 arguments to @k, which takes 2

// -----

kernel.func @k(%x: !kernel.tensor<f32, 1>, %y: !kernel.tensor<f32, 1>) {
  kernel.return
}
host.program @p(%x: tensor<?xf32>, %y: tensor<?xf64>) {
  %c = arith.constant 1 : index
  host.launch @k grid(%c, %c, %c) block [32, 1, 1] smem 0 ins(%x : tensor<?xf32>) outs(%y : tensor<?xf64>)
  host.return
}
// CHECK: error: 'host.launch' argument #1 of type tensor<?xf64> does not match parameter #1 of @k (!kernel.tensor<f32, 1>)

// -----

kernel.func @k(%x: !kernel.tensor<f32, 2>) {
  kernel.return
}
host.program @p(%x: tensor<4xf32>) {
  %c = arith.constant 1 : index
  host.launch @k grid(%c, %c, %c) block [32, 1, 1] smem 0 outs(%x : tensor<4xf32>)
  host.return
}
// CHECK: error: 'host.launch' argument #0 of type tensor<4xf32> does not match parameter #0 of @k (!kernel.tensor<f32, 2>)

// -----

kernel.func @k(%a: f32, %x: !kernel.tensor<f32, 1>) {
  kernel.return
}
host.program @p(%a: f64, %x: tensor<4xf32>) {
  %c = arith.constant 1 : index
  host.launch @k grid(%c, %c, %c) block [32, 1, 1] smem 0 ins(%a : f64) outs(%x : tensor<4xf32>)
  host.return
}
// CHECK: error: 'host.launch' argument #0 of type f64 does not match parameter #0 of @k (f32)

// -----

kernel.func @k(%x: !kernel.tensor<f32, 1>) attributes {max_threads = 128 : i64} {
  kernel.return
}
host.program @p(%x: tensor<4xf32>) {
  %c = arith.constant 1 : index
  host.launch @k grid(%c, %c, %c) block [64, 4, 1] smem 0 outs(%x : tensor<4xf32>)
  host.return
}
// CHECK: error: 'host.launch' block of 256 threads exceeds max_threads 128 of @k

// -----

builtin.module @kernels {
  kernel.func @k(%x: !kernel.tensor<i32, 1>) {
    kernel.return
  }
}
host.program @p(%x: tensor<4xi64>) {
  %c = arith.constant 1 : index
  host.launch @kernels::@k grid(%c, %c, %c) block [32, 1, 1] smem 0 outs(%x : tensor<4xi64>)
  host.return
}
// CHECK: error: 'host.launch' argument #0 of type tensor<4xi64> does not match parameter #0 of @kernels::@k (!kernel.tensor<i32, 1>)

// -----

// Loops.

%c0 = arith.constant 0 : index
%c4 = arith.constant 4 : index
host.for %i = %c0 to %c4 step %c0 {
}
// CHECK: error: 'host.for' constant step 0 must be positive

// -----

%c0 = arith.constant 0 : index
"host.for"(%c0, %c0, %c0) ({
^bb0(%i: i32):
  "host.yield"() : () -> ()
}) : (index, index, index) -> ()
// CHECK: error: 'host.for' body must have one index argument, the induction variable

// -----

%c0 = arith.constant 0 : index
"host.for"(%c0, %c0, %c0) ({
  %x = arith.constant 1 : index
}) : (index, index, index) -> ()
// CHECK: error: 'host.for' terminates with operation arith.constant instead of host.yield

// -----

host.yield
// CHECK: error: 'host.yield' expects parent op 'host.for'

// -----

// Streams.

%i = arith.constant -1 : index
%s = host.stream %i
// CHECK: error: 'host.stream' constant index -1 is negative

// -----

%i = arith.constant 1 : index
"host.synchronize"(%i) : (index) -> ()
// CHECK: error: operand 'stream' at position 0 does not verify:
// CHECK-NEXT: index should be of base attribute host.stream
