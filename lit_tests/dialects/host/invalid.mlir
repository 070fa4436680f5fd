// One case per verifier rule of the host dialect; each must report its message.
// RUN: fuser-opt %s --split-input-file --verify-diagnostics
// Every case fails: none prints a module.
// RUN: fuser-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=ALL-FAIL
// ALL-FAIL-NOT: builtin.module

// host.program and host.return.

// expected-error @+1 {{'host.program @p' block argument types do not match its signature}}
"host.program"() <{sym_name = "p", function_type = (tensor<?xf32>) -> ()}> ({
^bb0(%x: tensor<?xf64>):
  "host.return"() : () -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'host.program @p' argument #0 has type tensor<*xf32>, expected a ranked tensor or a scalar of f16, bf16, f32, f64, i32, i64, i1 or index}}
host.program @p(%x: tensor<*xf32>) {
  host.return
}

// -----

// expected-error @+1 {{'host.program @p' argument #0 has type tensor<4xi8>, expected a ranked tensor or a scalar of f16, bf16, f32, f64, i32, i64, i1 or index}}
host.program @p(%x: tensor<4xi8>) {
  host.return
}

// -----

// expected-error @+1 {{'host.program @p' argument #0 has type !host.stream, expected a ranked tensor or a scalar of f16, bf16, f32, f64, i32, i64, i1 or index}}
host.program @p(%s: !host.stream) -> !host.stream {
  host.return %s : !host.stream
}

// -----

// expected-error @+1 {{'host.program @p' result #0 has type memref<4xf32>, expected a ranked tensor or a scalar of f16, bf16, f32, f64, i32, i64, i1 or index}}
"host.program"() <{sym_name = "p", function_type = () -> memref<4xf32>}> ({
  %m = "test.op"() : () -> memref<4xf32>
  "host.return"(%m) : (memref<4xf32>) -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'host.program @p' must end with a 'host.return'}}
host.program @p() {
  %c = arith.constant 0 : index
}

// -----

host.program @p(%x: tensor<?xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'host.return' types (tensor<?xf32>) do not match the results of @p (tensor<4xf32>)}}
  host.return %x : tensor<?xf32>
}

// -----

host.program @p(%x: tensor<?xf32>) -> (tensor<?xf32>, f32) {
  // expected-error @+1 {{'host.return' types (tensor<?xf32>) do not match the results of @p (tensor<?xf32>, f32)}}
  host.return %x : tensor<?xf32>
}

// -----

// expected-error @+1 {{'host.return' expects parent op 'host.program'}}
host.return

// -----

// Extents, allocation, views.

%x = "test.op"() : () -> tensor<?x?xf32>
// expected-error @+1 {{'host.dim' axis 2 is out of range for rank 2}}
%d = host.dim %x[2] : tensor<?x?xf32>

// -----

%n = "test.op"() : () -> index
// expected-error @+1 {{'host.allocate' needs one size operand per dynamic dim of tensor<?x?xf32>: expected 2, got 1}}
%t = host.allocate(%n) : tensor<?x?xf32>

// -----

%n = "test.op"() : () -> index
// expected-error @+1 {{'host.allocate' needs one size operand per dynamic dim of tensor<3x4xf32>: expected 0, got 1}}
%t = host.allocate(%n) : tensor<3x4xf32>

// -----

// expected-error @+1 {{'host.allocate' result has type tensor<3xui8>, expected a ranked tensor of f16, bf16, f32, f64, i32, i64 or i1}}
%t = host.allocate() : tensor<3xui8>

// -----

%x, %i = "test.op"() : () -> (tensor<?x?xf32>, index)
// expected-error @+1 {{'host.alias_select' axis 2 is out of range for rank 2}}
%v = host.alias_select %x[%i] axis 2 : tensor<?x?xf32> -> tensor<?xf32>

// -----

%x, %i = "test.op"() : () -> (tensor<3x?xf32>, index)
// expected-error @+1 {{'host.alias_select' result type tensor<?xf32> must be the operand's without dim 1: [3] of f32}}
%v = host.alias_select %x[%i] axis 1 : tensor<3x?xf32> -> tensor<?xf32>

// -----

