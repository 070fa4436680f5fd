// libm's type rules: float functions on floats and gcd on i32/i64 (messages naming the op), one type
// for the operands and the result (xDSL's constraint, whose message does not name the op).
// RUN: fuser-opt %s --split-input-file --verify-diagnostics

kernel.func @f(%i: i32) {
  // expected-error @+1 {{'libm.erfc' takes one of f16, bf16, f32, f64, got i32}}
  %y = "libm.erfc"(%i) : (i32) -> i32
  kernel.return
}

// -----

kernel.func @f(%x: f32) {
  // expected-error @+1 {{'libm.gcd' takes one of i32, i64, got f32}}
  %y = "libm.gcd"(%x, %x) : (f32, f32) -> f32
  kernel.return
}

// -----

kernel.func @f(%x: f32, %y: f64) {
  // expected-error @+1 {{attribute f32 expected from variable 'T', but got f64}}
  %z = "libm.fmod"(%x, %y) : (f32, f64) -> f32
  kernel.return
}
