// A cast chain f32 -> bf16 (with a relu in f32) on static shapes: no `shapes` needed. The widest
// element (f32) sets the vector width to 4: 16-byte loads of x, 8-byte stores of bf16.
// RUN: fuser-opt %s -p fuser-schedule | filecheck %s

fusion.fusion @to_bf16(%x: tensor<256x64xf32>) -> (tensor<256x64xbf16>) {
  %r = fusion.relu %x : tensor<256x64xf32>
  %y = fusion.cast %r : tensor<256x64xf32> -> tensor<256x64xbf16>
  fusion.output %y : tensor<256x64xbf16>
}

// CHECK:      kernel.func @to_bf16_pointwise(%x: !kernel.tensor<f32, 2>, %y: !kernel.tensor<bf16, 2>)
// CHECK-SAME:   vector_width=4, unroll=1, index_bits=32, grid_2d=False
// CHECK-SAME:   fuser.launch = "grid=[32, 1, 1] block=[128, 1, 1] smem=0"
// CHECK:        %[[XV:.*]] = kernel.load %x[%elem] : !kernel.tensor<f32, 2>, i32 -> vector<4xf32>
// CHECK:        kernel.comment "fusion.relu %r"
// CHECK:        %r = arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:   kernel.comment "fusion.cast %y"
// CHECK-NEXT:   %[[Y:.*]] = arith.truncf %r : f32 to bf16
// CHECK-NEXT:   kernel.array_store %[[Y]], %y_buf[%j] : bf16, !kernel.array<4xbf16, local>, i32
// CHECK:        %[[YV:.*]] = kernel.array_load %y_buf[%{{.*}}] : !kernel.array<4xbf16, local>, i32 -> vector<4xbf16>
// CHECK-NEXT:   kernel.store %[[YV]], %y[%elem_1] : vector<4xbf16>, !kernel.tensor<bf16, 2>, i32

// bf16 alone: 8 elements per vector. bf16 -> f16 goes through f32, exactly.
fusion.fusion @bf16_to_f16(%x: tensor<64xbf16>) -> (tensor<64xf16>) {
  %y = fusion.cast %x : tensor<64xbf16> -> tensor<64xf16>
  fusion.output %y : tensor<64xf16>
}

// CHECK:      kernel.func @bf16_to_f16_pointwise(%x: !kernel.tensor<bf16, 1>, %y: !kernel.tensor<f16, 1>)
// CHECK-SAME:   vector_width=8
// CHECK:        kernel.load %x[%elem] : !kernel.tensor<bf16, 1>, i32 -> vector<8xbf16>
// CHECK:        %[[W:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK-NEXT:   %{{.*}} = arith.truncf %[[W]] : f32 to f16
// CHECK:        kernel.store %{{.*}}, %y[%elem_1] : vector<8xf16>, !kernel.tensor<f16, 1>, i32
