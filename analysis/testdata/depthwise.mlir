func.func @main(%x: tensor<1x32x17x17xf32>, %w: tensor<32x3x3xf32>) -> tensor<1x32x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<1x32x8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %r = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<1x32x17x17xf32>, tensor<32x3x3xf32>) outs(%acc : tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  return %r : tensor<1x32x8x8xf32>
}
