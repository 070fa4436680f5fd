// One case per verifier rule of every fusion op; each prints a located diagnostic.
// Messages from xDSL's own type constraints (a result type that differs from the operand type a
// constraint requires, a scalar where a tensor is required) do not name the op.
// RUN: fuser-opt %s --split-input-file --verify-diagnostics | filecheck %s

// fusion.fusion: block arguments must match the signature
// CHECK:      {{.*}}invalid.mlir:[[# @LINE + 1]]:1: error: 'fusion.fusion @f' block argument types do not match its signature
"fusion.fusion"() <{sym_name = "f", function_type = (tensor<4xf32>) -> ()}> ({
^bb0(%x: tensor<5xf32>):
  "fusion.output"() : () -> ()
}) : () -> ()

// -----

// fusion.fusion: inputs are tensors or scalars of an element type (i8 is not one)
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.fusion @f' input #1 has type tensor<4xi8>, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1
fusion.fusion @f(%x: tensor<4xf32>, %y: tensor<4xi8>) -> () {
  fusion.output
}

// -----

// fusion.fusion: an index is not an input
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.fusion @f' input #0 has type index, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1
fusion.fusion @f(%n: index) -> () {
  fusion.output
}

// -----

// fusion.fusion: the body ends with fusion.output
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.fusion @f' must end with a 'fusion.output'
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  %y = fusion.neg %x : tensor<4xf32>
}

// -----

// fusion.fusion: the outputs match the signature
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.fusion @f' outputs (tensor<4xf32>) do not match its signature (tensor<?xf32>)
fusion.fusion @f(%x: tensor<4xf32>) -> (tensor<?xf32>) {
  fusion.output %x : tensor<4xf32>
}

// -----

