// The libm functions as CUDA calls: the float function for f32 (and for f16/bf16, computed in
// float and rounded back), the double one for f64, fuser::gcd for integers.
// RUN: fuser-opt %s -t 'cuda{preamble=false}' | filecheck %s

kernel.func @functions(%x: f32, %y: f64, %h: bf16, %i: i32, %l: i64, %out: !kernel.tensor<f32, 1>) {
  %erfc = libm.erfc %x : f32
  %erfinv = libm.erfinv %y : f64
  %erfcinv = libm.erfcinv %x : f32
  %lgamma = libm.lgamma %h : bf16
  %fmod = libm.fmod %x, %erfc : f32
  %next = libm.nextafter %y, %erfinv : f64
  %gcd = libm.gcd %i, %i : i32
  %gcd64 = libm.gcd %l, %l : i64
  %c = arith.constant 0 : i32
  kernel.store %fmod, %out[%c] : f32, !kernel.tensor<f32, 1>, i32
  kernel.return
}

// CHECK-LABEL: void functions(
// CHECK-NEXT:    float erfc_ = erfcf(x);
// CHECK-NEXT:    double erfinv_ = erfinv(y);
// CHECK-NEXT:    float erfcinv_ = erfcinvf(x);
// CHECK-NEXT:    __nv_bfloat16 lgamma_ = __float2bfloat16_rn(lgammaf(__bfloat162float(h)));
// CHECK-NEXT:    float fmod_ = fmodf(x, erfc_);
// CHECK-NEXT:    double next = nextafter(y, erfinv_);
// CHECK-NEXT:    int gcd = fuser::gcd(i, i);
// CHECK-NEXT:    long long gcd64 = fuser::gcd(l, l);
