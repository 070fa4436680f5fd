// kernel.func, its parameters and max_threads, thread geometry, tensor extents and strides,
// comments: a strided pointwise kernel as the CUDA emitter receives it.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP
// RUN: fuser-opt %s --print-op-generic | filecheck %s --check-prefix=CHECK-GENERIC

// y[i, j] = exp(x[i, j]) * alpha for a [N, D] tensor of any strides, one element per thread.
kernel.func @exp_scale(%x: !kernel.tensor<f32, 2>, %alpha: f32, %y: !kernel.tensor<bf16, 2>) attributes {max_threads = 128 : i64} {
  kernel.comment "fusion.exp %e"
  %tid = kernel.thread_id x : i32
  %bid = kernel.block_id x : i32
  %bdim = kernel.block_dim x : i32
  %tid64 = arith.extsi %tid : i32 to i64
  %bid64 = arith.extsi %bid : i32 to i64
  %bdim64 = arith.extsi %bdim : i32 to i64
  %base = arith.muli %bid64, %bdim64 : i64
  %lin = arith.addi %base, %tid64 : i64
  %n = kernel.size %x[0] : !kernel.tensor<f32, 2>
  %d = kernel.size %x[1] : !kernel.tensor<f32, 2>
  %total = arith.muli %n, %d : i64
  %in = arith.cmpi slt, %lin, %total : i64
  scf.if %in {
    %i = arith.divsi %lin, %d : i64
    %j = arith.remsi %lin, %d : i64
    %xs0 = kernel.stride %x[0] : !kernel.tensor<f32, 2>
    %xs1 = kernel.stride %x[1] : !kernel.tensor<f32, 2>
    %xo0 = arith.muli %i, %xs0 : i64
    %xo1 = arith.muli %j, %xs1 : i64
    %xoff = arith.addi %xo0, %xo1 : i64
    %v = kernel.load %x[%xoff] : !kernel.tensor<f32, 2>, i64 -> f32
    %e = math.exp %v : f32
    kernel.comment "fusion.mul %s"
    %s = arith.mulf %e, %alpha : f32
    %h = arith.truncf %s : f32 to bf16
    %ys0 = kernel.stride %y[0] : !kernel.tensor<bf16, 2>
    %ys1 = kernel.stride %y[1] : !kernel.tensor<bf16, 2>
    %yo0 = arith.muli %i, %ys0 : i64
    %yo1 = arith.muli %j, %ys1 : i64
    %yoff = arith.addi %yo0, %yo1 : i64
    kernel.store %h, %y[%yoff] : bf16, !kernel.tensor<bf16, 2>, i64
  }
  kernel.return
}

// CHECK:      kernel.func @exp_scale(%x: !kernel.tensor<f32, 2>, %alpha: f32, %y: !kernel.tensor<bf16, 2>) attributes {max_threads = 128 : i64} {
// CHECK-NEXT:   kernel.comment "fusion.exp %e"
// CHECK-NEXT:   %tid = kernel.thread_id x : i32
// CHECK-NEXT:   %bid = kernel.block_id x : i32
// CHECK-NEXT:   %bdim = kernel.block_dim x : i32
// CHECK:        %n = kernel.size %x[0] : !kernel.tensor<f32, 2>
// CHECK-NEXT:   %d = kernel.size %x[1] : !kernel.tensor<f32, 2>
// CHECK:        scf.if %in {
// CHECK:          %xs0 = kernel.stride %x[0] : !kernel.tensor<f32, 2>
// CHECK-NEXT:     %xs1 = kernel.stride %x[1] : !kernel.tensor<f32, 2>
// CHECK:          %v = kernel.load %x[%xoff] : !kernel.tensor<f32, 2>, i64 -> f32
// CHECK-NEXT:     %e = math.exp %v : f32
// CHECK-NEXT:     kernel.comment "fusion.mul %s"
// CHECK:          kernel.store %h, %y[%yoff] : bf16, !kernel.tensor<bf16, 2>, i64
// CHECK-NEXT:   }
// CHECK-NEXT:   kernel.return
// CHECK-NEXT: }