// fusion.fusion: outputs are tensors
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: {{.*}}invalid.mlir:[[# @LINE + 1]]:1: error: 'fusion.fusion @f' output #0 is a scalar; outputs are tensors
fusion.fusion @f(%s: f32) -> (f32) {
  fusion.output %s : f32
}

// -----

// fusion.output: only inside a fusion.fusion
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.output' expects parent op 'fusion.fusion'
fusion.output

// -----

// fusion.constant: the value has an element type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.constant' value has type i8, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1
fusion.fusion @f() -> () {
  %c = fusion.constant 3 : i8
  fusion.output
}

// -----

// fusion.constant: index is not an element type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.constant' value has type index, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1
fusion.fusion @f() -> () {
  %c = fusion.constant 3 : index
  fusion.output
}

// -----

// fusion.constant: the result has the value's type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: attribute i64 expected from variable 'T', but got i32
fusion.fusion @f() -> () {
  %c = "fusion.constant"() <{value = 1 : i32}> : () -> i64
  fusion.output
}

// -----

// fusion.dim: the axis is in range
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: {{.*}}invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.dim' axis 2 is out of range for rank 2
fusion.fusion @f(%x: tensor<?x?xf32>) -> () {
  %n = fusion.dim %x[2] : tensor<?x?xf32>
  fusion.output
}

// -----

// fusion.dim: a negative axis is out of range
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.dim' axis -1 is out of range for rank 2
fusion.fusion @f(%x: tensor<?x?xf32>) -> () {
  %n = fusion.dim %x[-1] : tensor<?x?xf32>
  fusion.output
}

// -----

// fusion.dim: the operand is a fusion value
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.dim' input has type tensor<?xi8>, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1
fusion.fusion @f() -> () {
  %x = "test.op"() : () -> tensor<?xi8>
  %n = fusion.dim %x[0] : tensor<?xi8>
  fusion.output
}

// -----

// unary: f16/bf16 are storage types
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.neg' operand has element type bf16, expected one of f32, f64, i32, i64 (f16/bf16 are storage types: cast to f32 first)
fusion.fusion @f(%x: tensor<4xbf16>) -> () {
  %y = fusion.neg %x : tensor<4xbf16>
  fusion.output
}

// -----

// unary: float-only ops reject integers
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.exp' operand has element type i32, expected one of f32, f64
fusion.fusion @f(%x: tensor<4xi32>) -> () {
  %y = fusion.exp %x : tensor<4xi32>
  fusion.output
}

// -----

// unary: numeric ops reject i1
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.abs' operand has element type i1, expected one of f32, f64, i32, i64
fusion.fusion @f(%x: tensor<4xi1>) -> () {
  %y = fusion.abs %x : tensor<4xi1>
  fusion.output
}

// -----

// unary: operands have an element type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.relu' input has type tensor<4xi8>, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1
fusion.fusion @f() -> () {
  %x = "test.op"() : () -> tensor<4xi8>
  %y = fusion.relu %x : tensor<4xi8>
  fusion.output
}

// -----

// unary: tensors carry no encoding
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.sqrt' input has type tensor<4xf32, "sparse">; tensors with an encoding are not supported
fusion.fusion @f() -> () {
  %x = "test.op"() : () -> tensor<4xf32, "sparse">
  %y = fusion.sqrt %x : tensor<4xf32, "sparse">
  fusion.output
}

// -----

// unary: tensors are ranked
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.sin' input has type tensor<*xf32>, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1
fusion.fusion @f() -> () {
  %x = "test.op"() : () -> tensor<*xf32>
  %y = fusion.sin %x : tensor<*xf32>
  fusion.output
}

// -----

// unary: the result has the operand's type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: result 'result' at position 0 does not verify:
// CHECK-NEXT: attribute tensor<4xf32> expected from variable 'T', but got tensor<5xf32>
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  %y = "fusion.tanh"(%x) : (tensor<4xf32>) -> tensor<5xf32>
  fusion.output
}

// -----

// gelu: float-only (f16 is a storage type)
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.gelu' operand has element type f16, expected one of f32, f64 (f16/bf16 are storage types: cast to f32 first)
fusion.fusion @f(%x: tensor<4xf16>) -> () {
  %y = fusion.gelu %x tanh : tensor<4xf16>
  fusion.output
}

// -----

// gelu: float-only (no integers)
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.gelu' operand has element type i64, expected one of f32, f64
fusion.fusion @f(%x: i64) -> () {
  %y = fusion.gelu %x none : i64
  fusion.output
}

// -----

// binary: f16/bf16 are storage types
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.add' lhs has element type bf16, expected one of f32, f64, i32, i64 (f16/bf16 are storage types: cast to f32 first)
fusion.fusion @f(%x: tensor<4xbf16>) -> () {
  %y = fusion.add %x, %x : tensor<4xbf16>
  fusion.output
}

// -----

// binary: arithmetic rejects i1
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.mul' rhs has element type i1, expected one of f32, f64, i32, i64
fusion.fusion @f(%x: tensor<4xf32>, %m: tensor<4xi1>) -> () {
  %y = fusion.mul %x, %m : (tensor<4xf32>, tensor<4xi1>) -> tensor<4xf32>
  fusion.output
}

// -----

// pow: float-only
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.pow' lhs has element type i32, expected one of f32, f64
fusion.fusion @f(%x: tensor<4xi32>) -> () {
  %y = fusion.pow %x, %x : tensor<4xi32>
  fusion.output
}

// -----

// binary: operands share an element type (no promotion)
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.sub' operands have element types f32 and f64; they must match (insert a fusion.cast)
fusion.fusion @f(%x: tensor<4xf32>, %y: tensor<4xf64>) -> () {
  %z = fusion.sub %x, %y : (tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  fusion.output
}

// -----

// binary: a scalar operand has the tensor's element type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.div' operands have element types f32 and i32; they must match (insert a fusion.cast)
fusion.fusion @f(%x: tensor<4xf32>, %s: i32) -> () {
  %z = fusion.div %x, %s : (tensor<4xf32>, i32) -> tensor<4xf32>
  fusion.output
}

// -----

// binary: the result keeps the operands' element type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.maximum' result element type must be f32, got f64
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  %z = fusion.maximum %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf64>
  fusion.output
}

// -----

// binary: the result has an element type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.minimum' result has type tensor<4xi8>, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1
fusion.fusion @f(%x: tensor<4xi32>) -> () {
  %z = fusion.minimum %x, %x : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi8>
  fusion.output
}

// -----

// comparison: the result is i1
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.lt' result element type must be i1, got f32
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  %z = fusion.lt %x, %x : tensor<4xf32>
  fusion.output
}

// -----