%x, %i = "test.op"() : () -> (tensor<3x?xf32>, index)
// expected-error @+1 {{'host.alias_select' result type tensor<?xf64> must be the operand's without dim 0: [?] of f32}}
%v = host.alias_select %x[%i] axis 0 : tensor<3x?xf32> -> tensor<?xf64>

// -----

%x = "test.op"() : () -> tensor<3x?xf32>
%i = arith.constant 3 : index
// expected-error @+1 {{'host.alias_select' constant index 3 is out of range for extent 3}}
%v = host.alias_select %x[%i] axis 0 : tensor<3x?xf32> -> tensor<?xf32>

// -----

// Launches.

%c = arith.constant 1 : index
// expected-error @+1 {{'host.launch' block must have 3 extents, got 2}}
"host.launch"(%c, %c, %c) <{kernel = @k, block = array<i64: 32, 1>, smem = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (index, index, index) -> ()

// -----

%c = arith.constant 1 : index
// expected-error @+1 {{'host.launch' block extent y = 0 must be between 1 and 1024}}
host.launch @k grid(%c, %c, %c) block [32, 0, 1] smem 0

// -----

%c = arith.constant 1 : index
// expected-error @+1 {{'host.launch' block extent z = 128 must be between 1 and 64}}
host.launch @k grid(%c, %c, %c) block [1, 1, 128] smem 0

// -----

%c = arith.constant 1 : index
// expected-error @+1 {{'host.launch' block [64, 32, 1] has 2048 threads, more than 1024}}
host.launch @k grid(%c, %c, %c) block [64, 32, 1] smem 0

// -----

%c = arith.constant 1 : index
// expected-error @+1 {{'host.launch' smem -4 is negative}}
host.launch @k grid(%c, %c, %c) block [32, 1, 1] smem -4

// -----

%c = arith.constant 1 : index
// expected-error @+1 {{'host.launch' input #0 has type index, expected a ranked tensor or a scalar of f16, bf16, f32, f64, i32, i64 or i1}}
host.launch @k grid(%c, %c, %c) block [32, 1, 1] smem 0 ins(%c : index)

// -----

%c = arith.constant 1 : index
%f = arith.constant 1.0 : f32
// expected-error @+1 {{'host.launch' output #0 has type f32, expected a ranked tensor of f16, bf16, f32, f64, i32, i64 or i1}}
host.launch @k grid(%c, %c, %c) block [32, 1, 1] smem 0 outs(%f : f32)

// -----

host.program @k() {
  %c = arith.constant 1 : index
  // expected-error @+1 {{'host.launch' @k is a 'host.program', not a kernel.func}}
  host.launch @k grid(%c, %c, %c) block [32, 1, 1] smem 0
  host.return
}

// -----

kernel.func @k(%x: !kernel.tensor<f32, 1>, %y: !kernel.tensor<f32, 1>) {
  kernel.return
}
host.program @p(%x: tensor<?xf32>) {
  %c = arith.constant 1 : index
  // expected-error @+1 {{'host.launch' passes 1 arguments to @k, which takes 2}}
  host.launch @k grid(%c, %c, %c) block [32, 1, 1] smem 0 outs(%x : tensor<?xf32>)
  host.return
}

// -----

kernel.func @k(%x: !kernel.tensor<f32, 1>, %y: !kernel.tensor<f32, 1>) {
  kernel.return
}
host.program @p(%x: tensor<?xf32>, %y: tensor<?xf64>) {
  %c = arith.constant 1 : index
  // expected-error @+1 {{'host.launch' argument #1 of type tensor<?xf64> does not match parameter #1 of @k (!kernel.tensor<f32, 1>)}}
  host.launch @k grid(%c, %c, %c) block [32, 1, 1] smem 0 ins(%x : tensor<?xf32>) outs(%y : tensor<?xf64>)
  host.return
}

// -----

kernel.func @k(%x: !kernel.tensor<f32, 2>) {
  kernel.return
}
host.program @p(%x: tensor<4xf32>) {
  %c = arith.constant 1 : index
  // expected-error @+1 {{'host.launch' argument #0 of type tensor<4xf32> does not match parameter #0 of @k (!kernel.tensor<f32, 2>)}}
  host.launch @k grid(%c, %c, %c) block [32, 1, 1] smem 0 outs(%x : tensor<4xf32>)
  host.return
}

// -----

kernel.func @k(%a: f32, %x: !kernel.tensor<f32, 1>) {
  kernel.return
}
host.program @p(%a: f64, %x: tensor<4xf32>) {
  %c = arith.constant 1 : index
  // expected-error @+1 {{'host.launch' argument #0 of type f64 does not match parameter #0 of @k (f32)}}
  host.launch @k grid(%c, %c, %c) block [32, 1, 1] smem 0 ins(%a : f64) outs(%x : tensor<4xf32>)
  host.return
}

// -----

kernel.func @k(%x: !kernel.tensor<f32, 1>) attributes {max_threads = 128 : i64} {
  kernel.return
}
host.program @p(%x: tensor<4xf32>) {
  %c = arith.constant 1 : index
  // expected-error @+1 {{'host.launch' block of 256 threads exceeds max_threads 128 of @k}}
  host.launch @k grid(%c, %c, %c) block [64, 4, 1] smem 0 outs(%x : tensor<4xf32>)
  host.return
}

// -----

builtin.module @kernels {
  kernel.func @k(%x: !kernel.tensor<i32, 1>) {
    kernel.return
  }
}
host.program @p(%x: tensor<4xi64>) {
  %c = arith.constant 1 : index
  // expected-error @+1 {{'host.launch' argument #0 of type tensor<4xi64> does not match parameter #0 of @kernels::@k (!kernel.tensor<i32, 1>)}}
  host.launch @kernels::@k grid(%c, %c, %c) block [32, 1, 1] smem 0 outs(%x : tensor<4xi64>)
  host.return
}

// -----

// Loops.

%c0 = arith.constant 0 : index
%c4 = arith.constant 4 : index
// expected-error @+1 {{'host.for' constant step 0 must be positive}}
host.for %i = %c0 to %c4 step %c0 {
}

// -----

%c0 = arith.constant 0 : index
// expected-error @+1 {{'host.for' body must have one index argument, the induction variable}}
"host.for"(%c0, %c0, %c0) ({
^bb0(%i: i32):
  "host.yield"() : () -> ()
}) : (index, index, index) -> ()

// -----

%c0 = arith.constant 0 : index
// expected-error @+1 {{'host.for' terminates with operation arith.constant instead of host.yield}}
"host.for"(%c0, %c0, %c0) ({
  %x = arith.constant 1 : index
}) : (index, index, index) -> ()

// -----

// expected-error @+1 {{'host.yield' expects parent op 'host.for'}}
host.yield

// -----

// Streams.

%i = arith.constant -1 : index
// expected-error @+1 {{'host.stream' constant index -1 is negative}}
%s = host.stream %i

// -----

%i = arith.constant 1 : index
// expected-error @+1 {{operand 'stream' at position 0 does not verify:}}
"host.synchronize"(%i) : (index) -> ()

// -----

host.program @k() {
  // expected-error @+1 {{'host.grid' @k is a 'host.program', not a kernel.func}}
  %g:3 = host.grid @k
  host.return
}

// -----

kernel.func @k(%x: !kernel.tensor<f32, 1>) {
  kernel.return
}
host.program @p(%x: tensor<?xf32>, %y: tensor<?xf32>) {
  // expected-error @+1 {{'host.grid' passes 2 arguments to @k, which takes 1}}
  %g:3 = host.grid @k ins(%x, %y : tensor<?xf32>, tensor<?xf32>)
  host.return
}

// -----

host.program @p(%n: index) {
  %ws = host.workspace %n
  // expected-error @+1 {{'host.workspace_view' needs one size operand per dynamic dim of tensor<?xf32>: expected 1, got 0}}
  %t = host.workspace_view %ws[%n] () : tensor<?xf32>
  host.return
}

// -----

host.program @p(%n: index) {
  %ws = host.workspace %n
  %c = arith.constant -256 : index
  // expected-error @+1 {{'host.workspace_view' constant offset -256 is negative}}
  %t = host.workspace_view %ws[%c] () : tensor<4xf32>
  host.return
}

// -----

host.program @p(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'host.reshape' cannot reshape [4, 6] (24 elements) to [5, 5] (25 elements)}}
  %v = host.reshape %x : tensor<4x6xf32> -> tensor<5x5xf32>
  host.return
}

