// Test module: a matmul, a ResNet-style 3x3 conv (im2col turns it into a matmul
// dispatch plus an im2col generic), a depthwise conv, a max-pool, an
// elementwise relu and a row reduction.
func.func @main(%a: tensor<64x128xf32>, %b: tensor<128x96xf32>,
                %x: tensor<1x8x18x18xf32>, %w: tensor<16x8x3x3xf32>,
                %dw: tensor<16x3x3xf32>, %e: tensor<64x256xf32>)
    -> (tensor<64x96xf32>, tensor<1x16x16x16xf32>, tensor<1x16x8x8xf32>, tensor<64x256xf32>, tensor<64xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant -3.40282347E+38 : f32
  %init = tensor.empty() : tensor<64x96xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<64x96xf32>) -> tensor<64x96xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x96xf32>) outs(%acc : tensor<64x96xf32>) -> tensor<64x96xf32>
  %i2 = tensor.empty() : tensor<1x16x16x16xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%i2 : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x18x18xf32>, tensor<16x8x3x3xf32>) outs(%acc2 : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %cp = tensor.pad %c low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2_: index, %i3: index):
    tensor.yield %zero : f32
  } : tensor<1x16x16x16xf32> to tensor<1x16x18x18xf32>
  %d = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%cp, %dw : tensor<1x16x18x18xf32>, tensor<16x3x3xf32>) outs(%acc2 : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %i3 = tensor.empty() : tensor<1x16x8x8xf32>
  %acc3 = linalg.fill ins(%ninf : f32) outs(%i3 : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %k = tensor.empty() : tensor<2x2xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%d, %k : tensor<1x16x16x16xf32>, tensor<2x2xf32>) outs(%acc3 : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %i4 = tensor.empty() : tensor<64x256xf32>
  %el = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%e : tensor<64x256xf32>) outs(%i4 : tensor<64x256xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<64x256xf32>
  %i5 = tensor.empty() : tensor<64xf32>
  %acc5 = linalg.fill ins(%zero : f32) outs(%i5 : tensor<64xf32>) -> tensor<64xf32>
  %red = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%e : tensor<64x256xf32>) outs(%acc5 : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.addf %in, %out : f32
    linalg.yield %m : f32
  } -> tensor<64xf32>
  return %r, %c, %p, %el, %red : tensor<64x96xf32>, tensor<1x16x16x16xf32>, tensor<1x16x8x8xf32>, tensor<64x256xf32>, tensor<64xf32>
}