// comparison: f16/bf16 are storage types
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.eq' lhs has element type f16, expected one of f32, f64, i32, i64, i1 (f16/bf16 are storage types: cast to f32 first)
fusion.fusion @f(%x: tensor<4xf16>) -> () {
  %z = fusion.eq %x, %x : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xi1>
  fusion.output
}

// -----

// comparison: operands share an element type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.ge' operands have element types i32 and i64; they must match (insert a fusion.cast)
fusion.fusion @f(%x: tensor<4xi32>, %s: i64) -> () {
  %z = fusion.ge %x, %s : (tensor<4xi32>, i64) -> tensor<4xi1>
  fusion.output
}

// -----

// pointwise: scalars produce a scalar
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.add' on scalars must produce a scalar
fusion.fusion @f(%s: f32, %t: f32) -> () {
  %z = fusion.add %s, %t : (f32, f32) -> tensor<4xf32>
  fusion.output
}

// -----

// pointwise: a tensor operand produces a tensor
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.ne' with a tensor operand must produce a tensor
fusion.fusion @f(%x: tensor<4xf32>, %s: f32) -> () {
  %z = fusion.ne %x, %s : (tensor<4xf32>, f32) -> i1
  fusion.output
}

// -----

// pointwise: no implicit broadcasting (static extents differ)
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: {{.*}}invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.add' operand #1 has shape [5], incompatible with result shape [4] (use broadcast_in_dim to broadcast)
fusion.fusion @f(%x: tensor<4xf32>, %y: tensor<5xf32>) -> () {
  %z = fusion.add %x, %y : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  fusion.output
}

// -----

// pointwise: no implicit broadcasting (ranks differ)
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.mul' operand #1 has shape [?, 1], incompatible with result shape [?] (use broadcast_in_dim to broadcast)
fusion.fusion @f(%x: tensor<?xf32>, %y: tensor<?x1xf32>) -> () {
  %z = fusion.mul %x, %y : (tensor<?xf32>, tensor<?x1xf32>) -> tensor<?xf32>
  fusion.output
}

// -----

// pointwise: the result keeps the static dims of its operands
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.sub' result shape [?, ?] must keep static dims of its operands ([?, 3])
fusion.fusion @f(%x: tensor<?x3xf32>, %y: tensor<?x?xf32>) -> () {
  %z = fusion.sub %x, %y : (tensor<?x3xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  fusion.output
}

// -----

// where: the condition is i1
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.where' condition has element type f32, expected i1
fusion.fusion @f(%c: tensor<4xf32>, %x: tensor<4xf32>) -> () {
  %z = fusion.where %c, %x, %x : tensor<4xf32>
  fusion.output
}

// -----

// where: the branches share an element type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.where' branches and result must share one element type, got f32, f64 -> f32
fusion.fusion @f(%c: tensor<4xi1>, %x: tensor<4xf32>, %s: f64) -> () {
  %z = fusion.where %c, %x, %s : (tensor<4xi1>, tensor<4xf32>, f64) -> tensor<4xf32>
  fusion.output
}

// -----

// where: the result has the branches' element type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.where' branches and result must share one element type, got bf16, bf16 -> f32
fusion.fusion @f(%c: tensor<4xi1>, %x: tensor<4xbf16>) -> () {
  %z = fusion.where %c, %x, %x : (tensor<4xi1>, tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xf32>
  fusion.output
}

// -----

// where: no implicit broadcasting of the condition
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.where' operand #0 has shape [1], incompatible with result shape [4] (use broadcast_in_dim to broadcast)
fusion.fusion @f(%c: tensor<1xi1>, %x: tensor<4xf32>) -> () {
  %z = fusion.where %c, %x, %x : (tensor<1xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  fusion.output
}

// -----

// where: scalars produce a scalar
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.where' on scalars must produce a scalar
fusion.fusion @f(%c: i1, %s: f32) -> () {
  %z = fusion.where %c, %s, %s : (i1, f32, f32) -> tensor<1xf32>
  fusion.output
}

// -----

// cast: the result has an element type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.cast' result has type tensor<4xi8>, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  %y = fusion.cast %x : tensor<4xf32> -> tensor<4xi8>
  fusion.output
}

// -----

// cast: keeps the shape
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.cast' operand #0 has shape [4], incompatible with result shape [5] (use broadcast_in_dim to broadcast)
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  %y = fusion.cast %x : tensor<4xf32> -> tensor<5xf64>
  fusion.output
}

// -----

// cast: keeps the rank
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.cast' operand #0 has shape [4], incompatible with result shape [4, 1] (use broadcast_in_dim to broadcast)
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  %y = fusion.cast %x : tensor<4xf32> -> tensor<4x1xbf16>
  fusion.output
}