// -----

host.program @p(%n: index) {
  // expected-error @+1 {{'host.iota' takes a length operand exactly where its extent is ?: result [4], a length operand}}
  %r = host.iota(%n) start 0 step 1 : tensor<4xi64>
  host.return
}

// -----

host.program @p(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'host.slice' result dim 0 must be 1 for [3:] of extent 4, got 2}}
  %v = host.slice %x [3:, :] : tensor<4x6xf32> -> tensor<2x6xf32>
  host.return
}

// -----

host.program @p(%x: tensor<4x6x2xf32>) {
  // expected-error @+1 {{'host.permute' dims [0, 0, 1] name a dim twice}}
  %v = host.permute %x [0, 0, 1] : tensor<4x6x2xf32> -> tensor<4x4x6xf32>
  host.return
}

// -----

host.program @p(%x: tensor<4x6x2xf32>) {
  // expected-error @+1 {{'host.permute' result shape [6, 4, 2] must be [2, 4, 6]}}
  %v = host.permute %x [2, 0, 1] : tensor<4x6x2xf32> -> tensor<6x4x2xf32>
  host.return
}

// -----

// Communication.

%a = "test.op"() : () -> tensor<8xf32>
// expected-error @+1 {{'host.allreduce' kind 'avg' must be one of sum, max, min, prod}}
%r, %w = host.allreduce avg %a mesh [0, 1] : tensor<8xf32> -> tensor<8xf32>