// CHECK-GENERIC:      "kernel.func"() <{sym_name = "exp_scale", function_type = (!kernel.tensor<f32, 2>, f32, !kernel.tensor<bf16, 2>) -> (), max_threads = 128 : i64}> ({
// CHECK-GENERIC-NEXT: ^bb0(%x: !kernel.tensor<f32, 2>, %alpha: f32, %y: !kernel.tensor<bf16, 2>):
// CHECK-GENERIC-NEXT:   "kernel.comment"() <{text = "fusion.exp %e"}> : () -> ()
// CHECK-GENERIC-NEXT:   %tid = "kernel.thread_id"() <{dimension = #kernel<dim x>}> : () -> i32
// CHECK-GENERIC-NEXT:   %bid = "kernel.block_id"() <{dimension = #kernel<dim x>}> : () -> i32
// CHECK-GENERIC-NEXT:   %bdim = "kernel.block_dim"() <{dimension = #kernel<dim x>}> : () -> i32
// CHECK-GENERIC:        %n = "kernel.size"(%x) <{axis = 0 : i64}> : (!kernel.tensor<f32, 2>) -> i64
// CHECK-GENERIC:        %xs1 = "kernel.stride"(%x) <{axis = 1 : i64}> : (!kernel.tensor<f32, 2>) -> i64
// CHECK-GENERIC:        %v = "kernel.load"(%x, %xoff) : (!kernel.tensor<f32, 2>, i64) -> f32
// CHECK-GENERIC:        "kernel.store"(%h, %y, %yoff) : (bf16, !kernel.tensor<bf16, 2>, i64) -> ()
// CHECK-GENERIC:        "kernel.return"() : () -> ()

// Scalars of every element type, i64 geometry along y and z, grid dims, a rank-0 tensor, no
// max_threads, and a discardable attribute next to the properties.
kernel.func @geometry(%out: !kernel.tensor<i64, 3>, %flag: !kernel.tensor<i1, 0>, %a: f16, %b: bf16, %c: f64, %d: i32, %e: i64, %f: i1) attributes {fuser.origin = "test"} {
  %ty = kernel.thread_id y : i64
  %tz = kernel.thread_id z : i64
  %by = kernel.block_id y : i64
  %bz = kernel.block_dim z : i32
  %gx = kernel.grid_dim x : i64
  %gz = kernel.grid_dim z : i32
  %s2 = kernel.stride %out[2] : !kernel.tensor<i64, 3>
  %c0 = arith.constant 0 : i32
  %t = kernel.load %flag[%c0] : !kernel.tensor<i1, 0>, i32 -> i1
  kernel.store %f, %flag[%c0] : i1, !kernel.tensor<i1, 0>, i32
  kernel.store %gx, %out[%c0] : i64, !kernel.tensor<i64, 3>, i32
  kernel.return
}

// CHECK:      kernel.func @geometry(%out: !kernel.tensor<i64, 3>, %flag: !kernel.tensor<i1, 0>, %a: f16, %b: bf16, %c: f64, %d: i32, %e: i64, %f: i1) attributes {fuser.origin = "test"} {
// CHECK-NEXT:   %ty = kernel.thread_id y : i64
// CHECK-NEXT:   %tz = kernel.thread_id z : i64
// CHECK-NEXT:   %by = kernel.block_id y : i64
// CHECK-NEXT:   %bz = kernel.block_dim z : i32
// CHECK-NEXT:   %gx = kernel.grid_dim x : i64
// CHECK-NEXT:   %gz = kernel.grid_dim z : i32
// CHECK-NEXT:   %s2 = kernel.stride %out[2] : !kernel.tensor<i64, 3>
// CHECK-NEXT:   %c0 = arith.constant 0 : i32
// CHECK-NEXT:   %t = kernel.load %flag[%c0] : !kernel.tensor<i1, 0>, i32 -> i1
// CHECK-NEXT:   kernel.store %f, %flag[%c0] : i1, !kernel.tensor<i1, 0>, i32
// CHECK-NEXT:   kernel.store %gx, %out[%c0] : i64, !kernel.tensor<i64, 3>, i32
// CHECK-NEXT:   kernel.return
// CHECK-NEXT: }

// CHECK-GENERIC:      "kernel.func"() <{sym_name = "geometry", function_type = (!kernel.tensor<i64, 3>, !kernel.tensor<i1, 0>, f16, bf16, f64, i32, i64, i1) -> ()}> ({
// CHECK-GENERIC:      %tz = "kernel.thread_id"() <{dimension = #kernel<dim z>}> : () -> i64
// CHECK-GENERIC:      %gz = "kernel.grid_dim"() <{dimension = #kernel<dim z>}> : () -> i32
// CHECK-GENERIC:      }) {fuser.origin = "test"} : () -> ()