// -----

// cast: a scalar stays a scalar
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.cast' on scalars must produce a scalar
fusion.fusion @f(%s: f32) -> () {
  %y = fusion.cast %s : f32 -> tensor<1xf64>
  fusion.output
}

// -----

// cast: a tensor stays a tensor
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.cast' with a tensor operand must produce a tensor
fusion.fusion @f(%x: tensor<1xf32>) -> () {
  %y = fusion.cast %x : tensor<1xf32> -> f64
  fusion.output
}

// -----

// set: the operand has an element type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.set' input has type tensor<4xi16>, expected a ranked tensor or scalar of f16, bf16, f32, f64, i32, i64 or i1
fusion.fusion @f() -> () {
  %x = "test.op"() : () -> tensor<4xi16>
  %y = fusion.set %x : tensor<4xi16>
  fusion.output
}

// -----

// set: the result has the operand's type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: result 'result' at position 0 does not verify:
// CHECK-NEXT: attribute tensor<4xf32> expected from variable 'T', but got tensor<4xf16>
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  %y = "fusion.set"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  fusion.output
}

// -----

// segment_set: the result has the operand's type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: result 'result' at position 0 does not verify:
// CHECK-NEXT: attribute tensor<?xf32> expected from variable 'T', but got tensor<4xf32>
fusion.fusion @f(%x: tensor<?xf32>) -> () {
  %y = "fusion.segment_set"(%x) : (tensor<?xf32>) -> tensor<4xf32>
  fusion.output
}

// -----

// segment_set: the operand is a tensor
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: operand 'input' at position 0 does not verify:
// CHECK-NEXT: f32 should be of base attribute tensor
fusion.fusion @f(%s: f32) -> () {
  %y = "fusion.segment_set"(%s) : (f32) -> f32
  fusion.output
}

// -----

// broadcast_in_dim: keeps the element type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.broadcast_in_dim' must keep the element type: operand f32, result f64
fusion.fusion @f(%x: tensor<3xf32>) -> () {
  %y = fusion.broadcast_in_dim %x [1] : tensor<3xf32> -> tensor<4x3xf64>
  fusion.output
}

// -----

// broadcast_in_dim: one broadcast dim per operand dim
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.broadcast_in_dim' needs one broadcast dim per operand dim: got 2 for rank 1
fusion.fusion @f(%x: tensor<3xf32>) -> () {
  %y = fusion.broadcast_in_dim %x [0, 1] : tensor<3xf32> -> tensor<4x3xf32>
  fusion.output
}

// -----

// broadcast_in_dim: a scalar maps no dims
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.broadcast_in_dim' needs one broadcast dim per operand dim: got 1 for rank 0
fusion.fusion @f(%s: f32) -> () {
  %y = fusion.broadcast_in_dim %s [0] : f32 -> tensor<4xf32>
  fusion.output
}

// -----

// broadcast_in_dim: broadcast dims are in range
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.broadcast_in_dim' broadcast dims [2] out of range for rank 2
fusion.fusion @f(%x: tensor<3xf32>) -> () {
  %y = fusion.broadcast_in_dim %x [2] : tensor<3xf32> -> tensor<4x3xf32>
  fusion.output
}

// -----

// broadcast_in_dim: broadcast dims are strictly increasing (no transpose)
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.broadcast_in_dim' broadcast dims [1, 0] must be strictly increasing
fusion.fusion @f(%x: tensor<3x4xf32>) -> () {
  %y = fusion.broadcast_in_dim %x [1, 0] : tensor<3x4xf32> -> tensor<4x3xf32>
  fusion.output
}

// -----

// broadcast_in_dim: broadcast dims are unique
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.broadcast_in_dim' broadcast dims [1, 1] must be strictly increasing
fusion.fusion @f(%x: tensor<3x3xf32>) -> () {
  %y = fusion.broadcast_in_dim %x [1, 1] : tensor<3x3xf32> -> tensor<2x3xf32>
  fusion.output
}