// -----

%a = "test.op"() : () -> tensor<8xf32>
// expected-error @+1 {{'host.allreduce' a mesh needs at least one device}}
%r, %w = host.allreduce sum %a mesh [] : tensor<8xf32> -> tensor<8xf32>

// -----

%a = "test.op"() : () -> tensor<8xf32>
// expected-error @+1 {{'host.allreduce' mesh [0, -1] has a negative device}}
%r, %w = host.allreduce sum %a mesh [0, -1] : tensor<8xf32> -> tensor<8xf32>

// -----

%a = "test.op"() : () -> tensor<8xf32>
// expected-error @+1 {{'host.allreduce' mesh [0, 1, 0] lists a device twice}}
%r, %w = host.allreduce sum %a mesh [0, 1, 0] : tensor<8xf32> -> tensor<8xf32>

// -----

// expected-error @+1 {{'host.allreduce' needs at least one tensor operand}}
%w = "host.allreduce"() <{reduction = "sum", mesh = array<i64: 0, 1>, operandSegmentSizes = array<i32: 0, 0>}> : () -> !host.work

// -----

%a, %b = "test.op"() : () -> (tensor<8xf32>, tensor<4xf32>)
// expected-error @+1 {{'host.allreduce' has 2 operands and 1 tensor results: expected one result per operand}}
%r, %w = "host.allreduce"(%a, %b) <{reduction = "sum", mesh = array<i64: 0, 1>, operandSegmentSizes = array<i32: 2, 0>}> : (tensor<8xf32>, tensor<4xf32>) -> (tensor<8xf32>, !host.work)

// -----

%a, %b = "test.op"() : () -> (tensor<?xf32>, tensor<8xf32>)
// expected-error @+1 {{'host.allreduce' result #1 has type tensor<4xf32>, expected tensor<8xf32>, the type of operand #1}}
%r0, %r1, %w = host.allreduce sum %a, %b mesh [0, 1] : tensor<?xf32>, tensor<8xf32> -> tensor<?xf32>, tensor<4xf32>

// -----

%a = "test.op"() : () -> tensor<8xui8>
// expected-error @+1 {{'host.allreduce' operand #0 has type tensor<8xui8>, expected a ranked tensor of f16, bf16, f32, f64, i32, i64 or i1}}
%r, %w = host.allreduce sum %a mesh [0, 1] : tensor<8xui8> -> tensor<8xui8>

// -----

