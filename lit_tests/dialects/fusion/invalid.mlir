// One case per verifier rule of every fusion op; each prints a located diagnostic.
// Messages from xDSL's own type constraints (a result type that differs from the operand type a
// constraint requires, a scalar where a tensor is required) do not name the op.
// RUN: fuser-opt %s --split-input-file --verify-diagnostics

// fusion.fusion: block arguments must match the signature
// expected-error @+1 {{'fusion.fusion @f' block argument types do not match its signature}}
"fusion.fusion"() <{sym_name = "f", function_type = (tensor<4xf32>) -> ()}> ({
^bb0(%x: tensor<5xf32>):
  "fusion.output"() : () -> ()
}) : () -> ()

// -----

// fusion.fusion: inputs are tensors or scalars of an element type (i8 is not one)
// expected-error @+1 {{'fusion.fusion @f' input #1 has type tensor<4xi8>, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1}}
fusion.fusion @f(%x: tensor<4xf32>, %y: tensor<4xi8>) -> () {
  fusion.output
}

// -----

// fusion.fusion: an index is not an input
// expected-error @+1 {{'fusion.fusion @f' input #0 has type index, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1}}
fusion.fusion @f(%n: index) -> () {
  fusion.output
}

// -----

// fusion.fusion: the body ends with fusion.output
// expected-error @+1 {{'fusion.fusion @f' must end with a 'fusion.output'}}
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  %y = fusion.neg %x : tensor<4xf32>
}

// -----

// fusion.fusion: the outputs match the signature
// expected-error @+1 {{'fusion.fusion @f' outputs (tensor<4xf32>) do not match its signature (tensor<?xf32>)}}
fusion.fusion @f(%x: tensor<4xf32>) -> (tensor<?xf32>) {
  fusion.output %x : tensor<4xf32>
}

// -----

// fusion.fusion: outputs are tensors
// expected-error @+1 {{'fusion.fusion @f' output #0 is a scalar; outputs are tensors}}
fusion.fusion @f(%s: f32) -> (f32) {
  fusion.output %s : f32
}

// -----

// fusion.output: only inside a fusion.fusion
// expected-error @+1 {{'fusion.output' expects parent op 'fusion.fusion'}}
fusion.output

// -----

// fusion.constant: the value has an element type
fusion.fusion @f() -> () {
  // expected-error @+1 {{'fusion.constant' value has type i8, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1}}
  %c = fusion.constant 3 : i8
  fusion.output
}

// -----

// fusion.constant: index is not an element type
fusion.fusion @f() -> () {
  // expected-error @+1 {{'fusion.constant' value has type index, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1}}
  %c = fusion.constant 3 : index
  fusion.output
}

// -----

// fusion.constant: the result has the value's type
fusion.fusion @f() -> () {
  // expected-error @+1 {{attribute i64 expected from variable 'T', but got i32}}
  %c = "fusion.constant"() <{value = 1 : i32}> : () -> i64
  fusion.output
}

// -----

// fusion.dim: the axis is in range
fusion.fusion @f(%x: tensor<?x?xf32>) -> () {
  // expected-error @+1 {{'fusion.dim' axis 2 is out of range for rank 2}}
  %n = fusion.dim %x[2] : tensor<?x?xf32>
  fusion.output
}

// -----

// fusion.dim: a negative axis is out of range
fusion.fusion @f(%x: tensor<?x?xf32>) -> () {
  // expected-error @+1 {{'fusion.dim' axis -1 is out of range for rank 2}}
  %n = fusion.dim %x[-1] : tensor<?x?xf32>
  fusion.output
}

// -----

// fusion.dim: the operand is a fusion value
fusion.fusion @f() -> () {
  %x = "test.op"() : () -> tensor<?xi8>
  // expected-error @+1 {{'fusion.dim' input has type tensor<?xi8>, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1}}
  %n = fusion.dim %x[0] : tensor<?xi8>
  fusion.output
}

// -----

// unary: f16/bf16 are storage types
fusion.fusion @f(%x: tensor<4xbf16>) -> () {
  // expected-error @+1 {{'fusion.neg' operand has element type bf16, expected one of f32, f64, i32, i64 (f16/bf16 are storage types: cast to f32 first)}}
  %y = fusion.neg %x : tensor<4xbf16>
  fusion.output
}

// -----

// unary: float-only ops reject integers
fusion.fusion @f(%x: tensor<4xi32>) -> () {
  // expected-error @+1 {{'fusion.exp' operand has element type i32, expected one of f32, f64}}
  %y = fusion.exp %x : tensor<4xi32>
  fusion.output
}

// -----

// unary: numeric ops reject i1
fusion.fusion @f(%x: tensor<4xi1>) -> () {
  // expected-error @+1 {{'fusion.abs' operand has element type i1, expected one of f32, f64, i32, i64}}
  %y = fusion.abs %x : tensor<4xi1>
  fusion.output
}

// -----

// unary: operands have an element type
fusion.fusion @f() -> () {
  %x = "test.op"() : () -> tensor<4xi8>
  // expected-error @+1 {{'fusion.relu' input has type tensor<4xi8>, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1}}
  %y = fusion.relu %x : tensor<4xi8>
  fusion.output
}

// -----

// unary: tensors carry no encoding
fusion.fusion @f() -> () {
  %x = "test.op"() : () -> tensor<4xf32, "sparse">
  // expected-error @+1 {{'fusion.sqrt' input has type tensor<4xf32, "sparse">; tensors with an encoding are not supported}}
  %y = fusion.sqrt %x : tensor<4xf32, "sparse">
  fusion.output
}

// -----

// unary: tensors are ranked
fusion.fusion @f() -> () {
  %x = "test.op"() : () -> tensor<*xf32>
  // expected-error @+1 {{'fusion.sin' input has type tensor<*xf32>, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1}}
  %y = fusion.sin %x : tensor<*xf32>
  fusion.output
}

// -----

// unary: the result has the operand's type
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  // expected-error @+1 {{result 'result' at position 0 does not verify:}}
  %y = "fusion.tanh"(%x) : (tensor<4xf32>) -> tensor<5xf32>
  fusion.output
}

// -----

// gelu: float-only (f16 is a storage type)
fusion.fusion @f(%x: tensor<4xf16>) -> () {
  // expected-error @+1 {{'fusion.gelu' operand has element type f16, expected one of f32, f64 (f16/bf16 are storage types: cast to f32 first)}}
  %y = fusion.gelu %x tanh : tensor<4xf16>
  fusion.output
}

// -----

// gelu: float-only (no integers)
fusion.fusion @f(%x: i64) -> () {
  // expected-error @+1 {{'fusion.gelu' operand has element type i64, expected one of f32, f64}}
  %y = fusion.gelu %x none : i64
  fusion.output
}

// -----

// binary: f16/bf16 are storage types
fusion.fusion @f(%x: tensor<4xbf16>) -> () {
  // expected-error @+1 {{'fusion.add' lhs has element type bf16, expected one of f32, f64, i32, i64 (f16/bf16 are storage types: cast to f32 first)}}
  %y = fusion.add %x, %x : tensor<4xbf16>
  fusion.output
}

// -----

// binary: arithmetic rejects i1
fusion.fusion @f(%x: tensor<4xf32>, %m: tensor<4xi1>) -> () {
  // expected-error @+1 {{'fusion.mul' rhs has element type i1, expected one of f32, f64, i32, i64}}
  %y = fusion.mul %x, %m : (tensor<4xf32>, tensor<4xi1>) -> tensor<4xf32>
  fusion.output
}

// -----

// pow: float-only
fusion.fusion @f(%x: tensor<4xi32>) -> () {
  // expected-error @+1 {{'fusion.pow' lhs has element type i32, expected one of f32, f64}}
  %y = fusion.pow %x, %x : tensor<4xi32>
  fusion.output
}

// -----

// binary: operands share an element type (no promotion)
fusion.fusion @f(%x: tensor<4xf32>, %y: tensor<4xf64>) -> () {
  // expected-error @+1 {{'fusion.sub' operands have element types f32 and f64; they must match (insert a fusion.cast)}}
  %z = fusion.sub %x, %y : (tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  fusion.output
}

// -----

// binary: a scalar operand has the tensor's element type
fusion.fusion @f(%x: tensor<4xf32>, %s: i32) -> () {
  // expected-error @+1 {{'fusion.div' operands have element types f32 and i32; they must match (insert a fusion.cast)}}
  %z = fusion.div %x, %s : (tensor<4xf32>, i32) -> tensor<4xf32>
  fusion.output
}

// -----

// binary: the result keeps the operands' element type
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  // expected-error @+1 {{'fusion.maximum' result element type must be f32, got f64}}
  %z = fusion.maximum %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf64>
  fusion.output
}

// -----

