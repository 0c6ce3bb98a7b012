"""Build the fused_ops CUDA extension: python setup.py build_ext --inplace"""

import os

from setuptools import find_packages, setup
# migrate[MIG517]: `torch.utils.cpp_extension.CUDAExtension` builds CUDA code: CUDA kernels (.cu files) cannot be compiled for NPU and no tool translates them. (see `migrate rules MIG517`)
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

# migrate[MIG702]: `TORCH_CUDA_ARCH_LIST` has no drop-in Ascend counterpart: selects GPU architectures for CUDA extensions; drop it with the CUDA extension (MIG601, MIG730).
cuda_arch = os.environ.get("TORCH_CUDA_ARCH_LIST", "7.0;8.0;8.6")
# migrate[MIG702]: `TORCH_CUDA_ARCH_LIST` has no drop-in Ascend counterpart: selects GPU architectures for CUDA extensions; drop it with the CUDA extension (MIG601, MIG730).
os.environ["TORCH_CUDA_ARCH_LIST"] = cuda_arch

# migrate[MIG601]: `torch.utils.cpp_extension.CUDAExtension` builds CUDA code (csrc/fused_bias_gelu.cu); port the kernels to Ascend C or replace them with torch_npu ops
setup(
    name="fused_ops",
    version="0.3.1",
    packages=find_packages(),
    ext_modules=[
        CUDAExtension(
            name="fused_ops._C",
            sources=["csrc/bindings.cpp", "csrc/fused_bias_gelu.cu"],
            extra_compile_args={
                "cxx": ["-O3", "-std=c++17"],
                "nvcc": ["-O3", "--use_fast_math", "-lineinfo"],
            },
        )
    ],
    cmdclass={"build_ext": BuildExtension},
    install_requires=["torch>=2.1"],
)