%a, %b = "test.op"() : () -> (tensor<8xf32>, tensor<8xf32>)
// expected-error @+1 {{'host.allreduce' operand #1 has 2 uses: the allreduce reduces in place into its buffer, so it must be the operand's only use}}
%r0, %r1, %r2, %w = host.allreduce sum %a, %b, %b mesh [0, 1] : tensor<8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<8xf32>, tensor<8xf32>

// -----

host.program @p(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'host.allreduce' operand #0 has 2 uses: the allreduce reduces in place into its buffer, so it must be the operand's only use}}
  %r, %w = host.allreduce sum %a mesh [0, 1] : tensor<8xf32> -> tensor<8xf32>
  host.return %a : tensor<8xf32>
}

// -----

%x = "test.op"() : () -> tensor<8x?xf32>
// expected-error @+1 {{'host.reduce_scatter' kind 'mean' must be one of sum, max, min, prod}}
%r, %w = host.reduce_scatter mean %x along 0 mesh [0, 1] : tensor<8x?xf32> -> tensor<4x?xf32>

// -----

%x = "test.op"() : () -> tensor<8x?xf32>
// expected-error @+1 {{'host.reduce_scatter' mesh [1, 1] lists a device twice}}
%r, %w = host.reduce_scatter sum %x along 0 mesh [1, 1] : tensor<8x?xf32> -> tensor<4x?xf32>

// -----

%x = "test.op"() : () -> tensor<8x?xf32>
// expected-error @+1 {{'host.reduce_scatter' along 2 is out of range for rank 2}}
%r, %w = host.reduce_scatter sum %x along 2 mesh [0, 1] : tensor<8x?xf32> -> tensor<4x?xf32>

// -----

%x = "test.op"() : () -> tensor<6x?xf32>
// expected-error @+1 {{'host.reduce_scatter' dim 0 of tensor<6x?xf32> (extent 6) is not divisible by the mesh size 4}}
%r, %w = host.reduce_scatter sum %x along 0 mesh [0, 1, 2, 3] : tensor<6x?xf32> -> tensor<1x?xf32>

// -----

%x = "test.op"() : () -> tensor<8x?xf32>
// expected-error @+1 {{'host.reduce_scatter' result tensor<8x?xf64> must be the operand with dim 1 divided by the mesh size 2: expected tensor<8x?xf32>}}
%r, %w = host.reduce_scatter sum %x along 1 mesh [0, 1] : tensor<8x?xf32> -> tensor<8x?xf64>

// -----

%x = "test.op"() : () -> tensor<8x?xf32>
// expected-error @+1 {{'host.reduce_scatter' result tensor<8x?xf32> must be the operand with dim 0 divided by the mesh size 2: expected tensor<4x?xf32>}}
%r, %w = host.reduce_scatter sum %x along 0 mesh [0, 1] : tensor<8x?xf32> -> tensor<8x?xf32>

// -----

%x = "test.op"() : () -> tensor<4x2xf32>
// expected-error @+1 {{'host.allgather' result tensor<4x2xf32> must be the operand with dim 1 times the mesh size 2: expected tensor<4x4xf32>}}
%r, %w = host.allgather %x along 1 mesh [0, 1] : tensor<4x2xf32> -> tensor<4x2xf32>

// -----

%x = "test.op"() : () -> tensor<4x2xf32>
// expected-error @+1 {{'host.allgather' along -1 is out of range for rank 2}}
%r, %w = host.allgather %x along -1 mesh [0, 1] : tensor<4x2xf32> -> tensor<4x2xf32>

// -----

%x = "test.op"() : () -> tensor<4x2xi8>
// expected-error @+1 {{'host.allgather' operand has type tensor<4x2xi8>, expected a ranked tensor of f16, bf16, f32, f64, i32, i64 or i1}}
%r, %w = host.allgather %x along 0 mesh [0, 1] : tensor<4x2xi8> -> tensor<8x2xi8>

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
// expected-error @+1 {{'host.broadcast' root 2 is not in the mesh [0, 1]}}
%r, %w = host.broadcast %x root 2 mesh [0, 1] : tensor<4x8xf32> -> tensor<4x8xf32>

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
// expected-error @+1 {{'host.broadcast' result tensor<4x?xf32> must have the operand's type tensor<4x8xf32>}}
%r, %w = host.broadcast %x root 0 mesh [0, 1] : tensor<4x8xf32> -> tensor<4x?xf32>

