func.func @main(%x: tensor<1x8x18x18xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<1x16x16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<1x16x16x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x8x18x18xf32>, tensor<16x8x3x3xf32>) outs(%acc : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  return %r : tensor<1x16x16x16xf32>
}
