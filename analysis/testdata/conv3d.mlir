func.func @main(%x: tensor<1x2x6x18x18xf32>, %w: tensor<8x2x3x3x3xf32>) -> tensor<1x8x4x16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<1x8x4x16x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<1x8x4x16x16xf32>) -> tensor<1x8x4x16x16xf32>
  %r = linalg.conv_3d_ncdhw_fcdhw {dilations = dense<1> : tensor<3xi64>, strides = dense<1> : tensor<3xi64>}
    ins(%x, %w : tensor<1x2x6x18x18xf32>, tensor<8x2x3x3x3xf32>)
    outs(%acc : tensor<1x8x4x16x16xf32>) -> tensor<1x8x4x16x16xf32>
  return %r : tensor<1x8x4x16x16xf32>
}
