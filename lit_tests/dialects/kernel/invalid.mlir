// One case per verifier (or parser) rule of the kernel dialect; each must report its message.
// RUN: fuser-opt %s --split-input-file --verify-diagnostics
// Every case fails: none prints a module.
// RUN: fuser-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=ALL-FAIL
// ALL-FAIL-NOT: builtin.module

// Types.

// expected-error @+1 {{!kernel.tensor element type index is not one of f16, bf16, f32, f64, i32, i64, i1}}
%0 = "test.op"() : () -> !kernel.tensor<index, 2>

// -----

// expected-error @+1 {{!kernel.array size 0 must be at least 1}}
%0 = "test.op"() : () -> !kernel.array<0xf32, local>

// -----

// expected-error @+1 {{!kernel.array element type f8E4M3FN is not one of f16, bf16, f32, f64, i32, i64, i1}}
%0 = "test.op"() : () -> !kernel.array<4xf8E4M3FN, local>

// -----

// expected-error @+1 {{Expected `local`, `shared`, or `dynamic`.}}
%0 = "test.op"() : () -> !kernel.array<4xf32, global>

// -----

// kernel.func and kernel.return.

// expected-error @+1 {{'kernel.func @f' has results; a kernel writes its outputs through tensor parameters}}
"kernel.func"() <{sym_name = "f", function_type = () -> f32}> ({
  "kernel.return"() : () -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'kernel.func @f' block argument types do not match its signature}}
