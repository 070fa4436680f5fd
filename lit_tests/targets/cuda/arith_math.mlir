// Scalar arith and math: every cmpf predicate (ordered and unordered, NaN-correct), unsigned
// integer ops, conversions between all element types, exact constants, math on f16, f32, f64.
// RUN: fuser-opt %s -t 'cuda{preamble=false}' | filecheck %s

kernel.func @compare(%a: f32, %b: f32, %h: f16, %g: f16, %out: !kernel.tensor<i1, 1>) {
  %0 = arith.cmpf false, %a, %b : f32
  %1 = arith.cmpf oeq, %a, %b : f32
  %2 = arith.cmpf ogt, %a, %b : f32
  %3 = arith.cmpf oge, %a, %b : f32
  %4 = arith.cmpf olt, %a, %b : f32
  %5 = arith.cmpf ole, %a, %b : f32
  %6 = arith.cmpf one, %a, %b : f32
  %7 = arith.cmpf ord, %a, %b : f32
  %8 = arith.cmpf ueq, %a, %b : f32
  %9 = arith.cmpf ugt, %a, %b : f32
  %10 = arith.cmpf uge, %a, %b : f32
  %11 = arith.cmpf ult, %a, %b : f32
  %12 = arith.cmpf ule, %a, %b : f32
  %13 = arith.cmpf une, %a, %b : f32
  %14 = arith.cmpf uno, %a, %b : f32
  %15 = arith.cmpf true, %a, %b : f32
  %16 = arith.cmpf ult, %h, %g : f16
  %i = arith.constant 0 : i32
  kernel.store %16, %out[%i] : i1, !kernel.tensor<i1, 1>, i32
  kernel.return
}

// CHECK-LABEL: void compare(
// CHECK-NEXT:    bool cmpf0 = false;
// CHECK-NEXT:    bool cmpf1 = a == b;
// CHECK-NEXT:    bool cmpf2 = a > b;
// CHECK-NEXT:    bool cmpf3 = a >= b;
// CHECK-NEXT:    bool cmpf4 = a < b;
// CHECK-NEXT:    bool cmpf5 = a <= b;
// CHECK-NEXT:    bool cmpf6 = a < b || a > b;
// CHECK-NEXT:    bool cmpf7 = a == a && b == b;
// CHECK-NEXT:    bool cmpf8 = !(a < b || a > b);
// CHECK-NEXT:    bool cmpf9 = !(a <= b);
// CHECK-NEXT:    bool cmpf10 = !(a < b);
// CHECK-NEXT:    bool cmpf11 = !(a >= b);
// CHECK-NEXT:    bool cmpf12 = !(a > b);
// CHECK-NEXT:    bool cmpf13 = a != b;
// CHECK-NEXT:    bool cmpf14 = a != a || b != b;
// CHECK-NEXT:    bool cmpf15 = true;
// CHECK-NEXT:    bool cmpf16 = !(__half2float(h) >= __half2float(g));

kernel.func @integers(%x: i32, %y: i32, %l: i64, %f: i1, %out: !kernel.tensor<i64, 1>) {
  %0 = arith.divui %x, %y : i32
  %1 = arith.remui %l, %l : i64
  %2 = arith.shrui %x, %y : i32
  %3 = arith.shli %x, %y : i32
  %4 = arith.shrsi %x, %y : i32
  %5 = arith.maxsi %x, %y : i32
  %6 = arith.minui %l, %l : i64
  %7 = arith.cmpi ult, %x, %y : i32
  %8 = arith.cmpi sge, %l, %l : i64
  %9 = arith.andi %f, %7 : i1
  %10 = arith.xori %x, %y : i32
  %11 = arith.select %f, %x, %y : i32
  %12 = arith.extui %x : i32 to i64
  %13 = arith.extsi %f : i1 to i64
  %14 = arith.trunci %l : i64 to i32
  %15 = arith.floordivsi %x, %y : i32
  %16 = math.absi %l : i64
  %min = arith.constant -2147483648 : i32
  %big = arith.constant 9223372036854775807 : i64
  %neg = arith.constant -5 : i64
  %17 = arith.addi %x, %min : i32
  %18 = arith.addi %big, %neg : i64
  %19 = arith.cmpi slt, %f, %9 : i1
  %c0 = arith.constant 0 : i32
  kernel.store %18, %out[%c0] : i64, !kernel.tensor<i64, 1>, i32
  kernel.return
}

// CHECK-LABEL: void integers(
// CHECK-NEXT:    int divui0 = (int)((unsigned)x / (unsigned)y);
// CHECK-NEXT:    long long remui0 = (long long)((unsigned long long)l % (unsigned long long)l);
// CHECK-NEXT:    int shrui0 = (int)((unsigned)x >> y);
// CHECK-NEXT:    int shli0 = (int)((unsigned)x << y);
// CHECK-NEXT:    int shrsi0 = x >> y;
// CHECK-NEXT:    int maxsi0 = x > y ? x : y;
// CHECK-NEXT:    long long minui0 = (unsigned long long)l < (unsigned long long)l ? l : l;
// CHECK-NEXT:    bool cmpi0 = (unsigned)x < (unsigned)y;
// CHECK-NEXT:    bool cmpi1 = l >= l;
// CHECK-NEXT:    bool andi0 = f && cmpi0;
// CHECK-NEXT:    int xori0 = x ^ y;
// CHECK-NEXT:    int select0 = f ? x : y;
// CHECK-NEXT:    long long extui0 = (long long)(unsigned)x;
// CHECK-NEXT:    long long extsi0 = f ? (-1LL) : 0;
// CHECK-NEXT:    int trunci0 = (int)l;
// CHECK-NEXT:    int floordivsi0 = x / y - (x % y != 0 && (x < 0) != (y < 0));
// CHECK-NEXT:    long long absi0 = (long long)llabs(l);
// CHECK-NEXT:    int addi0 = x + (-2147483647 - 1);
// CHECK-NEXT:    long long addi1 = 9223372036854775807LL + (-5LL);
// CHECK-NEXT:    bool cmpi2 = andi0 < f;

