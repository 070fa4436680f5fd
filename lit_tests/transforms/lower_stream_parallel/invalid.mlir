// fusion.stream_axis must be a full logical axis that the op's slices are computed along; the
// error is reported at the op that carries it (file:line:col), and fuser-opt exits 1.
// RUN: fuser-opt %s --split-input-file --verify-diagnostics
// RUN: not fuser-opt %s 2>&1 | filecheck %s --check-prefix=EXIT

fusion.fusion @out_of_range(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'fusion.set' fusion.stream_axis 2 is out of range for its result tensor<?x?xf32> (rank 2)}}
  %y = fusion.set %x {fusion.stream_axis = 2 : i64} : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}

// EXIT: invalid.mlir:8:3: error: 'fusion.set' fusion.stream_axis 2 is out of range
// EXIT-NOT: Traceback

// -----

fusion.fusion @negative(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'fusion.exp' fusion.stream_axis -1 is out of range for its result tensor<?x?xf32> (rank 2)}}
  %y = fusion.exp %x {fusion.stream_axis = -1 : i64} : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}

// -----

fusion.fusion @not_i64(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'fusion.exp' fusion.stream_axis must be an i64, got "rows"}}
  %y = fusion.exp %x {fusion.stream_axis = "rows"} : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}

// -----

fusion.fusion @scalar_result(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'fusion.dim' fusion.stream_axis needs tensor results, got index}}
  %n = fusion.dim %x[0] {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  fusion.output %x : tensor<?x?xf32>
}

// -----

fusion.fusion @reduced_axis(%x: tensor<?x?xf32>) -> tensor<?x1xf32> {
  // expected-error @+1 {{'fusion.sum' fusion.stream_axis 1 is a reduced dim: a stream axis must be one the reduction keeps}}
  %s = fusion.sum %x [1] keepdim {fusion.stream_axis = 1 : i64} : tensor<?x?xf32> -> tensor<?x1xf32>
  fusion.output %s : tensor<?x1xf32>
}

// -----

fusion.fusion @scanned_axis(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'fusion.cumsum' fusion.stream_axis 1 is the scanned dim: a stream axis must be one the op does not walk}}
  %s = fusion.cumsum %x along 1 {fusion.stream_axis = 1 : i64} : tensor<?x?xf32>
  fusion.output %s : tensor<?x?xf32>
}

// -----

fusion.fusion @sorted_axis(%x: tensor<?x?xf32>) -> tensor<?x?xi64> {
  // expected-error @+1 {{'fusion.argsort' fusion.stream_axis 1 is the sorted dim: a stream axis must be one the op does not walk}}
  %s = fusion.argsort %x along 1 {fusion.stream_axis = 1 : i64} : tensor<?x?xf32> -> tensor<?x?xi64>
  fusion.output %s : tensor<?x?xi64>
}

// -----

fusion.fusion @expanded(%b: tensor<1x?xf32>, %x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %n = fusion.dim %x[0] : tensor<?x?xf32>
  // expected-error @+1 {{'fusion.broadcast_in_dim' fusion.stream_axis 0 is expanded from extent 1 (operand dim 0): a stream axis must be carried by the operand or be a new dim}}
  %bb = fusion.broadcast_in_dim %b [0, 1] sizes(%n) {fusion.stream_axis = 0 : i64} : tensor<1x?xf32> -> tensor<?x?xf32>
  fusion.output %bb : tensor<?x?xf32>
}

// -----

fusion.fusion @matmul_m(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'fusion.matmul' fusion.stream_axis 0 is M: a stream axis of a matmul must be a batch dim (one of the first 0)}}
  %c = fusion.matmul %a, %b {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  fusion.output %c : tensor<?x?xf32>
}

// -----

fusion.fusion @segment_set(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'fusion.segment_set' cannot be stream-parallel (fusion.stream_axis)}}
  %y = fusion.segment_set %x {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}

