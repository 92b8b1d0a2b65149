func.func @main(%a: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<f32>) -> tensor<f32>
  %r = linalg.dot ins(%a, %b : tensor<32xf32>, tensor<32xf32>) outs(%acc : tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}