// binary: the result has an element type
fusion.fusion @f(%x: tensor<4xi32>) -> () {
  // expected-error @+1 {{'fusion.minimum' result has type tensor<4xi8>, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1}}
  %z = fusion.minimum %x, %x : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi8>
  fusion.output
}

// -----

// comparison: the result is i1
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  // expected-error @+1 {{'fusion.lt' result element type must be i1, got f32}}
  %z = fusion.lt %x, %x : tensor<4xf32>
  fusion.output
}

// -----

// comparison: f16/bf16 are storage types
fusion.fusion @f(%x: tensor<4xf16>) -> () {
  // expected-error @+1 {{'fusion.eq' lhs has element type f16, expected one of f32, f64, i32, i64, i1 (f16/bf16 are storage types: cast to f32 first)}}
  %z = fusion.eq %x, %x : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xi1>
  fusion.output
}

// -----

// comparison: operands share an element type
fusion.fusion @f(%x: tensor<4xi32>, %s: i64) -> () {
  // expected-error @+1 {{'fusion.ge' operands have element types i32 and i64; they must match (insert a fusion.cast)}}
  %z = fusion.ge %x, %s : (tensor<4xi32>, i64) -> tensor<4xi1>
  fusion.output
}

// -----

// pointwise: scalars produce a scalar
fusion.fusion @f(%s: f32, %t: f32) -> () {
  // expected-error @+1 {{'fusion.add' on scalars must produce a scalar}}
  %z = fusion.add %s, %t : (f32, f32) -> tensor<4xf32>
  fusion.output
}

// -----

// pointwise: a tensor operand produces a tensor
fusion.fusion @f(%x: tensor<4xf32>, %s: f32) -> () {
  // expected-error @+1 {{'fusion.ne' with a tensor operand must produce a tensor}}
  %z = fusion.ne %x, %s : (tensor<4xf32>, f32) -> i1
  fusion.output
}

// -----

// pointwise: no implicit broadcasting (static extents differ)
fusion.fusion @f(%x: tensor<4xf32>, %y: tensor<5xf32>) -> () {
  // expected-error @+1 {{'fusion.add' operand #1 has shape [5], incompatible with result shape [4] (use broadcast_in_dim to broadcast)}}
  %z = fusion.add %x, %y : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  fusion.output
}

// -----

// pointwise: no implicit broadcasting (ranks differ)
fusion.fusion @f(%x: tensor<?xf32>, %y: tensor<?x1xf32>) -> () {
  // expected-error @+1 {{'fusion.mul' operand #1 has shape [?, 1], incompatible with result shape [?] (use broadcast_in_dim to broadcast)}}
  %z = fusion.mul %x, %y : (tensor<?xf32>, tensor<?x1xf32>) -> tensor<?xf32>
  fusion.output
}

// -----

// pointwise: the result keeps the static dims of its operands
fusion.fusion @f(%x: tensor<?x3xf32>, %y: tensor<?x?xf32>) -> () {
  // expected-error @+1 {{'fusion.sub' result shape [?, ?] must keep static dims of its operands ([?, 3])}}
  %z = fusion.sub %x, %y : (tensor<?x3xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  fusion.output
}

// -----

// where: the condition is i1
fusion.fusion @f(%c: tensor<4xf32>, %x: tensor<4xf32>) -> () {
  // expected-error @+1 {{'fusion.where' condition has element type f32, expected i1}}
  %z = fusion.where %c, %x, %x : tensor<4xf32>
  fusion.output
}

// -----

// where: the branches share an element type
fusion.fusion @f(%c: tensor<4xi1>, %x: tensor<4xf32>, %s: f64) -> () {
  // expected-error @+1 {{'fusion.where' branches and result must share one element type, got f32, f64 -> f32}}
  %z = fusion.where %c, %x, %s : (tensor<4xi1>, tensor<4xf32>, f64) -> tensor<4xf32>
  fusion.output
}

// -----

// where: the result has the branches' element type
fusion.fusion @f(%c: tensor<4xi1>, %x: tensor<4xbf16>) -> () {
  // expected-error @+1 {{'fusion.where' branches and result must share one element type, got bf16, bf16 -> f32}}
  %z = fusion.where %c, %x, %x : (tensor<4xi1>, tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xf32>
  fusion.output
}

// -----

// where: no implicit broadcasting of the condition
fusion.fusion @f(%c: tensor<1xi1>, %x: tensor<4xf32>) -> () {
  // expected-error @+1 {{'fusion.where' operand #0 has shape [1], incompatible with result shape [4] (use broadcast_in_dim to broadcast)}}
  %z = fusion.where %c, %x, %x : (tensor<1xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  fusion.output
}

// -----

// where: scalars produce a scalar
fusion.fusion @f(%c: i1, %s: f32) -> () {
  // expected-error @+1 {{'fusion.where' on scalars must produce a scalar}}
  %z = fusion.where %c, %s, %s : (i1, f32, f32) -> tensor<1xf32>
  fusion.output
}

// -----

// cast: the result has an element type
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  // expected-error @+1 {{'fusion.cast' result has type tensor<4xi8>, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1}}
  %y = fusion.cast %x : tensor<4xf32> -> tensor<4xi8>
  fusion.output
}

// -----

// cast: keeps the shape
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  // expected-error @+1 {{'fusion.cast' operand #0 has shape [4], incompatible with result shape [5] (use broadcast_in_dim to broadcast)}}
  %y = fusion.cast %x : tensor<4xf32> -> tensor<5xf64>
  fusion.output
}

// -----

// cast: keeps the rank
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  // expected-error @+1 {{'fusion.cast' operand #0 has shape [4], incompatible with result shape [4, 1] (use broadcast_in_dim to broadcast)}}
  %y = fusion.cast %x : tensor<4xf32> -> tensor<4x1xbf16>
  fusion.output
}

// -----

// cast: a scalar stays a scalar
fusion.fusion @f(%s: f32) -> () {
  // expected-error @+1 {{'fusion.cast' on scalars must produce a scalar}}
  %y = fusion.cast %s : f32 -> tensor<1xf64>
  fusion.output
}

// -----

// cast: a tensor stays a tensor
fusion.fusion @f(%x: tensor<1xf32>) -> () {
  // expected-error @+1 {{'fusion.cast' with a tensor operand must produce a tensor}}
  %y = fusion.cast %x : tensor<1xf32> -> f64
  fusion.output
}

// -----

// set: the operand has an element type
fusion.fusion @f() -> () {
  %x = "test.op"() : () -> tensor<4xi16>
  // expected-error @+1 {{'fusion.set' input has type tensor<4xi16>, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1}}
  %y = fusion.set %x : tensor<4xi16>
  fusion.output
}

// -----

// set: the result has the operand's type
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  // expected-error @+1 {{result 'result' at position 0 does not verify:}}
  %y = "fusion.set"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  fusion.output
}

// -----

// segment_set: the result has the operand's type
fusion.fusion @f(%x: tensor<?xf32>) -> () {
  // expected-error @+1 {{result 'result' at position 0 does not verify:}}
  %y = "fusion.segment_set"(%x) : (tensor<?xf32>) -> tensor<4xf32>
  fusion.output
}

// -----

// segment_set: the operand is a tensor
fusion.fusion @f(%s: f32) -> () {
  // expected-error @+1 {{operand 'input' at position 0 does not verify:}}
  %y = "fusion.segment_set"(%s) : (f32) -> f32
  fusion.output
}

// -----

// broadcast_in_dim: keeps the element type
fusion.fusion @f(%x: tensor<3xf32>) -> () {
  // expected-error @+1 {{'fusion.broadcast_in_dim' must keep the element type: operand f32, result f64}}
  %y = fusion.broadcast_in_dim %x [1] : tensor<3xf32> -> tensor<4x3xf64>
  fusion.output
}

// -----

// broadcast_in_dim: one broadcast dim per operand dim
fusion.fusion @f(%x: tensor<3xf32>) -> () {
  // expected-error @+1 {{'fusion.broadcast_in_dim' needs one broadcast dim per operand dim: got 2 for rank 1}}
  %y = fusion.broadcast_in_dim %x [0, 1] : tensor<3xf32> -> tensor<4x3xf32>
  fusion.output
}

// -----

// broadcast_in_dim: a scalar maps no dims
fusion.fusion @f(%s: f32) -> () {
  // expected-error @+1 {{'fusion.broadcast_in_dim' needs one broadcast dim per operand dim: got 1 for rank 0}}
  %y = fusion.broadcast_in_dim %s [0] : f32 -> tensor<4xf32>
  fusion.output
}

// -----

// broadcast_in_dim: broadcast dims are in range
fusion.fusion @f(%x: tensor<3xf32>) -> () {
  // expected-error @+1 {{'fusion.broadcast_in_dim' broadcast dims [2] out of range for rank 2}}
  %y = fusion.broadcast_in_dim %x [2] : tensor<3xf32> -> tensor<4x3xf32>
  fusion.output
}

