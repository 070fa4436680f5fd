// Streams: the current stream, a pool of streams, synchronization, and launches on streams.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP
// RUN: fuser-opt %s --print-op-generic | filecheck %s --check-prefix=CHECK-GENERIC

kernel.func @scale_row(%x: !kernel.tensor<f32, 1>, %alpha: f32, %y: !kernel.tensor<f32, 1>) attributes {max_threads = 256 : i64} {
  kernel.return
}

// Scales each row of a [B, D] batch on its own stream of a pool of 4 (row i on stream i mod 4),
// then makes the original stream wait for all of them.
host.program @batched(%x: tensor<?x?xf32>, %alpha: f32) -> tensor<?x?xf32> {
  %b = host.dim %x[0] : tensor<?x?xf32>
  %d = host.dim %x[1] : tensor<?x?xf32>
  %y = host.allocate(%b, %d) : tensor<?x?xf32>
  %main = host.get_current_stream : !host.stream
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c255 = arith.constant 255 : index
  %c256 = arith.constant 256 : index
  %dp = arith.addi %d, %c255 : index
  %blocks = arith.divui %dp, %c256 : index
  host.for %i = %c0 to %b step %c1 {
    %slot = arith.remui %i, %c4 : index
    %s = host.stream %slot
    host.set_current_stream %s
    host.synchronize %main
    %xi = host.alias_select %x[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
    %yi = host.alias_select %y[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
    host.launch @scale_row grid(%blocks, %c1, %c1) block [256, 1, 1] smem 0 ins(%xi, %alpha : tensor<?xf32>, f32) outs(%yi : tensor<?xf32>)
  }
  host.set_current_stream %main
  host.for %j = %c0 to %c4 step %c1 {
    %s = host.stream %j
    host.synchronize %s
  }
  // The same work without switching the current stream: `on` names the stream of one launch.
  %s1 = host.stream %c1
  %x0 = host.alias_select %x[%c0] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
  %y0 = host.alias_select %y[%c0] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
  host.launch @scale_row grid(%blocks, %c1, %c1) block [256, 1, 1] smem 0 ins(%x0, %alpha : tensor<?xf32>, f32) outs(%y0 : tensor<?xf32>) on %s1
  host.synchronize %s1
  host.return %y : tensor<?x?xf32>
}

// CHECK:      %main = host.get_current_stream : !host.stream
// CHECK:      host.for %i = %c0 to %b step %c1 {
// CHECK-NEXT:   %slot = arith.remui %i, %c4 : index
// CHECK-NEXT:   %s = host.stream %slot
// CHECK-NEXT:   host.set_current_stream %s
// CHECK-NEXT:   host.synchronize %main
// CHECK-NEXT:   %xi = host.alias_select %x[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:   %yi = host.alias_select %y[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:   host.launch @scale_row grid(%blocks, %c1, %c1) block [256, 1, 1] smem 0 ins(%xi, %alpha : tensor<?xf32>, f32) outs(%yi : tensor<?xf32>)
// CHECK-NEXT: }
// CHECK-NEXT: host.set_current_stream %main
// CHECK-NEXT: host.for %j = %c0 to %c4 step %c1 {
// CHECK-NEXT:   %s_1 = host.stream %j
// CHECK-NEXT:   host.synchronize %s_1
// CHECK-NEXT: }
// CHECK-NEXT: %s1 = host.stream %c1
// CHECK:      host.launch @scale_row grid(%blocks, %c1, %c1) block [256, 1, 1] smem 0 ins(%x0, %alpha : tensor<?xf32>, f32) outs(%y0 : tensor<?xf32>) on %s1
// CHECK-NEXT: host.synchronize %s1

// CHECK-GENERIC:      %main = "host.get_current_stream"() : () -> !host.stream
// CHECK-GENERIC:      %s = "host.stream"(%slot) : (index) -> !host.stream
// CHECK-GENERIC-NEXT: "host.set_current_stream"(%s) : (!host.stream) -> ()
// CHECK-GENERIC-NEXT: "host.synchronize"(%main) : (!host.stream) -> ()
// CHECK-GENERIC:      "host.launch"(%blocks, %c1, %c1, %x0, %alpha, %y0, %s1) <{kernel = @scale_row, block = array<i64: 256, 1, 1>, smem = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 2, 1, 1>}> : (index, index, index, tensor<?xf32>, f32, tensor<?xf32>, !host.stream) -> ()
