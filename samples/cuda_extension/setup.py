"""Build the fused_ops CUDA extension: python setup.py build_ext --inplace"""

import os

from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

cuda_arch = os.environ.get("TORCH_CUDA_ARCH_LIST", "7.0;8.0;8.6")
os.environ["TORCH_CUDA_ARCH_LIST"] = cuda_arch

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