// -----

// broadcast_in_dim: broadcast dims are strictly increasing (no transpose)
fusion.fusion @f(%x: tensor<3x4xf32>) -> () {
  // expected-error @+1 {{'fusion.broadcast_in_dim' broadcast dims [1, 0] must be strictly increasing}}
  %y = fusion.broadcast_in_dim %x [1, 0] : tensor<3x4xf32> -> tensor<4x3xf32>
  fusion.output
}

// -----

// broadcast_in_dim: broadcast dims are unique
fusion.fusion @f(%x: tensor<3x3xf32>) -> () {
  // expected-error @+1 {{'fusion.broadcast_in_dim' broadcast dims [1, 1] must be strictly increasing}}
  %y = fusion.broadcast_in_dim %x [1, 1] : tensor<3x3xf32> -> tensor<2x3xf32>
  fusion.output
}

// -----

// broadcast_in_dim: an operand dim is 1 or matches its result dim
fusion.fusion @f(%x: tensor<3xf32>) -> () {
  // expected-error @+1 {{'fusion.broadcast_in_dim' operand dim 0 (extent 3) cannot broadcast to result dim 1 (extent 4)}}
  %y = fusion.broadcast_in_dim %x [1] : tensor<3xf32> -> tensor<2x4xf32>
  fusion.output
}

// -----

// broadcast_in_dim: a new dynamic dim needs a size
fusion.fusion @f(%x: tensor<?xf32>) -> () {
  // expected-error @+1 {{'fusion.broadcast_in_dim' needs 1 size operand(s), one for each dynamic result dim the operand does not carry; got 0}}
  %y = fusion.broadcast_in_dim %x [1] : tensor<?xf32> -> tensor<?x?xf32>
  fusion.output
}

// -----

// broadcast_in_dim: a static 1 expanded to a dynamic dim needs a size
fusion.fusion @f(%x: tensor<1xf32>) -> () {
  // expected-error @+1 {{'fusion.broadcast_in_dim' needs 1 size operand(s), one for each dynamic result dim the operand does not carry; got 0}}
  %y = fusion.broadcast_in_dim %x [0] : tensor<1xf32> -> tensor<?xf32>
  fusion.output
}

// -----

// broadcast_in_dim: no size for a dim the operand carries
fusion.fusion @f(%x: tensor<?xf32>) -> () {
  %n = fusion.dim %x[0] : tensor<?xf32>
  // expected-error @+1 {{'fusion.broadcast_in_dim' needs 0 size operand(s), one for each dynamic result dim the operand does not carry; got 1}}
  %y = fusion.broadcast_in_dim %x [0] sizes(%n) : tensor<?xf32> -> tensor<?xf32>
  fusion.output
}

// -----

// broadcast_in_dim: the result is a tensor
fusion.fusion @f(%s: f32) -> () {
  // expected-error @+1 {{result 'result' at position 0 does not verify:}}
  %y = "fusion.broadcast_in_dim"(%s) <{broadcast_dims = array<i64>}> : (f32) -> f32
  fusion.output
}

// -----

// permute: one dim per operand dim
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.permute' needs one dim per operand dim: got 1 for rank 2}}
  %y = "fusion.permute"(%x) <{permutation = array<i64: 0>}> : (tensor<4x3xf32>) -> tensor<4xf32>
  fusion.output
}

// -----

// permute: dims in range
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.permute' dims [2, 0]: 2 is out of range for rank 2}}
  %y = fusion.permute %x [2, 0] : tensor<4x3xf32> -> tensor<3x4xf32>
  fusion.output
}

// -----

// permute: each dim once
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.permute' dims [0, 0] name a dim twice}}
  %y = fusion.permute %x [0, 0] : tensor<4x3xf32> -> tensor<4x4xf32>
  fusion.output
}

// -----

// permute: the result has the operand's extents, reordered
fusion.fusion @f(%x: tensor<4x?xf32>) -> () {
  // expected-error @+1 {{'fusion.permute' result shape [4, ?] must be [?, 4]}}
  %y = fusion.permute %x [1, 0] : tensor<4x?xf32> -> tensor<4x?xf32>
  fusion.output
}

// -----

// permute: the element type is kept
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.permute' must keep the element type: operand f32, result f64}}
  %y = fusion.permute %x [1, 0] : tensor<4x3xf32> -> tensor<3x4xf64>
  fusion.output
}

// -----

// squeeze: only dims of static extent 1
fusion.fusion @f(%x: tensor<?x1xf32>) -> () {
  // expected-error @+1 {{'fusion.squeeze' dim 0 has extent ?; only dims of static extent 1 can be squeezed}}
  %y = fusion.squeeze %x [0] : tensor<?x1xf32> -> tensor<1xf32>
  fusion.output
}

// -----

// squeeze: a static extent other than 1
fusion.fusion @f(%x: tensor<4x1xf32>) -> () {
  // expected-error @+1 {{'fusion.squeeze' dim 0 has extent 4; only dims of static extent 1 can be squeezed}}
  %y = "fusion.squeeze"(%x) <{squeezed = array<i64: 0>}> : (tensor<4x1xf32>) -> tensor<1xf32>
  fusion.output
}

// -----

// squeeze: dims in range
fusion.fusion @f(%x: tensor<4x1xf32>) -> () {
  // expected-error @+1 {{'fusion.squeeze' dims [2]: 2 is out of range for rank 2}}
  %y = fusion.squeeze %x [2] : tensor<4x1xf32> -> tensor<4x1xf32>
  fusion.output
}

// -----

// squeeze: each dim once
fusion.fusion @f(%x: tensor<1x4xf32>) -> () {
  // expected-error @+1 {{'fusion.squeeze' dims [0, 0] name a dim twice}}
  %y = "fusion.squeeze"(%x) <{squeezed = array<i64: 0, 0>}> : (tensor<1x4xf32>) -> tensor<4xf32>
  fusion.output
}

// -----

// squeeze: dims sorted ascending
fusion.fusion @f(%x: tensor<1x4x1xf32>) -> () {
  // expected-error @+1 {{'fusion.squeeze' dims [2, 0] must be sorted ascending}}
  %y = "fusion.squeeze"(%x) <{squeezed = array<i64: 2, 0>}> : (tensor<1x4x1xf32>) -> tensor<4xf32>
  fusion.output
}

// -----

// squeeze: the result is the operand without the dims
fusion.fusion @f(%x: tensor<1x4xf32>) -> () {
  // expected-error @+1 {{'fusion.squeeze' result shape [1, 4] must be [4]}}
  %y = fusion.squeeze %x [0] : tensor<1x4xf32> -> tensor<1x4xf32>
  fusion.output
}

// -----

// sum: f16/bf16 are storage types
fusion.fusion @f(%x: tensor<4x3xbf16>) -> () {
  // expected-error @+1 {{'fusion.sum' operand has element type bf16, expected one of f32, f64, i32, i64 (f16/bf16 are storage types: cast to f32 first)}}
  %y = fusion.sum %x [1] : tensor<4x3xbf16> -> tensor<4xbf16>
  fusion.output
}

// -----

// max: i1 is not numeric
fusion.fusion @f(%x: tensor<4x3xi1>) -> () {
  // expected-error @+1 {{'fusion.max' operand has element type i1, expected one of f32, f64, i32, i64}}
  %y = fusion.max %x [1] : tensor<4x3xi1> -> tensor<4xi1>
  fusion.output
}

// -----

// min: keeps the element type
fusion.fusion @f(%x: tensor<4x3xi32>) -> () {
  // expected-error @+1 {{'fusion.min' must keep the element type: operand i32, result i64}}
  %y = fusion.min %x [1] : tensor<4x3xi32> -> tensor<4xi64>
  fusion.output
}

// -----

// prod: i1 is not numeric (a Bool product casts to i64 first)
fusion.fusion @f(%x: tensor<4x3xi1>) -> () {
  // expected-error @+1 {{'fusion.prod' operand has element type i1, expected one of f32, f64, i32, i64}}
  %y = fusion.prod %x [1] : tensor<4x3xi1> -> tensor<4xi1>
  fusion.output
}

// -----

// prod: a half type is multiplied in f32 (cast first)
fusion.fusion @f(%x: tensor<4x3xf16>) -> () {
  // expected-error @+1 {{'fusion.prod' operand has element type f16, expected one of f32, f64, i32, i64}}
  %y = fusion.prod %x [1] : tensor<4x3xf16> -> tensor<4xf32>
  fusion.output
}

// -----

// prod: the result has the reduced shape
fusion.fusion @f(%x: tensor<4x3xi64>) -> () {
  // expected-error @+1 {{'fusion.prod' result shape [4, 3] does not match the reduced shape [4]}}
  %y = fusion.prod %x [1] : tensor<4x3xi64> -> tensor<4x3xi64>
  fusion.output
}

