"""ascend-migrate: move PyTorch projects from CUDA to Ascend NPUs."""

__version__ = "0.1.0"
