#!/usr/bin/env bash
# Launch train_ddp.py on the GPUs of one node.
# Usage: ./launch.sh [NUM_GPUS] [extra args for train_ddp.py]
set -euo pipefail

NUM_GPUS=${1:-4}
shift || true

# migrate[MIG701]: `CUDA_VISIBLE_DEVICES` is read by CUDA/NCCL only; on Ascend the variable is `ASCEND_RT_VISIBLE_DEVICES`. (see `migrate rules MIG701`)
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0,1,2,3}
# migrate[MIG702]: `NCCL_DEBUG` has no drop-in Ascend counterpart: for HCCL logs set ASCEND_GLOBAL_LOG_LEVEL (0 debug, 1 info, 2 warning, 3 error; not the same levels as NCCL's) ... (see `migrate rules MIG702`)
export NCCL_DEBUG=WARN
# migrate[MIG703]: `NCCL_IB_DISABLE` configures NCCL, which Ascend does not use: HCCL ignores it. (see `migrate rules MIG703`)
export NCCL_IB_DISABLE=1
export OMP_NUM_THREADS=8

# migrate[MIG701]: `CUDA_VISIBLE_DEVICES` is read by CUDA/NCCL only; on Ascend the variable is `ASCEND_RT_VISIBLE_DEVICES`. (see `migrate rules MIG701`)
echo "training on GPUs ${CUDA_VISIBLE_DEVICES} with ${NUM_GPUS} processes"

torchrun \
    --standalone \
    --nnodes=1 \
    --nproc_per_node="${NUM_GPUS}" \
    train_ddp.py --backend nccl "$@"