// -----

// sum: at least one axis
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.sum' needs at least one axis to reduce}}
  %y = fusion.sum %x [] : tensor<4x3xf32> -> tensor<4x3xf32>
  fusion.output
}

// -----

// max: axes are in range
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.max' axis 2 is out of range for rank 2}}
  %y = fusion.max %x [2] : tensor<4x3xf32> -> tensor<4x3xf32>
  fusion.output
}

// -----

// min: negative axes are out of range
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.min' axis -1 is out of range for rank 2}}
  %y = fusion.min %x [-1] : tensor<4x3xf32> -> tensor<4xf32>
  fusion.output
}

// -----

// sum: axes are unique
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.sum' axes [1, 1] are not unique}}
  %y = fusion.sum %x [1, 1] : tensor<4x3xf32> -> tensor<4xf32>
  fusion.output
}

// -----

// sum: axes are sorted
fusion.fusion @f(%x: tensor<4x3x2xf32>) -> () {
  // expected-error @+1 {{'fusion.sum' axes [2, 0] must be sorted ascending}}
  %y = fusion.sum %x [2, 0] : tensor<4x3x2xf32> -> tensor<3xf32>
  fusion.output
}

// -----

// sum: the result has the reduced shape
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.sum' result shape [3] does not match the reduced shape [4]}}
  %y = fusion.sum %x [1] : tensor<4x3xf32> -> tensor<3xf32>
  fusion.output
}

// -----

// max: without keepdim the reduced dims go
fusion.fusion @f(%x: tensor<?x3xf32>) -> () {
  // expected-error @+1 {{'fusion.max' result shape [?, 1] does not match the reduced shape [?]}}
  %y = fusion.max %x [1] : tensor<?x3xf32> -> tensor<?x1xf32>
  fusion.output
}

// -----

// min: with keepdim the reduced dims stay as 1
fusion.fusion @f(%x: tensor<?x3xf32>) -> () {
  // expected-error @+1 {{'fusion.min' result shape [?] does not match the reduced shape [?, 1]}}
  %y = fusion.min %x [1] keepdim : tensor<?x3xf32> -> tensor<?xf32>
  fusion.output
}

// -----

// welford: float-only
fusion.fusion @f(%x: tensor<4x3xi32>) -> () {
  // expected-error @+1 {{'fusion.welford' operand has element type i32, expected one of f32, f64}}
  %a, %m, %n = fusion.welford %x [1] : tensor<4x3xi32> -> tensor<4xi32>, tensor<4xi32>, tensor<4xi64>
  fusion.output
}

// -----

// welford: avg and var_sum keep the element type
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.welford' avg and var_sum must have element type f32}}
  %a, %m, %n = fusion.welford %x [1] : tensor<4x3xf32> -> tensor<4xf32>, tensor<4xf64>, tensor<4xi64>
  fusion.output
}

// -----

// welford: count is i64
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.welford' count must have element type i64}}
  %a, %m, %n = fusion.welford %x [1] : tensor<4x3xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
  fusion.output
}

// -----

// welford: axes are in range
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.welford' axis 3 is out of range for rank 2}}
  %a, %m, %n = fusion.welford %x [3] : tensor<4x3xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xi64>
  fusion.output
}

// -----

// welford: every result has the reduced shape
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.welford' result shape [3] does not match the reduced shape [4]}}
  %a, %m, %n = fusion.welford %x [1] : tensor<4x3xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<3xi64>
  fusion.output
}

// -----

// var_mean: float-only
fusion.fusion @f(%x: tensor<4x3xbf16>) -> () {
  // expected-error @+1 {{'fusion.var_mean' operand has element type bf16, expected one of f32, f64 (f16/bf16 are storage types: cast to f32 first)}}
  %v, %m = fusion.var_mean %x [1] correction(1) : tensor<4x3xbf16> -> tensor<4xbf16>, tensor<4xbf16>
  fusion.output
}

// -----

// var_mean: keeps the element type
fusion.fusion @f(%x: tensor<4x3xf64>) -> () {
  // expected-error @+1 {{'fusion.var_mean' must keep the element type: operand f64, result f32}}
  %v, %m = fusion.var_mean %x [1] correction(1) : tensor<4x3xf64> -> tensor<4xf64>, tensor<4xf32>
  fusion.output
}

// -----

// var_mean: the correction is non-negative
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.var_mean' correction must be non-negative, got -1}}
  %v, %m = fusion.var_mean %x [1] correction(-1) : tensor<4x3xf32> -> tensor<4xf32>, tensor<4xf32>
  fusion.output
}

// -----

// var_mean: axes are unique
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.var_mean' axes [0, 0] are not unique}}
  %v, %m = fusion.var_mean %x [0, 0] correction(0) : tensor<4x3xf32> -> tensor<3xf32>, tensor<3xf32>
  fusion.output
}

// -----

// var_mean: with keepdim both results keep the reduced dims as 1
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.var_mean' result shape [4] does not match the reduced shape [4, 1]}}
  %v, %m = fusion.var_mean %x [1] correction(0) keepdim : tensor<4x3xf32> -> tensor<4x1xf32>, tensor<4xf32>
  fusion.output
}

// -----

// matmul: f16, bf16, f32 or f64
fusion.fusion @f(%a: tensor<4x3xi32>, %b: tensor<3x2xi32>) -> () {
  // expected-error @+1 {{'fusion.matmul' lhs has element type i32, expected one of f16, bf16, f32, f64}}
  %c = fusion.matmul %a, %b : tensor<4x3xi32>, tensor<3x2xi32> -> tensor<4x2xi32>
  fusion.output
}

// -----

// matmul: operands share an element type
fusion.fusion @f(%a: tensor<4x3xf16>, %b: tensor<3x2xbf16>) -> () {
  // expected-error @+1 {{'fusion.matmul' operands and result must share one element type, got f16, bf16 -> f16}}
  %c = fusion.matmul %a, %b : tensor<4x3xf16>, tensor<3x2xbf16> -> tensor<4x2xf16>
  fusion.output
}

// -----

// matmul: the result keeps the element type
fusion.fusion @f(%a: tensor<4x3xf16>, %b: tensor<3x2xf16>) -> () {
  // expected-error @+1 {{'fusion.matmul' operands and result must share one element type, got f16, f16 -> f32}}
  %c = fusion.matmul %a, %b : tensor<4x3xf16>, tensor<3x2xf16> -> tensor<4x2xf32>
  fusion.output
}

// -----

// matmul: operands have rank >= 2
fusion.fusion @f(%a: tensor<3xf32>, %b: tensor<3xf32>) -> () {
  // expected-error @+1 {{'fusion.matmul' needs operands of one rank >= 2, got ranks 1 and 1}}
  %c = fusion.matmul %a, %b : tensor<3xf32>, tensor<3xf32> -> tensor<f32>
  fusion.output
}

// -----

// matmul: operands have one rank
fusion.fusion @f(%a: tensor<2x4x3xf32>, %b: tensor<3x5xf32>) -> () {
  // expected-error @+1 {{'fusion.matmul' needs operands of one rank >= 2, got ranks 3 and 2}}
  %c = fusion.matmul %a, %b : tensor<2x4x3xf32>, tensor<3x5xf32> -> tensor<2x4x5xf32>
  fusion.output
}

// -----

// matmul: contraction dims agree
fusion.fusion @f(%a: tensor<?x3xf32>, %b: tensor<4x?xf32>) -> () {
  // expected-error @+1 {{'fusion.matmul' contraction dims differ: lhs [?, 3], rhs [4, ?]}}
  %c = fusion.matmul %a, %b : tensor<?x3xf32>, tensor<4x?xf32> -> tensor<?x?xf32>
  fusion.output
}

// -----

// matmul: batch dims agree
fusion.fusion @f(%a: tensor<2x4x3xf32>, %b: tensor<5x3x6xf32>) -> () {
  // expected-error @+1 {{'fusion.matmul' batch dims differ: lhs [2, 4, 3], rhs [5, 3, 6]}}
  %c = fusion.matmul %a, %b : tensor<2x4x3xf32>, tensor<5x3x6xf32> -> tensor<2x4x6xf32>
  fusion.output
}

// -----

// matmul: the result is [..., M, N]
fusion.fusion @f(%a: tensor<4x3xf32>, %b: tensor<3x?xf32>) -> () {
  // expected-error @+1 {{'fusion.matmul' result shape [3, ?], expected [4, ?]}}
  %c = fusion.matmul %a, %b : tensor<4x3xf32>, tensor<3x?xf32> -> tensor<3x?xf32>
  fusion.output
}

// -----