kernel.func @conversions(%h: f16, %b: bf16, %f: f32, %d: f64, %i: i32, %l: i64, %out: !kernel.tensor<bf16, 1>) {
  %0 = arith.extf %h : f16 to f32
  %1 = arith.extf %b : bf16 to f64
  %2 = arith.truncf %d : f64 to f16
  %3 = arith.truncf %d : f64 to bf16
  %4 = arith.truncf %d : f64 to f32
  %5 = arith.extf %f : f32 to f64
  %6 = arith.sitofp %l : i64 to bf16
  %7 = arith.uitofp %i : i32 to f32
  %8 = arith.fptosi %h : f16 to i64
  %9 = arith.fptosi %d : f64 to i32
  %10 = arith.sitofp %i : i32 to f16
  %11 = arith.fptoui %b : bf16 to i32
  %c0 = arith.constant 0 : i32
  kernel.store %6, %out[%c0] : bf16, !kernel.tensor<bf16, 1>, i32
  kernel.return
}

// Conversions round once, straight from the source type (f64 -> f16 is not f64 -> f32 -> f16).
// CHECK-LABEL: void conversions(
// CHECK-NEXT:    float extf0 = __half2float(h);
// CHECK-NEXT:    double extf1 = (double)__bfloat162float(b);
// CHECK-NEXT:    __half truncf0 = __double2half(d);
// CHECK-NEXT:    __nv_bfloat16 truncf1 = __double2bfloat16(d);
// CHECK-NEXT:    float truncf2 = (float)d;
// CHECK-NEXT:    double extf2 = (double)f;
// CHECK-NEXT:    __nv_bfloat16 sitofp0 = __ll2bfloat16_rn(l);
// CHECK-NEXT:    float uitofp0 = (float)(unsigned)i;
// CHECK-NEXT:    long long fptosi0 = __half2ll_rz(h);
// CHECK-NEXT:    int fptosi1 = (int)d;
// CHECK-NEXT:    __half sitofp1 = __int2half_rn(i);
// CHECK-NEXT:    int fptoui0 = (int)__bfloat162uint_rz(b);

kernel.func @constants_and_math(%x: f32, %d: f64, %h: f16, %b: bf16, %out: !kernel.tensor<f16, 1>) {
  %tenth = arith.constant 1.000000e-01 : f32
  %third = arith.constant 0.33333333333333331 : f64
  %inf = arith.constant 0x7F800000 : f32
  %nan = arith.constant 0x7FF8000000000000 : f64
  %negzero = arith.constant -0.000000e+00 : f32
  %tiny = arith.constant 1.000000e-40 : f32
  %hc = arith.constant 1.500000e+00 : f16
  %bc = arith.constant -2.000000e+00 : bf16
  %0 = arith.mulf %x, %tenth : f32
  %1 = arith.addf %d, %third : f64
  %2 = arith.minimumf %x, %inf : f32
  %3 = arith.maximumf %d, %nan : f64
  %4 = arith.subf %x, %negzero : f32
  %5 = arith.addf %x, %tiny : f32
  %6 = arith.addf %h, %hc : f16
  %7 = arith.mulf %b, %bc : bf16
  %8 = math.tanh %x : f32
  %9 = math.erf %d : f64
  %10 = math.sqrt %h : f16
  %11 = math.powf %x, %x : f32
  %12 = math.fma %d, %d, %d : f64
  %13 = math.absf %b : bf16
  %14 = arith.maxnumf %x, %x : f32
  %15 = math.roundeven %d : f64
  %c0 = arith.constant 0 : i32
  kernel.store %10, %out[%c0] : f16, !kernel.tensor<f16, 1>, i32
  kernel.return
}

// Literals are exact: the shortest text that reads back as the same f32 or f64; f16 and bf16
// through an exact conversion; infinities and NaN as bit patterns. f16/bf16 arithmetic is done
// in float and rounded back.
// CHECK-LABEL: void constants_and_math(
// CHECK-NEXT:    float mulf0 = x * 0.1f;
// CHECK-NEXT:    double addf0 = d + 0.3333333333333333;
// CHECK-NEXT:    float minimumf0 = fuser::minimum(x, __int_as_float(0x7f800000));
// CHECK-NEXT:    double maximumf0 = fuser::maximum(d, __longlong_as_double(0x7ff8000000000000LL));
// CHECK-NEXT:    float subf0 = x - (-0.0f);
// CHECK-NEXT:    float addf1 = x + 1e-40f;
// CHECK-NEXT:    __half addf2 = __float2half_rn(__half2float(h) + __half2float(__float2half_rn(1.5f)));
// CHECK-NEXT:    __nv_bfloat16 mulf1 = __float2bfloat16_rn(__bfloat162float(b) * __bfloat162float(__float2bfloat16_rn(-2.0f)));
// CHECK-NEXT:    float tanh0 = tanhf(x);
// CHECK-NEXT:    double erf0 = erf(d);
// CHECK-NEXT:    __half sqrt0 = __float2half_rn(sqrtf(__half2float(h)));
// CHECK-NEXT:    float powf0 = fuser::pow(x, x);
// CHECK-NEXT:    double fma0 = fma(d, d, d);
// CHECK-NEXT:    __nv_bfloat16 absf0 = __float2bfloat16_rn(fabsf(__bfloat162float(b)));
// CHECK-NEXT:    float maxnumf0 = fmaxf(x, x);
// CHECK-NEXT:    double roundeven0 = rint(d);