// -----

// broadcast_in_dim: an operand dim is 1 or matches its result dim
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.broadcast_in_dim' operand dim 0 (extent 3) cannot broadcast to result dim 1 (extent 4)
fusion.fusion @f(%x: tensor<3xf32>) -> () {
  %y = fusion.broadcast_in_dim %x [1] : tensor<3xf32> -> tensor<2x4xf32>
  fusion.output
}

// -----

// broadcast_in_dim: a new dynamic dim needs a size
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: {{.*}}invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.broadcast_in_dim' needs 1 size operand(s), one for each dynamic result dim the operand does not carry; got 0
fusion.fusion @f(%x: tensor<?xf32>) -> () {
  %y = fusion.broadcast_in_dim %x [1] : tensor<?xf32> -> tensor<?x?xf32>
  fusion.output
}

// -----

// broadcast_in_dim: a static 1 expanded to a dynamic dim needs a size
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.broadcast_in_dim' needs 1 size operand(s), one for each dynamic result dim the operand does not carry; got 0
fusion.fusion @f(%x: tensor<1xf32>) -> () {
  %y = fusion.broadcast_in_dim %x [0] : tensor<1xf32> -> tensor<?xf32>
  fusion.output
}

// -----

// broadcast_in_dim: no size for a dim the operand carries
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.broadcast_in_dim' needs 0 size operand(s), one for each dynamic result dim the operand does not carry; got 1
fusion.fusion @f(%x: tensor<?xf32>) -> () {
  %n = fusion.dim %x[0] : tensor<?xf32>
  %y = fusion.broadcast_in_dim %x [0] sizes(%n) : tensor<?xf32> -> tensor<?xf32>
  fusion.output
}

// -----

// broadcast_in_dim: the result is a tensor
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: result 'result' at position 0 does not verify:
// CHECK-NEXT: f32 should be of base attribute tensor
fusion.fusion @f(%s: f32) -> () {
  %y = "fusion.broadcast_in_dim"(%s) <{broadcast_dims = array<i64>}> : (f32) -> f32
  fusion.output
}

// -----

// sum: f16/bf16 are storage types
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.sum' operand has element type bf16, expected one of f32, f64, i32, i64 (f16/bf16 are storage types: cast to f32 first)
fusion.fusion @f(%x: tensor<4x3xbf16>) -> () {
  %y = fusion.sum %x [1] : tensor<4x3xbf16> -> tensor<4xbf16>
  fusion.output
}

// -----

// max: i1 is not numeric
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.max' operand has element type i1, expected one of f32, f64, i32, i64
fusion.fusion @f(%x: tensor<4x3xi1>) -> () {
  %y = fusion.max %x [1] : tensor<4x3xi1> -> tensor<4xi1>
  fusion.output
}

// -----

// min: keeps the element type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.min' must keep the element type: operand i32, result i64
fusion.fusion @f(%x: tensor<4x3xi32>) -> () {
  %y = fusion.min %x [1] : tensor<4x3xi32> -> tensor<4xi64>
  fusion.output
}

// -----

// sum: at least one axis
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.sum' needs at least one axis to reduce
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  %y = fusion.sum %x [] : tensor<4x3xf32> -> tensor<4x3xf32>
  fusion.output
}

// -----

// max: axes are in range
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.max' axis 2 is out of range for rank 2
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  %y = fusion.max %x [2] : tensor<4x3xf32> -> tensor<4x3xf32>
  fusion.output
}

// -----

// min: negative axes are out of range
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.min' axis -1 is out of range for rank 2
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  %y = fusion.min %x [-1] : tensor<4x3xf32> -> tensor<4xf32>
  fusion.output
}

// -----

// sum: axes are unique
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.sum' axes [1, 1] are not unique
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  %y = fusion.sum %x [1, 1] : tensor<4x3xf32> -> tensor<4xf32>
  fusion.output
}

// -----

// sum: axes are sorted
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: {{.*}}invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.sum' axes [2, 0] must be sorted ascending
fusion.fusion @f(%x: tensor<4x3x2xf32>) -> () {
  %y = fusion.sum %x [2, 0] : tensor<4x3x2xf32> -> tensor<3xf32>
  fusion.output
}