// matmul splits: the partial result is f32 for half operands
fusion.fusion @f(%a: tensor<4x3xbf16>, %b: tensor<3x2xbf16>) -> () {
  // expected-error @+1 {{'fusion.matmul' operands must share one element type and the partial result be f32, got bf16, bf16 -> bf16}}
  %c = fusion.matmul %a, %b splits(2) : tensor<4x3xbf16>, tensor<3x2xbf16> -> tensor<2x4x2xbf16>
  fusion.output
}

// -----

// matmul splits: the partial result leads with the splits
fusion.fusion @f(%a: tensor<4x3xf16>, %b: tensor<3x2xf16>) -> () {
  // expected-error @+1 {{'fusion.matmul' partial result must have 2 (the splits) as its static first dim, got [3, 4, 2]}}
  %c = fusion.matmul %a, %b splits(2) : tensor<4x3xf16>, tensor<3x2xf16> -> tensor<3x4x2xf32>
  fusion.output
}

// -----

// matmul splits: at least one
fusion.fusion @f(%a: tensor<4x3xf64>, %b: tensor<3x2xf64>) -> () {
  // expected-error @+1 {{'fusion.matmul' splits must be >= 1, got 0}}
  %c = fusion.matmul %a, %b splits(0) : tensor<4x3xf64>, tensor<3x2xf64> -> tensor<0x4x2xf64>
  fusion.output
}

// -----

// partial_sum: one axis
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.partial_sum' cuts one axis into chunks, got [0, 1]}}
  %p = fusion.partial_sum %x [0, 1] splits(2) : tensor<4x3xf32> -> tensor<2x3xf32>
  fusion.output
}

// -----

// partial_sum: the axis in range
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.partial_sum' axis 2 is out of range for rank 2}}
  %p = fusion.partial_sum %x [2] splits(2) : tensor<4x3xf32> -> tensor<4x3xf32>
  fusion.output
}

// -----

// partial_sum: at least one split
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.partial_sum' splits must be >= 1, got 0}}
  %p = fusion.partial_sum %x [0] splits(0) : tensor<4x3xf32> -> tensor<0x3xf32>
  fusion.output
}

// -----

// partial_sum: the axis replaced by the splits, statically
fusion.fusion @f(%x: tensor<?x3xf32>) -> () {
  // expected-error @+1 {{'fusion.partial_sum' result shape [?, 3], expected [2, 3] (axis 0 replaced by the 2 splits)}}
  %p = fusion.partial_sum %x [0] splits(2) : tensor<?x3xf32> -> tensor<?x3xf32>
  fusion.output
}

// -----

// partial_sum: the other dims kept
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.partial_sum' result shape [2, 5], expected [2, 3] (axis 0 replaced by the 2 splits)}}
  %p = fusion.partial_sum %x [0] splits(2) : tensor<4x3xf32> -> tensor<2x5xf32>
  fusion.output
}

// -----

// partial_sum: the element type kept
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.partial_sum' must keep the element type: operand f32, result f64}}
  %p = fusion.partial_sum %x [0] splits(2) : tensor<4x3xf32> -> tensor<2x3xf64>
  fusion.output
}

// -----

// partial_sum: a compute type (bf16 is cast to f32 first)
fusion.fusion @f(%x: tensor<4x3xbf16>) -> () {
  // expected-error @+1 {{'fusion.partial_sum' operand has element type bf16, expected one of f32, f64, i32, i64}}
  %p = fusion.partial_sum %x [0] splits(2) : tensor<4x3xbf16> -> tensor<2x3xbf16>
  fusion.output
}

// -----

// reshape: as many elements
fusion.fusion @f(%x: tensor<4x6xf32>) -> () {
  // expected-error @+1 {{'fusion.reshape' cannot reshape [4, 6] (24 elements) to [5, 5] (25 elements)}}
  %y = fusion.reshape %x : tensor<4x6xf32> -> tensor<5x5xf32>
  fusion.output
}

// -----

// reshape: a static operand has a static result
fusion.fusion @f(%x: tensor<4x6xf32>) -> () {
  // expected-error @+1 {{'fusion.reshape' result [?, 6] of a static operand must be static: [4, 6]}}
  %y = fusion.reshape %x : tensor<4x6xf32> -> tensor<?x6xf32>
  fusion.output
}

// -----

// reshape: one extent to infer
fusion.fusion @f(%x: tensor<?x6xf32>) -> () {
  // expected-error @+1 {{'fusion.reshape' result [?, ?] may leave one extent to infer (?), not 2}}
  %y = fusion.reshape %x : tensor<?x6xf32> -> tensor<?x?xf32>
  fusion.output
}

// -----

// reshape: a kept dim is a dim of both
fusion.fusion @f(%x: tensor<?x6xf32>) -> () {
  // expected-error @+1 {{'fusion.reshape' keeps dim 2, which [?, 6] -> [?, 2, 3] do not both have}}
  %y = fusion.reshape %x kept [2] : tensor<?x6xf32> -> tensor<?x2x3xf32>
  fusion.output
}

// -----

// reshape: a kept dim has one extent in both
fusion.fusion @f(%x: tensor<?x6xf32>) -> () {
  // expected-error @+1 {{'fusion.reshape' keeps dim 1, but its extents differ: [?, 6] -> [?, 2, 3]}}
  %y = fusion.reshape %x kept [1] : tensor<?x6xf32> -> tensor<?x2x3xf32>
  fusion.output
}

// -----

// reshape: one extent to infer besides the kept dims
fusion.fusion @f(%x: tensor<?x?x6xf32>) -> () {
  // expected-error @+1 {{'fusion.reshape' result [?, ?, ?] may leave one extent to infer (?) besides the kept dims, not 2}}
  %y = fusion.reshape %x kept [0] : tensor<?x?x6xf32> -> tensor<?x?x?xf32>
  fusion.output
}

// -----

// reshape: the dims besides the kept ones hold as many elements
fusion.fusion @f(%x: tensor<?x6xf32>) -> () {
  // expected-error @+1 {{'fusion.reshape' cannot reshape [?, 6] to [?, 4] keeping dims [0]: the other dims hold different element counts}}
  %y = fusion.reshape %x kept [0] : tensor<?x6xf32> -> tensor<?x4xf32>
  fusion.output
}

// -----

// reshape: static besides the kept dims where the operand is
fusion.fusion @f(%x: tensor<?x6xf32>) -> () {
  // expected-error @+1 {{'fusion.reshape' result [?, 2, ?] must be static outside the kept dims, where the operand's are: [2, 3] there}}
  %y = fusion.reshape %x kept [0] : tensor<?x6xf32> -> tensor<?x2x?xf32>
  fusion.output
}

// -----

// reshape: the inferred extent divides by no zero
fusion.fusion @f(%x: tensor<?x6xf32>) -> () {
  // expected-error @+1 {{'fusion.reshape' result [?, 0] has a zero extent: the ? cannot be inferred}}
  %y = fusion.reshape %x : tensor<?x6xf32> -> tensor<?x0xf32>
  fusion.output
}

// -----

// reshape: a whole inferred extent
fusion.fusion @f(%x: tensor<4x6xf32>) -> () {
  // expected-error @+1 {{'fusion.reshape' cannot reshape [4, 6] (24 elements) to [5, ?]: 24 is not a multiple of 5}}
  %y = fusion.reshape %x : tensor<4x6xf32> -> tensor<5x?xf32>
  fusion.output
}

// -----

// reshape: the element type is kept
fusion.fusion @f(%x: tensor<4x6xf32>) -> () {
  // expected-error @+1 {{'fusion.reshape' must keep the element type: operand f32, result f16}}
  %y = fusion.reshape %x : tensor<4x6xf32> -> tensor<24xf16>
  fusion.output
}

// -----

// iota: rank 1
fusion.fusion @f() -> () {
  // expected-error @+1 {{'fusion.iota' result must have rank 1, got [2, 3]}}
  %r = fusion.iota start 0 step 1 : tensor<2x3xi64>
  fusion.output
}

// -----

// iota: an integer or float result (not i1)
fusion.fusion @f() -> () {
  // expected-error @+1 {{'fusion.iota' result has element type i1, expected one of f16, bf16, f32, f64, i32, i64}}
  %r = "fusion.iota"() <{start = 0 : i64, step = 1 : i64}> : () -> tensor<4xi1>
  fusion.output
}

// -----

// iota: start and step are held as f64 for a float result
fusion.fusion @f() -> () {
  // expected-error @+1 {{'fusion.iota' start has type i64, expected f64 for a f32 result}}
  %r = "fusion.iota"() <{start = 0 : i64, step = 1.0 : f64}> : () -> tensor<4xf32>
  fusion.output
}

// -----

// iota: finite start and step
fusion.fusion @f() -> () {
  // expected-error @+1 {{'fusion.iota' step must be finite, got inf}}
  %r = "fusion.iota"() <{start = 0.0 : f64, step = 0x7FF0000000000000 : f64}> : () -> tensor<4xf32>
  fusion.output
}

