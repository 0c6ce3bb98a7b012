"""`migrate doctor --log` against `grep`, side by side in one run, on the same synthetic log.

What users do today with a big training log or plog is grep it for the codes they know
(`grep -nE 'E[0-9A-Z][0-9]{4}|error code is [0-9]{6}|ERR[0-9]{5}'`). The doctor reads the
same file, recognises every code and known message of its table and explains each once. The
log (written to a temp folder, --mb megabytes) is CANN-plog-like INFO lines with a handful of
real failures spread through it (an AI Core exception, EE9999 with its TraceBack, a missing
libhccl.so, a HCCL socket timeout). Prints both wall-clock times (best of --repeat), their
ratio, the doctor's throughput and peak RSS, and what each found.

Run from the repository root:  python benchmarks/bench_doctor.py [--mb 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
INFO = (
    "[INFO] RUNTIME(28512,python):2026-11-30-10:41:32.{n:06d} [stream.cc:1043] 28512 "
    "TaskLaunch: stream_id={s}, task_id={n}, sqe {n} launched, step {n} loss 0.{r}\n"
)
FAILURES = [
    "RuntimeError: Sync:torch_npu/csrc/framework/OpCommand.cpp:190 NPU error, error code is 507015\n",
    "EE9999: Inner Error!\nEE9999  [Exec][Op]Execute op failed. op type = MatMul\n",
    "ImportError: libhccl.so: cannot open shared object file: No such file or directory\n",
    "[ERROR] HCCL(28512,python):2026-11-30 EI0006: Getting socket times out. Reason: x\n",
]


def write_log(path: Path, megabytes: int) -> None:
    target = megabytes * 1_000_000
    block = "".join(INFO.format(n=n, s=n % 7, r=n % 97) for n in range(20_000))
    with open(path, "w") as f:
        written, i = 0, 0
        while written < target:
            f.write(block)
            written += len(block)
            if i % 5 == 0:
                failure = FAILURES[(i // 5) % len(FAILURES)]
                f.write(failure)
                written += len(failure)
            i += 1


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, res.stdout


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train.log"
        write_log(log, args.mb)
        size = log.stat().st_size / 1e6
        grep = ["grep", "-nE", r"E[0-9A-Z][0-9]{4}|error code is [0-9]{6}|ERR[0-9]{5}", str(log)]
        doctor = [sys.executable, "-m", "migrate", "doctor", "--log", str(log), "--format", "json"]
        g_best = min(timed(grep, env)[0] for _ in range(args.repeat))
        d_runs = [timed(doctor, env) for _ in range(args.repeat)]
        d_best = min(t for t, _ in d_runs)
        found = json.loads(d_runs[0][1])
        grep_hits = len(timed(grep, env)[1].splitlines())
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"log: {size:.0f} MB, {found['lines']:,} lines (machine may be shared: compare the ratio)")
    print(f"grep -nE (3 code patterns):  {g_best:6.2f} s   {grep_hits} matching lines, no explanation")
    print(
        f"migrate doctor --log:        {d_best:6.2f} s   {len(found['findings'])} findings "
        f"({', '.join(f['key'] for f in found['findings'])}), each explained once"
    )
    print(
        f"ratio doctor/grep: {d_best / g_best:.1f}x   doctor throughput: {size / d_best:.0f} MB/s   "
        f"peak RSS of any child: {peak:.0f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
