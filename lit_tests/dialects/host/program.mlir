// host.program and host.return, extents, allocation, views and loops.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP
// RUN: fuser-opt %s --print-op-generic | filecheck %s --check-prefix=CHECK-GENERIC

// Allocates an [N, 2*D] result and a static scratch tensor, loops over rows taking views, takes
// a permuted view, and returns the result with a scalar.
host.program @shapes(%x: tensor<?x?xf32>, %w: tensor<3xbf16>, %eps: f32, %k: index) -> (tensor<?x?xf32>, f32) {
  %n = host.dim %x[0] : tensor<?x?xf32>
  %d = host.dim %x[1] : tensor<?x?xf32>
  %c2 = arith.constant 2 : index
  %d2 = arith.muli %d, %c2 : index
  %y = host.allocate(%n, %d2) : tensor<?x?xf32>
  %scratch = host.allocate() : tensor<4x3xi64>
  %flags = host.allocate(%n) : tensor<?x5xi1>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  host.for %i = %c0 to %n step %c1 {
    %row = host.alias_select %y[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
    %col = host.alias_select %x[%i] axis 1 : tensor<?x?xf32> -> tensor<?xf32>
    host.for %j = %c0 to %k step %c2 {
      %s = host.alias_select %scratch[%j] axis 0 : tensor<4x3xi64> -> tensor<3xi64>
      %f = host.alias_select %flags[%j] axis 1 : tensor<?x5xi1> -> tensor<?xi1>
    } attributes {fuser.unroll = 2 : i64}
  }
  %w0 = host.alias_select %w[%c1] axis 0 : tensor<3xbf16> -> tensor<bf16>
  %xt = host.permute %x [1, 0] : tensor<?x?xf32> -> tensor<?x?xf32>
  host.deallocate %scratch : tensor<4x3xi64>
  host.deallocate %flags : tensor<?x5xi1>
  host.return %y, %eps : tensor<?x?xf32>, f32
}

// CHECK:      host.program @shapes(%x: tensor<?x?xf32>, %w: tensor<3xbf16>, %eps: f32, %k: index) -> (tensor<?x?xf32>, f32) {
// CHECK-NEXT:   %n = host.dim %x[0] : tensor<?x?xf32>
// CHECK-NEXT:   %d = host.dim %x[1] : tensor<?x?xf32>
// CHECK-NEXT:   %c2 = arith.constant 2 : index
// CHECK-NEXT:   %d2 = arith.muli %d, %c2 : index
// CHECK-NEXT:   %y = host.allocate(%n, %d2) : tensor<?x?xf32>
// CHECK-NEXT:   %scratch = host.allocate() : tensor<4x3xi64>
// CHECK-NEXT:   %flags = host.allocate(%n) : tensor<?x5xi1>
// CHECK-NEXT:   %c0 = arith.constant 0 : index
// CHECK-NEXT:   %c1 = arith.constant 1 : index
// CHECK-NEXT:   host.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:     %row = host.alias_select %y[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:     %col = host.alias_select %x[%i] axis 1 : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:     host.for %j = %c0 to %k step %c2 {
// CHECK-NEXT:       %s = host.alias_select %scratch[%j] axis 0 : tensor<4x3xi64> -> tensor<3xi64>
// CHECK-NEXT:       %f = host.alias_select %flags[%j] axis 1 : tensor<?x5xi1> -> tensor<?xi1>
// CHECK-NEXT:     } attributes {fuser.unroll = 2 : i64}
// CHECK-NEXT:   }
// CHECK-NEXT:   %w0 = host.alias_select %w[%c1] axis 0 : tensor<3xbf16> -> tensor<bf16>
// CHECK-NEXT:   %xt = host.permute %x [1, 0] : tensor<?x?xf32> -> tensor<?x?xf32>
// CHECK-NEXT:   host.deallocate %scratch : tensor<4x3xi64>
// CHECK-NEXT:   host.deallocate %flags : tensor<?x5xi1>
// CHECK-NEXT:   host.return %y, %eps : tensor<?x?xf32>, f32
// CHECK-NEXT: }

// CHECK-GENERIC:      "host.program"() <{sym_name = "shapes", function_type = (tensor<?x?xf32>, tensor<3xbf16>, f32, index) -> (tensor<?x?xf32>, f32)}> ({
// CHECK-GENERIC-NEXT: ^bb0(%x: tensor<?x?xf32>, %w: tensor<3xbf16>, %eps: f32, %k: index):
// CHECK-GENERIC-NEXT:   %n = "host.dim"(%x) <{axis = 0 : i64}> : (tensor<?x?xf32>) -> index
// CHECK-GENERIC:        %y = "host.allocate"(%n, %d2) : (index, index) -> tensor<?x?xf32>
// CHECK-GENERIC-NEXT:   %scratch = "host.allocate"() : () -> tensor<4x3xi64>
// CHECK-GENERIC:        "host.for"(%c0, %n, %c1) ({
// CHECK-GENERIC-NEXT:   ^bb0(%i: index):
// CHECK-GENERIC-NEXT:     %row = "host.alias_select"(%y, %i) <{axis = 0 : i64}> : (tensor<?x?xf32>, index) -> tensor<?xf32>
// CHECK-GENERIC:          "host.for"(%c0, %k, %c2) ({
// CHECK-GENERIC:            "host.yield"() : () -> ()
// CHECK-GENERIC-NEXT:     }) {fuser.unroll = 2 : i64} : (index, index, index) -> ()
// CHECK-GENERIC-NEXT:     "host.yield"() : () -> ()
// CHECK-GENERIC-NEXT:   }) : (index, index, index) -> ()
// CHECK-GENERIC:        %xt = "host.permute"(%x) <{permutation = array<i64: 1, 0>}> : (tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK-GENERIC:        "host.deallocate"(%scratch) : (tensor<4x3xi64>) -> ()
// CHECK-GENERIC:        "host.return"(%y, %eps) : (tensor<?x?xf32>, f32) -> ()
// CHECK-GENERIC-NEXT: }) : () -> ()

// A program without arguments or results.
host.program @empty() {
  host.return
}

// CHECK:      host.program @empty() {
// CHECK-NEXT:   host.return
// CHECK-NEXT: }

// A workspace (fuser-plan-memory makes these): one allocation, tensors at byte offsets in it.
host.program @workspace(%x: tensor<?xf32>) {
  %n = host.dim %x[0] : tensor<?xf32>
  %c0 = arith.constant 0 : index
  %c4096 = arith.constant 4096 : index
  %ws = host.workspace %c4096
  %a = host.workspace_view %ws[%c0] (%n) : tensor<?xf32>
  %b = host.workspace_view %ws[%c4096] () : tensor<2x3xf16>
  host.release %ws
  host.return
}

// CHECK-LABEL: host.program @workspace
// CHECK:         %ws = host.workspace %c4096
// CHECK-NEXT:    %a = host.workspace_view %ws[%c0] (%n) : tensor<?xf32>
// CHECK-NEXT:    %b = host.workspace_view %ws[%c4096] () : tensor<2x3xf16>
// CHECK-NEXT:    host.release %ws