// -----

// iota: a length operand exactly where the extent is ?
fusion.fusion @f() -> () {
  // expected-error @+1 {{'fusion.iota' takes a length operand exactly where its extent is ?: result [?], no length operand}}
  %r = "fusion.iota"() <{start = 0 : i64, step = 1 : i64}> : () -> tensor<?xi64>
  fusion.output
}


// -----

// slice: one start, stop and step per dim
fusion.fusion @f(%x: tensor<4x6xf32>) -> () {
  // expected-error @+1 {{'fusion.slice' needs one start, stop and step per dim of its rank-2 operand and result: got 1, 1, 1 for a rank-2 result}}
  %y = "fusion.slice"(%x) <{starts = array<i64: 0>, stops = array<i64: 2>, steps = array<i64: 1>}> : (tensor<4x6xf32>) -> tensor<2x6xf32>
  fusion.output
}

// -----

// slice: steps of at least 1
fusion.fusion @f(%x: tensor<4x6xf32>) -> () {
  // expected-error @+1 {{'fusion.slice' step 0 of dim 1 must be at least 1}}
  %y = fusion.slice %x [:, ::0] : tensor<4x6xf32> -> tensor<4x6xf32>
  fusion.output
}

// -----

// slice: the static extent the bounds give
fusion.fusion @f(%x: tensor<4x6xf32>) -> () {
  // expected-error @+1 {{'fusion.slice' result dim 1 must be 2 for [-2:] of extent 6, got 3}}
  %y = fusion.slice %x [:, -2:] : tensor<4x6xf32> -> tensor<4x3xf32>
  fusion.output
}

// -----

// slice: a dynamic operand dim gives a ? result dim
fusion.fusion @f(%x: tensor<?x6xf32>) -> () {
  // expected-error @+1 {{'fusion.slice' result dim 0 must be ? for [:2] of extent ?, got 2}}
  %y = fusion.slice %x [:2, :] : tensor<?x6xf32> -> tensor<2x6xf32>
  fusion.output
}

// -----

// slice: the element type is kept
fusion.fusion @f(%x: tensor<4x6xf32>) -> () {
  // expected-error @+1 {{'fusion.slice' must keep the element type: operand f32, result f16}}
  %y = fusion.slice %x [:, :] : tensor<4x6xf32> -> tensor<4x6xf16>
  fusion.output
}

// -----

// slice: a tensor of rank 1 or more
fusion.fusion @f(%x: tensor<f32>) -> () {
  // expected-error @+1 {{'fusion.slice' operand must have rank 1 or more}}
  %y = "fusion.slice"(%x) <{starts = array<i64>, stops = array<i64>, steps = array<i64>}> : (tensor<f32>) -> tensor<f32>
  fusion.output
}

// -----

// scatter: an integer index
fusion.fusion @f(%x: tensor<4x6xf32>, %i: tensor<4x1xf32>, %v: tensor<4x1xf32>) -> () {
  // expected-error @+1 {{'fusion.scatter' index has element type f32, expected one of i32, i64}}
  %y = fusion.scatter %x, %i, %v[1] : tensor<4x6xf32>, tensor<4x1xf32>, tensor<4x1xf32> -> tensor<4x6xf32>
  fusion.output
}

// -----

// scatter: the index has the input's rank
fusion.fusion @f(%x: tensor<4x6xf32>, %i: tensor<4xi64>, %v: tensor<4xf32>) -> () {
  // expected-error @+1 {{'fusion.scatter' index has rank 1; it needs the input's rank 2}}
  %y = fusion.scatter %x, %i, %v[1] : tensor<4x6xf32>, tensor<4xi64>, tensor<4xf32> -> tensor<4x6xf32>
  fusion.output
}

// -----

// scatter: dim in range
fusion.fusion @f(%x: tensor<4x6xf32>, %i: tensor<4x1xi64>, %v: tensor<4x1xf32>) -> () {
  // expected-error @+1 {{'fusion.scatter' dim 2 is out of range for rank 2}}
  %y = fusion.scatter %x, %i, %v[2] : tensor<4x6xf32>, tensor<4x1xi64>, tensor<4x1xf32> -> tensor<4x6xf32>
  fusion.output
}

// -----

// scatter: only dim may differ
fusion.fusion @f(%x: tensor<4x6xf32>, %i: tensor<3x1xi64>, %v: tensor<3x1xf32>) -> () {
  // expected-error @+1 {{'fusion.scatter' index dim 0 has extent 3, the input's 4: only dim 1 may differ}}
  %y = fusion.scatter %x, %i, %v[1] : tensor<4x6xf32>, tensor<3x1xi64>, tensor<3x1xf32> -> tensor<4x6xf32>
  fusion.output
}

// -----

// scatter: src of the input's element type
fusion.fusion @f(%x: tensor<4x6xf32>, %i: tensor<4x1xi64>, %v: tensor<4x1xf16>) -> () {
  // expected-error @+1 {{'fusion.scatter' src has element type f16; it must be the input's, f32}}
  %y = fusion.scatter %x, %i, %v[1] : tensor<4x6xf32>, tensor<4x1xi64>, tensor<4x1xf16> -> tensor<4x6xf32>
  fusion.output
}

// -----

// scatter: src of the index's shape
fusion.fusion @f(%x: tensor<4x6xf32>, %i: tensor<4x2xi64>, %v: tensor<4x3xf32>) -> () {
  // expected-error @+1 {{'fusion.scatter' src has shape [4, 3]; it must be a scalar or have the index's shape [4, 2]}}
  %y = fusion.scatter %x, %i, %v[1] : tensor<4x6xf32>, tensor<4x2xi64>, tensor<4x3xf32> -> tensor<4x6xf32>
  fusion.output
}

// -----

// scatter: the result has the input's type
fusion.fusion @f(%x: tensor<4x6xf32>, %i: tensor<4x2xi64>, %v: f32) -> () {
  // expected-error @+1 {{'fusion.scatter' result has type tensor<?x6xf32>; it must be the input's, tensor<4x6xf32>}}
  %y = fusion.scatter %x, %i, %v[1] : tensor<4x6xf32>, tensor<4x2xi64>, f32 -> tensor<?x6xf32>
  fusion.output
}

// -----

// take_along_axis: an integer index
fusion.fusion @f(%x: tensor<4x6xf32>, %i: tensor<4x1xf32>) -> () {
  // expected-error @+1 {{'fusion.take_along_axis' index has element type f32, expected one of i32, i64}}
  %y = fusion.take_along_axis %x, %i[1] : tensor<4x6xf32>, tensor<4x1xf32> -> tensor<4x1xf32>
  fusion.output
}

// -----

// take_along_axis: the index has the input's rank
fusion.fusion @f(%x: tensor<4x6xf32>, %i: tensor<4xi64>) -> () {
  // expected-error @+1 {{'fusion.take_along_axis' index has rank 1; it needs the input's rank 2}}
  %y = fusion.take_along_axis %x, %i[1] : tensor<4x6xf32>, tensor<4xi64> -> tensor<4xf32>
  fusion.output
}

// -----

// take_along_axis: dim in range
fusion.fusion @f(%x: tensor<4x6xf32>, %i: tensor<4x1xi64>) -> () {
  // expected-error @+1 {{'fusion.take_along_axis' dim 2 is out of range for rank 2}}
  %y = fusion.take_along_axis %x, %i[2] : tensor<4x6xf32>, tensor<4x1xi64> -> tensor<4x1xf32>
  fusion.output
}

// -----

// take_along_axis: only dim may differ
fusion.fusion @f(%x: tensor<4x6xf32>, %i: tensor<3x1xi64>) -> () {
  // expected-error @+1 {{'fusion.take_along_axis' index dim 0 has extent 3, the input's 4: only dim 1 may differ}}
  %y = fusion.take_along_axis %x, %i[1] : tensor<4x6xf32>, tensor<3x1xi64> -> tensor<3x1xf32>
  fusion.output
}

// -----

// take_along_axis: the result has the index's shape, static where either operand is
fusion.fusion @f(%x: tensor<4x6xf32>, %i: tensor<?x2xi64>) -> () {
  // expected-error @+1 {{'fusion.take_along_axis' result must have shape [4, 2], got [?, 2]}}
  %y = fusion.take_along_axis %x, %i[1] : tensor<4x6xf32>, tensor<?x2xi64> -> tensor<?x2xf32>
  fusion.output
}

// -----

// take_along_axis: the input's element type
fusion.fusion @f(%x: tensor<4x6xf32>, %i: tensor<4x2xi64>) -> () {
  // expected-error @+1 {{'fusion.take_along_axis' must keep the element type: operand f32, result f16}}
  %y = fusion.take_along_axis %x, %i[1] : tensor<4x6xf32>, tensor<4x2xi64> -> tensor<4x2xf16>
  fusion.output
}