"kernel.func"() <{sym_name = "f", function_type = (f32) -> ()}> ({
^bb0(%x: f64):
  "kernel.return"() : () -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'kernel.func @f' parameter #0 has type tensor<4xf32>, expected a !kernel.tensor or a scalar of f16, bf16, f32, f64, i32, i64, i1}}
kernel.func @f(%x: tensor<4xf32>) {
  kernel.return
}

// -----

// expected-error @+1 {{'kernel.func @f' parameter #0 has type index, expected a !kernel.tensor or a scalar of f16, bf16, f32, f64, i32, i64, i1}}
kernel.func @f(%n: index) {
  kernel.return
}

// -----

// expected-error @+1 {{'kernel.func @f' must end with a 'kernel.return'}}
kernel.func @f() {
  %c = arith.constant 0 : i32
}

// -----

// expected-error @+1 {{'kernel.func @f' max_threads 2048 must be between 1 and 1024}}
kernel.func @f() attributes {max_threads = 2048 : i64} {
  kernel.return
}

// -----

// expected-error @+1 {{'kernel.func @f' max_threads 0 must be between 1 and 1024}}
kernel.func @f() attributes {max_threads = 0 : i64} {
  kernel.return
}

// -----

// expected-error @+1 {{'kernel.func @f' allocates 65536 bytes of shared arrays, more than the 49152 bytes of static shared memory a block may have}}
kernel.func @f() {
  %a = kernel.alloc : !kernel.array<8192xf32, shared>
  %b = kernel.alloc : !kernel.array<4096xf64, shared>
  %c = kernel.alloc : !kernel.array<8192xf32, local>
  kernel.return
}

// -----

// expected-error @+1 {{'kernel.return' expects parent op 'kernel.func'}}
kernel.return

// -----

// Thread geometry.

// expected-error @+1 {{'kernel.thread_id' result has type i16, expected one of i32, i64}}
%t = kernel.thread_id x : i16

// -----

// expected-error @+1 {{'kernel.grid_dim' result has type index, expected one of i32, i64}}
%t = kernel.grid_dim y : index

// -----

// expected-error @+1 {{Expected `x`, `y`, or `z`.}}
%t = kernel.block_id w : i32

// -----

// Tensor parameters.

%x = "test.op"() : () -> !kernel.tensor<f32, 2>
// expected-error @+1 {{'kernel.size' axis 2 is out of range for rank 2}}
%n = kernel.size %x[2] : !kernel.tensor<f32, 2>

// -----

%x = "test.op"() : () -> !kernel.tensor<f32, 0>
// expected-error @+1 {{'kernel.stride' axis 0 is out of range for rank 0}}
%n = kernel.stride %x[0] : !kernel.tensor<f32, 0>

// -----

%x, %i = "test.op"() : () -> (!kernel.tensor<f32, 1>, index)
// expected-error @+1 {{'kernel.load' index has type index, expected one of i32, i64}}
%v = kernel.load %x[%i] : !kernel.tensor<f32, 1>, index -> f32

// -----

%x, %i = "test.op"() : () -> (!kernel.tensor<f16, 1>, i64)
// expected-error @+1 {{'kernel.load' result type f32 does not match element type f16}}
%v = kernel.load %x[%i] : !kernel.tensor<f16, 1>, i64 -> f32

// -----

%x, %i = "test.op"() : () -> (!kernel.tensor<f16, 1>, i64)
// expected-error @+1 {{'kernel.load' result type vector<4xf32> does not match element type f16}}
%v = kernel.load %x[%i] : !kernel.tensor<f16, 1>, i64 -> vector<4xf32>

// -----

%x, %i = "test.op"() : () -> (!kernel.tensor<f32, 1>, i64)
// expected-error @+1 {{'kernel.load' vector width 3 must be one of 2, 4, 8}}
%v = kernel.load %x[%i] : !kernel.tensor<f32, 1>, i64 -> vector<3xf32>

// -----

%x, %i = "test.op"() : () -> (!kernel.tensor<f32, 1>, i64)
// expected-error @+1 {{'kernel.load' vector vector<8xf32> is 32 bytes, more than 16}}
%v = kernel.load %x[%i] : !kernel.tensor<f32, 1>, i64 -> vector<8xf32>

// -----

%x, %i = "test.op"() : () -> (!kernel.tensor<f32, 1>, i64)
// expected-error @+1 {{'kernel.load' result type vector<2x2xf32> must be a 1-d, fixed-size vector}}
%v = kernel.load %x[%i] : !kernel.tensor<f32, 1>, i64 -> vector<2x2xf32>

// -----

%c, %a, %b, %i = "test.op"() : () -> (i1, !kernel.tensor<f32, 1>, !kernel.tensor<f16, 1>, i64)
// expected-error @+1 {{'kernel.select_load' reads tensors of element types f32 and f16: they must be the same}}
%v = kernel.select_load %c, %a[%i], %b[%i] : !kernel.tensor<f32, 1>, i64, !kernel.tensor<f16, 1>, i64 -> f32

// -----

%c, %a, %i, %j = "test.op"() : () -> (i1, !kernel.tensor<f32, 1>, i64, index)
// expected-error @+1 {{'kernel.select_load' index has type index, expected one of i32, i64}}
%v = kernel.select_load %c, %a[%i], %a[%j] : !kernel.tensor<f32, 1>, i64, !kernel.tensor<f32, 1>, index -> f32

// -----

%c, %a, %i = "test.op"() : () -> (i1, !kernel.tensor<f16, 2>, i32)
// expected-error @+1 {{'kernel.select_load' result type vector<4xf32> does not match element type f16}}
%v = kernel.select_load %c, %a[%i], %a[%i] : !kernel.tensor<f16, 2>, i32, !kernel.tensor<f16, 2>, i32 -> vector<4xf32>

// -----

%c, %a, %i = "test.op"() : () -> (i32, !kernel.tensor<f32, 1>, i32)
// expected-error @+1 {{operand is used with type i1, but has been previously used or defined with type i32}}
%v = kernel.select_load %c, %a[%i], %a[%i] : !kernel.tensor<f32, 1>, i32, !kernel.tensor<f32, 1>, i32 -> f32

// -----

%x, %i, %v = "test.op"() : () -> (!kernel.tensor<i32, 1>, i32, i64)
// expected-error @+1 {{'kernel.store' value type i64 does not match element type i32}}
kernel.store %v, %x[%i] : i64, !kernel.tensor<i32, 1>, i32

// -----

%x, %i, %v = "test.op"() : () -> (!kernel.tensor<f64, 1>, i32, vector<4xf64>)
// expected-error @+1 {{'kernel.store' vector vector<4xf64> is 32 bytes, more than 16}}
kernel.store %v, %x[%i] : vector<4xf64>, !kernel.tensor<f64, 1>, i32

// -----

%x, %i, %v = "test.op"() : () -> (!kernel.tensor<f32, 1>, i1, f32)
// expected-error @+1 {{'kernel.store' index has type i1, expected one of i32, i64}}
kernel.store %v, %x[%i] : f32, !kernel.tensor<f32, 1>, i1

// -----

// Arrays.

%a = kernel.alloc : !kernel.array<8xf32, local>
%i = arith.constant 8 : i32
// expected-error @+1 {{'kernel.array_load' constant index 8 is out of bounds for 8 elements}}
%v = kernel.array_load %a[%i] : !kernel.array<8xf32, local>, i32 -> f32

// -----

%a = kernel.alloc : !kernel.array<7xf32, shared>
%i = arith.constant 4 : i64
%v = "test.op"() : () -> vector<4xf32>
// expected-error @+1 {{'kernel.array_store' constant index [4, 8) is out of bounds for 7 elements}}
kernel.array_store %v, %a[%i] : vector<4xf32>, !kernel.array<7xf32, shared>, i64

// -----

%a = kernel.alloc : !kernel.array<8xf32, local>
%i = arith.constant -1 : i32
%v = arith.constant 1.0 : f32
// expected-error @+1 {{'kernel.array_store' constant index -1 is out of bounds for 8 elements}}
kernel.array_store %v, %a[%i] : f32, !kernel.array<8xf32, local>, i32

// -----

// expected-error @+1 {{'kernel.alloc' zeroed needs a local array, got shared: a shared array is one per block, and its threads would race to clear it}}
%a = kernel.alloc zeroed : !kernel.array<8xf32, shared>

// -----

%a = kernel.alloc : !kernel.array<8xi32, local>
%i = "test.op"() : () -> i64
// expected-error @+1 {{'kernel.array_load' result type i64 does not match element type i32}}
%v = kernel.array_load %a[%i] : !kernel.array<8xi32, local>, i64 -> i64

// -----

%a = kernel.alloc : !kernel.array<8xf32, local>
%i = "test.op"() : () -> i8
// expected-error @+1 {{'kernel.array_load' index has type i8, expected one of i32, i64}}
%v = kernel.array_load %a[%i] : !kernel.array<8xf32, local>, i8 -> f32

// -----

// Reductions.

%v = "test.op"() : () -> f16
// expected-error @+1 {{'kernel.warp_reduce' operand has type f16, expected one of f32, f64, i32, i64}}
%r = kernel.warp_reduce sum %v : f16

// -----

%v = "test.op"() : () -> i1
// expected-error @+1 {{'kernel.block_reduce' operand has type i1, expected one of f32, f64, i32, i64}}
%r = kernel.block_reduce max %v along x : i1

// -----

%v = "test.op"() : () -> f32
// expected-error @+1 {{'kernel.block_reduce' reduces along x or y, not z}}
%r = kernel.block_reduce sum %v along z : f32

// -----

%v = "test.op"() : () -> f32
// expected-error @+1 {{Expected `sum`, `max`, `min`, or `prod`.}}
%r = kernel.warp_reduce mean %v : f32

// -----

%v = "test.op"() : () -> f32
// expected-error @+1 {{result 'result' at position 0 does not verify:}}
%r = "kernel.warp_reduce"(%v) <{kind = #kernel<reduce_kind sum>}> : (f32) -> f64

// -----

%v = "test.op"() : () -> i64
// expected-error @+1 {{'kernel.warp_welford' state has type i64, expected one of f32, f64}}
%a, %m, %n = kernel.warp_welford %v, %v, %v : i64

// -----

%v = "test.op"() : () -> f32
// expected-error @+1 {{'kernel.block_welford' reduces along x or y, not z}}
%a, %m, %n = kernel.block_welford %v, %v, %v along z : f32

// -----

%v, %w, %s = "test.op"() : () -> (f32, !kernel.tensor<f64, 1>, !kernel.tensor<i32, 1>)
// expected-error @+1 {{'kernel.grid_reduce' work buffer has type !kernel.tensor<f64, 1>, expected !kernel.tensor<f32, 1>}}
%r, %last = kernel.grid_reduce sum %v, %w, %s along x : f32, !kernel.tensor<f64, 1>, !kernel.tensor<i32, 1>

// -----

%v, %w, %s = "test.op"() : () -> (f32, !kernel.tensor<f32, 2>, !kernel.tensor<i32, 1>)
// expected-error @+1 {{'kernel.grid_reduce' work buffer has type !kernel.tensor<f32, 2>, expected !kernel.tensor<f32, 1>}}
%r, %last = kernel.grid_reduce max %v, %w, %s along x : f32, !kernel.tensor<f32, 2>, !kernel.tensor<i32, 1>

// -----

%v, %w, %s = "test.op"() : () -> (f32, !kernel.tensor<f32, 1>, !kernel.tensor<i64, 1>)
// expected-error @+1 {{'kernel.grid_reduce' semaphore has type !kernel.tensor<i64, 1>, expected !kernel.tensor<i32, 1>}}
%r, %last = kernel.grid_reduce min %v, %w, %s along y : f32, !kernel.tensor<f32, 1>, !kernel.tensor<i64, 1>

// -----

%v, %w, %s = "test.op"() : () -> (bf16, !kernel.tensor<bf16, 1>, !kernel.tensor<i32, 1>)
// expected-error @+1 {{'kernel.grid_reduce' operand has type bf16, expected one of f32, f64, i32, i64}}
%r, %last = kernel.grid_reduce sum %v, %w, %s along x : bf16, !kernel.tensor<bf16, 1>, !kernel.tensor<i32, 1>

// -----

// Comments.

// expected-error @+1 {{'kernel.comment' text must be a single line}}
kernel.comment "two\nlines"

// -----

// Asynchronous copies.

%x = "test.op"() : () -> !kernel.tensor<f32, 1>
%a = kernel.alloc : !kernel.array<8xf32, local>
%i = "test.op"() : () -> i32
%ok = "test.op"() : () -> i1
// expected-error @+1 {{'kernel.copy_async' copies into a shared array, not a local one}}
kernel.copy_async %x[%i], %a[%i] elements 4 if %ok : !kernel.tensor<f32, 1>, i32, !kernel.array<8xf32, local>, i32

// -----

%x = "test.op"() : () -> !kernel.tensor<bf16, 1>
%a = kernel.alloc : !kernel.array<64xbf16, dynamic>
%i = "test.op"() : () -> i32
%ok = "test.op"() : () -> i1
// expected-error @+1 {{'kernel.copy_async' copies 1 x bf16 = 2 bytes, not one of 4, 8, 16}}
kernel.copy_async %x[%i], %a[%i] elements 1 if %ok : !kernel.tensor<bf16, 1>, i32, !kernel.array<64xbf16, dynamic>, i32

// -----

%x = "test.op"() : () -> !kernel.tensor<f32, 1>
%a = kernel.alloc : !kernel.array<64xbf16, shared>
%i = "test.op"() : () -> i32
%ok = "test.op"() : () -> i1
// expected-error @+1 {{'kernel.copy_async' array element type bf16 does not match the tensor's f32}}
kernel.copy_async %x[%i], %a[%i] elements 4 if %ok : !kernel.tensor<f32, 1>, i32, !kernel.array<64xbf16, shared>, i32

// -----

%x = "test.op"() : () -> !kernel.tensor<f32, 1>
%a = kernel.alloc : !kernel.array<8xf32, shared>
%i = arith.constant 6 : i32
%ok = "test.op"() : () -> i1
// expected-error @+1 {{'kernel.copy_async' constant index [6, 10) is out of bounds for 8 elements}}
kernel.copy_async %x[%i], %a[%i] elements 4 if %ok : !kernel.tensor<f32, 1>, i32, !kernel.array<8xf32, shared>, i32

// -----

// expected-error @+1 {{'kernel.copy_async_wait' pending must be between 0 and 7}}
kernel.copy_async_wait pending 8

// -----

// expected-error @+1 {{'kernel.alloc' zeroed needs a local array, got dynamic: a shared array is one per block, and its threads would race to clear it}}
%a = kernel.alloc zeroed : !kernel.array<8xf32, dynamic>

// -----

kernel.func @f(%s: i64, %b: i32) {
  // expected-error @+1 {{'kernel.random' result must be f32 or f64, got bf16}}
  %r = kernel.random uniform %s, %s, %b, %b : i32 -> bf16
  kernel.return
}

// -----

kernel.func @f(%s: i64, %b: f32) {
  // expected-error @+1 {{'kernel.random' subsequence and component must be i32 or i64, got f32}}
  %r = kernel.random uniform %s, %s, %b, %b : f32 -> f32
  kernel.return
}
