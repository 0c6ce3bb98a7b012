"""``apex.parallel`` for the emulated NPU: what ModelZoo scripts use of it.

``DistributedDataParallel(module, ...)`` is ``torch.nn.parallel.DistributedDataParallel``
(apex's averages the gradients with one all-reduce per bucket, as torch's does; apex's own
keywords ``message_size``, ``delay_allreduce``, ``allreduce_trigger_params``,
``retain_allreduce_buffers``, ``allreduce_always_fp32``, ``gradient_average``,
``gradient_predivide_factor``, ``num_allreduce_streams`` and ``prof`` are accepted;
``gradient_average=False`` (sum, not mean) is refused: torch's DDP always averages).
``convert_syncbn_model(module, process_group=None, channel_last=False)`` is
``torch.nn.SyncBatchNorm.convert_sync_batchnorm``; ``SyncBatchNorm`` is torch's.
"""

from __future__ import annotations

import torch


class DistributedDataParallel(torch.nn.parallel.DistributedDataParallel):
    """apex's signature; the keywords torch's DDP takes besides (``device_ids``,
    ``broadcast_buffers``, ``find_unused_parameters``, ...) go to it."""

    def __init__(
        self,
        module,
        message_size=10000000,
        delay_allreduce=False,
        shared_param=None,
        allreduce_trigger_params=None,
        retain_allreduce_buffers=False,
        allreduce_always_fp32=False,
        num_allreduce_streams=1,
        allreduce_communicators=None,
        gradient_average=True,
        gradient_predivide_factor=1.0,
        gradient_average_split_factor=None,
        prof=False,
        **torch_kwargs,
    ):
        if not gradient_average:
            raise NotImplementedError(
                "not emulated: apex.parallel.DistributedDataParallel(gradient_average=False): torch's "
                "DistributedDataParallel, which stands for it, always averages the gradients"
            )
        super().__init__(module, **torch_kwargs)


def convert_syncbn_model(module, process_group=None, channel_last=False):
    return torch.nn.SyncBatchNorm.convert_sync_batchnorm(module, process_group)


SyncBatchNorm = torch.nn.SyncBatchNorm

__all__ = ["DistributedDataParallel", "convert_syncbn_model", "SyncBatchNorm"]