// -----

// fusion.output: one stride order per output
fusion.fusion @f(%x: tensor<4xf32>) -> (tensor<4xf32>) {
  // expected-error @+1 {{'fusion.output' has 2 stride orders for 1 outputs: one per output (empty for row-major)}}
  fusion.output %x : tensor<4xf32> stride_orders [array<i64>, array<i64>]
}

// -----

// fusion.output: a stride order is a permutation of the output's dims
fusion.fusion @f(%x: tensor<4x2xf32>) -> (tensor<4x2xf32>) {
  // expected-error @+1 {{'fusion.output' output #0 has stride order [0, 2]: it must be empty or a permutation of its 2 dims}}
  fusion.output %x : tensor<4x2xf32> stride_orders [array<i64: 0, 2>]
}

// -----

// fusion.output: an output written into an input takes the input's layout
fusion.fusion @f(%x: tensor<4x2xf32>) -> (tensor<4x2xf32>) {
  %y = fusion.neg %x : tensor<4x2xf32>
  // expected-error @+1 {{'fusion.output' output #0 is written into input #0 and has stride order [0, 1]: an aliased output takes its input's layout}}
  fusion.output %y : tensor<4x2xf32> aliases [0] stride_orders [array<i64: 0, 1>]
}

// -----

// fusion.output: a stride order is an i64 array
fusion.fusion @f(%x: tensor<4x2xf32>) -> (tensor<4x2xf32>) {
  // expected-error @+1 {{'fusion.output' output #0 has a stride order of f32: an i64 array}}
  fusion.output %x : tensor<4x2xf32> stride_orders [array<f32: 0.0, 1.0>]
}

// -----

// fusion.output: the aliases are checked first (one per output)
fusion.fusion @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{'fusion.output' has 1 aliases for 2 outputs: one per output (-1 for none)}}
  fusion.output %x, %x : tensor<4xf32>, tensor<4xf32> aliases [-1] stride_orders [array<i64: 0>, array<i64>]
}

// -----

// fusion.output: one alias per output
fusion.fusion @f(%x: tensor<4xf32>) -> (tensor<4xf32>) {
  // expected-error @+1 {{'fusion.output' has 2 aliases for 1 outputs: one per output (-1 for none)}}
  fusion.output %x : tensor<4xf32> aliases [0, -1]
}

// -----

// fusion.output: an alias names an input
fusion.fusion @f(%x: tensor<4xf32>) -> (tensor<4xf32>) {
  // expected-error @+1 {{'fusion.output' output #0 aliases input #1; the fusion has 1 inputs}}
  fusion.output %x : tensor<4xf32> aliases [1]
}

// -----

// fusion.output: an input is written by one output at most
fusion.fusion @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{'fusion.output' input #0 is aliased by two outputs: one writes it}}
  fusion.output %x, %x : tensor<4xf32>, tensor<4xf32> aliases [0, 0]
}

// -----

// fusion.output: an alias has the input's element type and shape
fusion.fusion @f(%x: tensor<4xf32>, %y: tensor<4xf16>) -> (tensor<4xf16>) {
  // expected-error @+1 {{'fusion.output' output #0 (tensor<4xf16>) cannot be written into input #0 (tensor<4xf32>): an alias needs the input's element type and shape}}
  fusion.output %y : tensor<4xf16> aliases [0]
}

// -----

// take: an integer index
fusion.fusion @f(%x: tensor<4x6xf32>, %i: tensor<3xf32>) -> () {
  // expected-error @+1 {{'fusion.take' index has element type f32, expected one of i32, i64}}
  %y = fusion.take %x, %i dim 0 : tensor<4x6xf32>, tensor<3xf32> -> tensor<3x6xf32>
  fusion.output
}

// -----

// take: dim in range
fusion.fusion @f(%x: tensor<4x6xf32>, %i: tensor<3xi64>) -> () {
  // expected-error @+1 {{'fusion.take' dim 2 is out of range for rank 2}}
  %y = fusion.take %x, %i dim 2 : tensor<4x6xf32>, tensor<3xi64> -> tensor<3x6xf32>
  fusion.output
}

// -----

// take: the result is the input's shape with the dim replaced by the index's
fusion.fusion @f(%x: tensor<4x6xf32>, %i: tensor<3x2xi64>) -> () {
  // expected-error @+1 {{'fusion.take' result must have shape [4, 3, 2], got [4, 6]}}
  %y = fusion.take %x, %i dim 1 : tensor<4x6xf32>, tensor<3x2xi64> -> tensor<4x6xf32>
  fusion.output
}

// -----

// take: the input's element type
fusion.fusion @f(%x: tensor<4x6xf32>, %s: i32) -> () {
  // expected-error @+1 {{'fusion.take' must keep the element type: operand f32, result f16}}
  %y = fusion.take %x, %s dim 0 : tensor<4x6xf32>, i32 -> tensor<6xf16>
  fusion.output
}

// -----

// iota: the length is a fusion.dim (the extent of a tensor)
fusion.fusion @f(%x: tensor<?xf32>) -> () {
  %n = "test.op"() : () -> index
  // expected-error @+1 {{'fusion.iota' length must be a fusion.dim}}
  %r = fusion.iota(%n) start 0 step 1 : tensor<?xi64>
  fusion.output
}

// -----

// pad: the value has the operand's element type
fusion.fusion @f(%x: tensor<4x6xf32>, %v: f64) -> () {
  // expected-error @+1 {{'fusion.pad' value must be a scalar of the operand's element type f32, got f64}}
  %y = "fusion.pad"(%x, %v) <{low = array<i64: 0, 1>, high = array<i64: 0, 1>}> : (tensor<4x6xf32>, f64) -> tensor<4x8xf32>
  fusion.output
}

// -----

// pad: a low and a high width per dim
fusion.fusion @f(%x: tensor<4x6xf32>, %v: f32) -> () {
  // expected-error @+1 {{'fusion.pad' needs a low and a high width per dim of its rank-2 operand: got 1 and 1}}
  %y = fusion.pad %x low [1] high [1] value %v : tensor<4x6xf32> -> tensor<6x6xf32>
  fusion.output
}

// -----

// pad: a padded dim is static
fusion.fusion @f(%x: tensor<4x?xf32>, %v: f32) -> () {
  // expected-error @+1 {{'fusion.pad' operand has a dynamic extent in dim 1, which it resizes: resized dims must be static}}
  %y = fusion.pad %x low [0, 1] high [0, 1] value %v : tensor<4x?xf32> -> tensor<4x?xf32>
  fusion.output
}

// -----

// pad: widths leave at least 0 elements
fusion.fusion @f(%x: tensor<4x6xf32>, %v: f32) -> () {
  // expected-error @+1 {{'fusion.pad' widths -4 and -3 leave dim 1 of extent 6 with -1 elements}}
  %y = fusion.pad %x low [0, -4] high [0, -3] value %v : tensor<4x6xf32> -> tensor<4x0xf32>
  fusion.output
}

// -----

// pad: the result's extents
fusion.fusion @f(%x: tensor<4x6xf32>, %v: f32) -> () {
  // expected-error @+1 {{'fusion.pad' result must have shape [4, 9], got [4, 8]}}
  %y = fusion.pad %x low [0, 1] high [0, 2] value %v : tensor<4x6xf32> -> tensor<4x8xf32>
  fusion.output
}

// -----

// pad: rank 1 or more
fusion.fusion @f(%x: tensor<f32>, %v: f32) -> () {
  // expected-error @+1 {{'fusion.pad' operand must have rank 1 or more}}
  %y = fusion.pad %x low [] high [] value %v : tensor<f32> -> tensor<f32>
  fusion.output
}

// -----

// cat: dim in range
fusion.fusion @f(%x: tensor<4x6xf32>) -> () {
  // expected-error @+1 {{'fusion.cat' dim 2 is out of range for rank 2}}
  %y = fusion.cat %x, %x dim 2 : tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x12xf32>
  fusion.output
}

// -----

// cat: one element type
fusion.fusion @f(%x: tensor<4x6xf32>, %z: tensor<4x6xf64>) -> () {
  // expected-error @+1 {{'fusion.cat' operands must share one element type: #0 is f32, #1 f64}}
  %y = fusion.cat %x, %z dim 1 : tensor<4x6xf32>, tensor<4x6xf64> -> tensor<4x12xf32>
  fusion.output
}

// -----

// cat: one rank
fusion.fusion @f(%x: tensor<4x6xf32>, %z: tensor<6xf32>) -> () {
  // expected-error @+1 {{'fusion.cat' operands must share one rank: #0 has 2, #1 1}}
  %y = fusion.cat %x, %z dim 1 : tensor<4x6xf32>, tensor<6xf32> -> tensor<4x12xf32>
  fusion.output
}

