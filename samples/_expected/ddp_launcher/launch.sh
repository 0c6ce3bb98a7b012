#!/usr/bin/env bash
# Launch train_ddp.py on the GPUs of one node.
# Usage: ./launch.sh [NUM_GPUS] [extra args for train_ddp.py]
set -euo pipefail

NUM_GPUS=${1:-4}
shift || true

export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0,1,2,3}
export NCCL_DEBUG=WARN
export NCCL_IB_DISABLE=1
export OMP_NUM_THREADS=8

echo "training on GPUs ${CUDA_VISIBLE_DEVICES} with ${NUM_GPUS} processes"

torchrun \
    --standalone \
    --nnodes=1 \
    --nproc_per_node="${NUM_GPUS}" \
    train_ddp.py --backend nccl "$@"
