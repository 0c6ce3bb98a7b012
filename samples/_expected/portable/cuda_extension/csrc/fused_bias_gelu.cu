// migrate[MIG730]: custom CUDA kernel file (31 lines, 1 __global__ kernels): rewrite it in Ascend C (AscendC custom ops) or find a torch_npu op that does the same.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <torch/extension.h>

namespace {

template <typename scalar_t>
__global__ void bias_gelu_kernel(const scalar_t* __restrict__ x, const scalar_t* __restrict__ bias,
                                 scalar_t* __restrict__ y, int64_t n, int64_t hidden) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float v = static_cast<float>(x[i]) + static_cast<float>(bias[i % hidden]);
  y[i] = static_cast<scalar_t>(0.5f * v * (1.0f + erff(v * 0.70710678f)));
}

}  // namespace

torch::Tensor fused_bias_gelu_cuda(const torch::Tensor& x, const torch::Tensor& bias) {
  const at::cuda::OptionalCUDAGuard guard(device_of(x));
  auto y = torch::empty_like(x);
  const int64_t n = x.numel();
  const int threads = 256;
  const int blocks = static_cast<int>((n + threads - 1) / threads);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "bias_gelu", [&] {
    bias_gelu_kernel<scalar_t><<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<scalar_t>(), bias.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n, x.size(-1));
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