// -----

// cat: static extents along dim
fusion.fusion @f(%x: tensor<4x6xf32>, %z: tensor<4x?xf32>) -> () {
  // expected-error @+1 {{'fusion.cat' operand #1 has a dynamic extent in dim 1, which it resizes: resized dims must be static}}
  %y = fusion.cat %x, %z dim 1 : tensor<4x6xf32>, tensor<4x?xf32> -> tensor<4x?xf32>
  fusion.output
}

// -----

// cat: only dim may differ
fusion.fusion @f(%x: tensor<4x6xf32>, %z: tensor<3x6xf32>) -> () {
  // expected-error @+1 {{'fusion.cat' operand #1 has extent 3 in dim 0, operand #0 4: only dim 1 may differ}}
  %y = fusion.cat %x, %z dim 1 : tensor<4x6xf32>, tensor<3x6xf32> -> tensor<4x12xf32>
  fusion.output
}

// -----

// cat: the result's shape
fusion.fusion @f(%x: tensor<4x6xf32>, %z: tensor<?x2xf32>) -> () {
  // expected-error @+1 {{'fusion.cat' result must have shape [4, 8], got [?, 8]}}
  %y = fusion.cat %z, %x dim 1 : tensor<?x2xf32>, tensor<4x6xf32> -> tensor<?x8xf32>
  fusion.output
}

// -----

// cat: at least one operand
fusion.fusion @f() -> () {
  // expected-error @+1 {{'fusion.cat' needs at least one operand}}
  %y = "fusion.cat"() <{dim = 0 : i64}> : () -> tensor<4xf32>
  fusion.output
}

// -----

// cat: static extents off the dim agree across every operand, not only with the first
fusion.fusion @f(%x: tensor<?x2xf32>, %y: tensor<3x2xf32>, %z: tensor<4x2xf32>) -> () {
  // expected-error @+1 {{'fusion.cat' operand #2 has extent 4 in dim 0, operand #1 3: only dim 1 may differ}}
  %c = fusion.cat %x, %y, %z dim 1 : tensor<?x2xf32>, tensor<3x2xf32>, tensor<4x2xf32> -> tensor<3x6xf32>
  fusion.output
}

// -----

// A float function (erfc) takes f32/f64 only
fusion.fusion @f(%x: tensor<4xi32>) -> () {
  // expected-error @+1 {{'fusion.erfc' operand has element type i32, expected one of f32, f64}}
  %y = fusion.erfc %x : tensor<4xi32>
  fusion.output
}

// -----

// A rounding op takes numbers, not i1
fusion.fusion @f(%x: tensor<4xi1>) -> () {
  // expected-error @+1 {{'fusion.round' operand has element type i1, expected one of f32, f64, i32, i64}}
  %y = fusion.round %x : tensor<4xi1>
  fusion.output
}

// -----

// bitwise_not takes integers and i1, not floats
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  // expected-error @+1 {{'fusion.bitwise_not' operand has element type f32, expected one of i32, i64, i1}}
  %y = fusion.bitwise_not %x : tensor<4xf32>
  fusion.output
}

// -----

// A test's result is i1
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  // expected-error @+1 {{'fusion.isnan' result has element type f32, expected i1}}
  %y = fusion.isnan %x : tensor<4xf32> -> tensor<4xf32>
  fusion.output
}

// -----

// A test's operand is a number (i1 is not one)
fusion.fusion @f(%x: tensor<4xi1>) -> () {
  // expected-error @+1 {{'fusion.signbit' operand has element type i1, expected one of f32, f64, i32, i64}}
  %y = fusion.signbit %x : tensor<4xi1> -> tensor<4xi1>
  fusion.output
}

// -----

// A test's result has its operand's shape
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  // expected-error @+1 {{'fusion.isinf' operand #0 has shape [4], incompatible with result shape [5] (use broadcast_in_dim to broadcast)}}
  %y = fusion.isinf %x : tensor<4xf32> -> tensor<5xi1>
  fusion.output
}

// -----

// gcd and the shifts take integers only
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  // expected-error @+1 {{'fusion.gcd' lhs has element type f32, expected one of i32, i64}}
  %y = fusion.gcd %x, %x : tensor<4xf32>
  fusion.output
}

// -----

fusion.fusion @f(%x: tensor<4xi1>) -> () {
  // expected-error @+1 {{'fusion.bitwise_left_shift' lhs has element type i1, expected one of i32, i64}}
  %y = fusion.bitwise_left_shift %x, %x : tensor<4xi1>
  fusion.output
}

// -----

// The bitwise ops take integers and i1, not floats
fusion.fusion @f(%x: tensor<4xf64>) -> () {
  // expected-error @+1 {{'fusion.bitwise_and' lhs has element type f64, expected one of i32, i64, i1}}
  %y = fusion.bitwise_and %x, %x : tensor<4xf64>
  fusion.output
}

// -----

// nextafter and atan2 take floats only
fusion.fusion @f(%x: tensor<4xi64>) -> () {
  // expected-error @+1 {{'fusion.nextafter' lhs has element type i64, expected one of f32, f64}}
  %y = fusion.nextafter %x, %x : tensor<4xi64>
  fusion.output
}

// -----

// A random op takes one size per dynamic dim
fusion.fusion @f(%x: tensor<?x3xf32>, %s: i64) -> () {
  // expected-error @+1 {{'fusion.rand' needs one size operand per dynamic result dim: 1 dynamic, 0 given}}
  %r = fusion.rand %s, %s : tensor<?x3xf32>
  fusion.output
}

// -----

// A random op draws f32 or f64
fusion.fusion @f(%s: i64) -> () {
  // expected-error @+1 {{'fusion.randn' result has element type bf16, expected one of f32, f64}}
  %r = fusion.randn %s, %s : tensor<4xbf16>
  fusion.output
}

// -----

// A scan's dim is one of its operand's
fusion.fusion @f(%x: tensor<?x?xf32>) -> () {
  // expected-error @+1 {{'fusion.cumsum' dim 2 is out of range for rank 2}}
  %s = fusion.cumsum %x along 2 : tensor<?x?xf32>
  fusion.output
}

// -----

// A scan computes in f32, f64, i32 or i64
fusion.fusion @f(%x: tensor<8xbf16>) -> () {
  // expected-error @+1 {{'fusion.cummax' operand has element type bf16, expected one of f32, f64, i32, i64 (f16/bf16 are storage types: cast to f32 first)}}
  %s = fusion.cummax %x along 0 : tensor<8xbf16>
  fusion.output
}

// -----

// A scan of booleans is refused (cast to an integer first)
fusion.fusion @f(%x: tensor<8xi1>) -> () {
  // expected-error @+1 {{'fusion.cumsum' operand has element type i1, expected one of f32, f64, i32, i64}}
  %s = fusion.cumsum %x along 0 : tensor<8xi1>
  fusion.output
}

// -----

// topk takes at most the extent along its dim
fusion.fusion @f(%x: tensor<4x8xf32>) -> () {
  // expected-error @+1 {{'fusion.topk' k (9) is more than the extent 8 of dim 1}}
  %v, %i = fusion.topk %x along 1 k(9) largest : tensor<4x8xf32> -> tensor<4x9xf32>, tensor<4x9xi64>
  fusion.output
}

// -----

// topk's results have k along its dim
fusion.fusion @f(%x: tensor<4x8xf32>) -> () {
  // expected-error @+1 {{'fusion.topk' values shape [4, 3], expected [4, 2]}}
  %v, %i = fusion.topk %x along 1 k(2) : tensor<4x8xf32> -> tensor<4x3xf32>, tensor<4x2xi64>
  fusion.output
}

// -----

// topk's indices are i64
fusion.fusion @f(%x: tensor<4x8xf32>) -> () {
  // expected-error @+1 {{'fusion.topk' indices has element type i32, expected i64}}
  %v, %i = fusion.topk %x along 1 k(2) : tensor<4x8xf32> -> tensor<4x2xf32>, tensor<4x2xi32>
  fusion.output
}

// -----

// argsort's dim is one of its operand's
fusion.fusion @f(%x: tensor<4x8xf32>) -> () {
  // expected-error @+1 {{'fusion.argsort' dim 2 is out of range for rank 2}}
  %i = fusion.argsort %x along 2 : tensor<4x8xf32> -> tensor<4x8xi64>
  fusion.output
}

// -----

// argsort gives i64 indices of its operand's shape
fusion.fusion @f(%x: tensor<4x8xf32>) -> () {
  // expected-error @+1 {{'fusion.argsort' result shape [4, 7], expected [4, 8]}}
  %i = fusion.argsort %x along 1 : tensor<4x8xf32> -> tensor<4x7xi64>
  fusion.output
}