// -----

// sum: the result has the reduced shape
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.sum' result shape [3] does not match the reduced shape [4]
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  %y = fusion.sum %x [1] : tensor<4x3xf32> -> tensor<3xf32>
  fusion.output
}

// -----

// max: without keepdim the reduced dims go
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.max' result shape [?, 1] does not match the reduced shape [?]
fusion.fusion @f(%x: tensor<?x3xf32>) -> () {
  %y = fusion.max %x [1] : tensor<?x3xf32> -> tensor<?x1xf32>
  fusion.output
}

// -----

// min: with keepdim the reduced dims stay as 1
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.min' result shape [?] does not match the reduced shape [?, 1]
fusion.fusion @f(%x: tensor<?x3xf32>) -> () {
  %y = fusion.min %x [1] keepdim : tensor<?x3xf32> -> tensor<?xf32>
  fusion.output
}

// -----

// welford: float-only
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.welford' operand has element type i32, expected one of f32, f64
fusion.fusion @f(%x: tensor<4x3xi32>) -> () {
  %a, %m, %n = fusion.welford %x [1] : tensor<4x3xi32> -> tensor<4xi32>, tensor<4xi32>, tensor<4xi64>
  fusion.output
}

// -----

// welford: avg and var_sum keep the element type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.welford' avg and var_sum must have element type f32
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  %a, %m, %n = fusion.welford %x [1] : tensor<4x3xf32> -> tensor<4xf32>, tensor<4xf64>, tensor<4xi64>
  fusion.output
}

// -----

// welford: count is i64
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.welford' count must have element type i64
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  %a, %m, %n = fusion.welford %x [1] : tensor<4x3xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
  fusion.output
}

// -----

// welford: axes are in range
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.welford' axis 3 is out of range for rank 2
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  %a, %m, %n = fusion.welford %x [3] : tensor<4x3xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xi64>
  fusion.output
}

// -----

// welford: every result has the reduced shape
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.welford' result shape [3] does not match the reduced shape [4]
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  %a, %m, %n = fusion.welford %x [1] : tensor<4x3xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<3xi64>
  fusion.output
}

// -----

// var_mean: float-only
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.var_mean' operand has element type bf16, expected one of f32, f64 (f16/bf16 are storage types: cast to f32 first)
fusion.fusion @f(%x: tensor<4x3xbf16>) -> () {
  %v, %m = fusion.var_mean %x [1] correction(1) : tensor<4x3xbf16> -> tensor<4xbf16>, tensor<4xbf16>
  fusion.output
}

// -----

// var_mean: keeps the element type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.var_mean' must keep the element type: operand f64, result f32
fusion.fusion @f(%x: tensor<4x3xf64>) -> () {
  %v, %m = fusion.var_mean %x [1] correction(1) : tensor<4x3xf64> -> tensor<4xf64>, tensor<4xf32>
  fusion.output
}

// -----

// var_mean: the correction is non-negative
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.var_mean' correction must be non-negative, got -1
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  %v, %m = fusion.var_mean %x [1] correction(-1) : tensor<4x3xf32> -> tensor<4xf32>, tensor<4xf32>
  fusion.output
}

// -----

// var_mean: axes are unique
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.var_mean' axes [0, 0] are not unique
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  %v, %m = fusion.var_mean %x [0, 0] correction(0) : tensor<4x3xf32> -> tensor<3xf32>, tensor<3xf32>
  fusion.output
}

// -----

// var_mean: with keepdim both results keep the reduced dims as 1
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.var_mean' result shape [4] does not match the reduced shape [4, 1]
fusion.fusion @f(%x: tensor<4x3xf32>) -> () {
  %v, %m = fusion.var_mean %x [1] correction(0) keepdim : tensor<4x3xf32> -> tensor<4x1xf32>, tensor<4xf32>
  fusion.output
}

// -----

// matmul: f16, bf16, f32 or f64
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.matmul' lhs has element type i32, expected one of f16, bf16, f32, f64
fusion.fusion @f(%a: tensor<4x3xi32>, %b: tensor<3x2xi32>) -> () {
  %c = fusion.matmul %a, %b : tensor<4x3xi32>, tensor<3x2xi32> -> tensor<4x2xi32>
  fusion.output
}

