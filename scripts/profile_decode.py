"""Where one batch of beam search spends its time: kernel launches, host waits and the top operators.

Translates the first ``--batch-size`` sentences of the checkpoint's test split once (after one
untimed warm-up) under ``torch.profiler`` and prints one JSON line: wall seconds, the number of
CUDA kernel launches and of host waits for the device (synchronisations and device-to-host
copies), and the ``--top`` operators by self CPU time with their call counts.  It says what to
cut for a faster search (docs/results.md#gpu); bench_decode.py gives the speed itself.  Then,
for each value of ``--check-every`` (beam search's DONE_CHECK_EVERY, which a GPU reads), one
line of sentences/s over the whole test split, timed for at least ``--min-seconds``.

Command (from the repository root)::

    python scripts/profile_decode.py --checkpoint runs/multi30k_de_en_gpu_reg/checkpoints/best.pt --beam 5
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, Optional

from torch.profiler import ProfilerActivity, profile

import _bench_common as common
import bench_decode
import nmt.decode.beam as beam_module
from nmt.decode.inference import load_checkpoint
from nmt.decode.torch_engine import TorchEngine
from nmt.util import runtime
from nmt.util.errors import UserError
from nmt.util.fileio import read_lines

SCRIPT = "profile_decode.py"
LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC")
WAITS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaMemcpyAsync", "aten::_local_scalar_dense")


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, required=True, help="Trained checkpoint to decode with.")
    parser.add_argument("--beam", type=int, default=5, help="Beam size (default: 5).")
    parser.add_argument("--batch-size", type=int, default=256, help="Sentences in the batch (default: 256).")
    parser.add_argument("--top", type=int, default=15, help="Operators to list (default: 15).")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda (default: auto).")
    parser.add_argument(
        "--check-every", default="", help="Comma-separated DONE_CHECK_EVERY values to time (default: none)."
    )
    parser.add_argument("--min-seconds", type=float, default=2.0, help="Timed seconds per value (default: 2).")
    args = parser.parse_args(argv)
    try:
        device = runtime.select_device(args.device)
        loaded = load_checkpoint(args.checkpoint, device)
        every = common.parse_list(args.check_every, int)
        lines = read_lines(bench_decode.default_input(loaded.config))
    except UserError as exc:
        common.fail(SCRIPT, str(exc))
    everything = bench_decode.encode(loaded, lines)
    sentences = everything[: args.batch_size]
    engine = TorchEngine(loaded, device)
    decode = engine.decode_config([]).model_copy(update={"batch_size": args.batch_size})
    engine.translate(sentences, decode, beam=args.beam, n_best=1, attention=False)  # warm-up
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        results = engine.translate(sentences, decode, beam=args.beam, n_best=1, attention=False)
        runtime.synchronize(device)
        seconds = time.perf_counter() - start
    events = prof.key_averages()
    count = {e.key: e.count for e in events}
    top = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[: args.top]
    record: dict[str, Any] = {
        "bench": "profile_decode",
        "checkpoint": str(args.checkpoint),
        "beam": args.beam,
        "sentences": len(sentences),
        "output_tokens": sum(len(r.ids[0]) for r in results),
        "seconds": round(seconds, 4),
        "kernel_launches": sum(count.get(name, 0) for name in LAUNCHES),
        "host_waits": {name: count[name] for name in WAITS if name in count},
        "top_self_cpu": [
            {"op": e.key, "calls": e.count, "self_cpu_ms": round(e.self_cpu_time_total / 1000, 2)} for e in top
        ],
        **common.environment(device, True),
    }
    common.emit(record)
    for value in every:
        beam_module.DONE_CHECK_EVERY = value
        timed = bench_decode.bench_setting(
            loaded, everything, args.beam, args.batch_size, device, None, args.min_seconds
        )
        common.emit({"bench": "profile_decode", "done_check_every": value, **timed})


if __name__ == "__main__":
    main()
