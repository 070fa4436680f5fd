// The libm dialect: the CUDA math functions xDSL's math dialect lacks, on the scalar types of
// kernels, printed and parsed.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP

kernel.func @functions(%x: f32, %y: f64, %i: i32, %l: i64, %out: !kernel.tensor<f32, 1>) {
  %erfc = libm.erfc %x : f32
  %erfinv = libm.erfinv %erfc : f32
  %erfcinv = libm.erfcinv %y : f64
  %lgamma = libm.lgamma %erfinv : f32
  %fmod = libm.fmod %lgamma, %x : f32
  %next = libm.nextafter %erfcinv, %y : f64
  %gcd = libm.gcd %i, %i : i32
  %gcd64 = libm.gcd %l, %l : i64
  kernel.return
}

// CHECK-LABEL: kernel.func @functions
// CHECK-NEXT:    %erfc = libm.erfc %x : f32
// CHECK-NEXT:    %erfinv = libm.erfinv %erfc : f32
// CHECK-NEXT:    %erfcinv = libm.erfcinv %y : f64
// CHECK-NEXT:    %lgamma = libm.lgamma %erfinv : f32
// CHECK-NEXT:    %fmod = libm.fmod %lgamma, %x : f32
// CHECK-NEXT:    %next = libm.nextafter %erfcinv, %y : f64
// CHECK-NEXT:    %gcd = libm.gcd %i, %i : i32
// CHECK-NEXT:    %gcd64 = libm.gcd %l, %l : i64