// -----

// expected-error @+1 {{'host.broadcast' result tensor<4x?xf32> is not static: the receiving rank allocates the result, so its shape must be static}}
%r, %w = host.broadcast root 0 mesh [0, 1] : tensor<4x?xf32>

// -----

// expected-error @+1 {{'host.broadcast' a mesh needs at least one device}}
%r, %w = host.broadcast root 0 mesh [] : tensor<4x8xf32>

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
// expected-error @+1 {{'host.send' peer -1 is negative}}
%w = host.send %x to -1 : tensor<4x8xf32>

// -----

// expected-error @+1 {{'host.recv' peer -2 is negative}}
%r, %w = host.recv from -2 : tensor<4x8xf32>

// -----

// expected-error @+1 {{'host.recv' result tensor<?x8xf32> is not static: the receiving rank allocates the result, so its shape must be static}}
%r, %w = host.recv from 0 : tensor<?x8xf32>

// -----

%s = "test.op"() : () -> !host.stream
// expected-error @+1 {{operand 'work' at position 0 does not verify:}}
"host.wait"(%s) : (!host.stream) -> ()

// -----

host.program @p(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'host.run_fusion' no fusion.fusion @stage0 in the module}}
  %y = host.run_fusion @stage0(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  host.return
}

// -----

kernel.func @stage0(%x: !kernel.tensor<f32, 2>) {
  kernel.return
}
host.program @p(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'host.run_fusion' @stage0 is a 'kernel.func', not a fusion.fusion}}
  %y = host.run_fusion @stage0(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  host.return
}

// -----

fusion.fusion @stage0(%x: tensor<?x8xf32>, %alpha: f32) -> (tensor<?x8xf32>) {
  %y = fusion.mul %x, %alpha : (tensor<?x8xf32>, f32) -> tensor<?x8xf32>
  fusion.output %y : tensor<?x8xf32>
}
host.program @p(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'host.run_fusion' passes 1 arguments to @stage0, which takes 2}}
  %y = host.run_fusion @stage0(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  host.return
}

// -----

fusion.fusion @stage0(%x: tensor<?x8xf32>, %alpha: f32) -> (tensor<?x8xf32>) {
  %y = fusion.mul %x, %alpha : (tensor<?x8xf32>, f32) -> tensor<?x8xf32>
  fusion.output %y : tensor<?x8xf32>
}
host.program @p(%x: tensor<?x8xf32>, %alpha: f64) {
  // expected-error @+1 {{'host.run_fusion' argument #1 of type f64 does not match input #1 of @stage0 (f32)}}
  %y = host.run_fusion @stage0(%x, %alpha) : (tensor<?x8xf32>, f64) -> tensor<?x8xf32>
  host.return
}

// -----

fusion.fusion @stage0(%x: tensor<?x8xf32>, %alpha: f32) -> (tensor<?x8xf32>) {
  %y = fusion.mul %x, %alpha : (tensor<?x8xf32>, f32) -> tensor<?x8xf32>
  fusion.output %y : tensor<?x8xf32>
}
host.program @p(%x: tensor<?x8xf32>, %alpha: f32) {
  // expected-error @+1 {{'host.run_fusion' has 2 results, but @stage0 has 1 outputs}}
  %y, %z = host.run_fusion @stage0(%x, %alpha) : (tensor<?x8xf32>, f32) -> (tensor<?x8xf32>, tensor<?x8xf32>)
  host.return
}

// -----

fusion.fusion @stage0(%x: tensor<?x8xf32>, %alpha: f32) -> (tensor<?x8xf32>) {
  %y = fusion.mul %x, %alpha : (tensor<?x8xf32>, f32) -> tensor<?x8xf32>
  fusion.output %y : tensor<?x8xf32>
}
host.program @p(%x: tensor<?x8xf32>, %alpha: f32) {
  // expected-error @+1 {{'host.run_fusion' result #0 of type tensor<4x8xf32> does not match output #0 of @stage0 (tensor<?x8xf32>)}}
  %y = host.run_fusion @stage0(%x, %alpha) : (tensor<?x8xf32>, f32) -> tensor<4x8xf32>
  host.return
}
