// A marked loop lower-stream-parallel cannot spread over streams: it must run from 0 by 1.
// RUN: not fuser-opt %s -p 'lower-stream-parallel' 2>&1 | filecheck %s

kernel.func @row(%x: !kernel.tensor<f32, 1>, %y: !kernel.tensor<f32, 1>) {
  kernel.return
}

host.program @odd_rows(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = host.dim %x[0] : tensor<?x?xf32>
  host.for %i = %c1 to %n step %c2 {
    %xi = host.alias_select %x[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
    %yi = host.alias_select %y[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
    host.launch @row grid(%c1, %c1, %c1) block [32, 1, 1] smem 0 ins(%xi : tensor<?xf32>) outs(%yi : tensor<?xf32>)
  } attributes {fuser.stream_parallel}
  host.return %y : tensor<?x?xf32>
}

// CHECK: fuser-opt: error: lower-stream-parallel: a host.for marked fuser.stream_parallel in @odd_rows must run from a constant 0 with step 1
// CHECK-NOT: Traceback