// -----

// matmul: operands share an element type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.matmul' operands and result must share one element type, got f16, bf16 -> f16
fusion.fusion @f(%a: tensor<4x3xf16>, %b: tensor<3x2xbf16>) -> () {
  %c = fusion.matmul %a, %b : tensor<4x3xf16>, tensor<3x2xbf16> -> tensor<4x2xf16>
  fusion.output
}

// -----

// matmul: the result keeps the element type
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.matmul' operands and result must share one element type, got f16, f16 -> f32
fusion.fusion @f(%a: tensor<4x3xf16>, %b: tensor<3x2xf16>) -> () {
  %c = fusion.matmul %a, %b : tensor<4x3xf16>, tensor<3x2xf16> -> tensor<4x2xf32>
  fusion.output
}

// -----

// matmul: operands have rank >= 2
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.matmul' needs operands of one rank >= 2, got ranks 1 and 1
fusion.fusion @f(%a: tensor<3xf32>, %b: tensor<3xf32>) -> () {
  %c = fusion.matmul %a, %b : tensor<3xf32>, tensor<3xf32> -> tensor<f32>
  fusion.output
}

// -----

// matmul: operands have one rank
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.matmul' needs operands of one rank >= 2, got ranks 3 and 2
fusion.fusion @f(%a: tensor<2x4x3xf32>, %b: tensor<3x5xf32>) -> () {
  %c = fusion.matmul %a, %b : tensor<2x4x3xf32>, tensor<3x5xf32> -> tensor<2x4x5xf32>
  fusion.output
}

// -----

// matmul: contraction dims agree
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.matmul' contraction dims differ: lhs [?, 3], rhs [4, ?]
fusion.fusion @f(%a: tensor<?x3xf32>, %b: tensor<4x?xf32>) -> () {
  %c = fusion.matmul %a, %b : tensor<?x3xf32>, tensor<4x?xf32> -> tensor<?x?xf32>
  fusion.output
}

// -----

// matmul: batch dims agree
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.matmul' batch dims differ: lhs [2, 4, 3], rhs [5, 3, 6]
fusion.fusion @f(%a: tensor<2x4x3xf32>, %b: tensor<5x3x6xf32>) -> () {
  %c = fusion.matmul %a, %b : tensor<2x4x3xf32>, tensor<5x3x6xf32> -> tensor<2x4x6xf32>
  fusion.output
}

// -----

// matmul: the result is [..., M, N]
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: {{.*}}invalid.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' result shape [3, ?], expected [4, ?]
fusion.fusion @f(%a: tensor<4x3xf32>, %b: tensor<3x?xf32>) -> () {
  %c = fusion.matmul %a, %b : tensor<4x3xf32>, tensor<3x?xf32> -> tensor<3x?xf32>
  fusion.output
}

// -----

// matmul splits: the partial result is f32 for half operands
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.matmul' operands must share one element type and the partial result be f32, got bf16, bf16 -> bf16
fusion.fusion @f(%a: tensor<4x3xbf16>, %b: tensor<3x2xbf16>) -> () {
  %c = fusion.matmul %a, %b splits(2) : tensor<4x3xbf16>, tensor<3x2xbf16> -> tensor<2x4x2xbf16>
  fusion.output
}

// -----

// matmul splits: the partial result leads with the splits
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.matmul' partial result must have 2 (the splits) as its static first dim, got [3, 4, 2]
fusion.fusion @f(%a: tensor<4x3xf16>, %b: tensor<3x2xf16>) -> () {
  %c = fusion.matmul %a, %b splits(2) : tensor<4x3xf16>, tensor<3x2xf16> -> tensor<3x4x2xf32>
  fusion.output
}

// -----

// matmul splits: at least one
// CHECK:      {{^// -{5}$}}
// CHECK-NEXT: error: 'fusion.matmul' splits must be >= 1, got 0
fusion.fusion @f(%a: tensor<4x3xf64>, %b: tensor<3x2xf64>) -> () {
  %c = fusion.matmul %a, %b splits(0) : tensor<4x3xf64>, tensor<3x2xf64> -> tensor<0x4x2xf64>
  fusion.output
}
