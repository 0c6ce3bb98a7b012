#include <torch/extension.h>

torch::Tensor fused_bias_gelu_cuda(const torch::Tensor& x, const torch::Tensor& bias);

torch::Tensor fused_bias_gelu(const torch::Tensor& x, const torch::Tensor& bias) {
  TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
  TORCH_CHECK(bias.is_cuda(), "bias must be a CUDA tensor");
  TORCH_CHECK(x.size(-1) == bias.size(0), "bias must match the last dimension of x");
  return fused_bias_gelu_cuda(x.contiguous(), bias.contiguous());
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("fused_bias_gelu", &fused_bias_gelu, "y = gelu(x + bias) (CUDA)");
}
