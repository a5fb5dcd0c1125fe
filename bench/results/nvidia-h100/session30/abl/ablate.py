"""Session 30 ablation of the dense decode kernel (abl.patch): graph-replay µs with parts of the
kernel switched off (NVFP4_DBG bits: 1 no math, 2 no token tile, 4 no K-split reduction), beside
the triton read floor of the same bytes, in one process. Not a correctness run: ablated outputs
are wrong by construction."""
import os, sys
import torch
import nvfp4
from nvfp4._timing import ClockSampler, Timer, measure_ceilings, rotation_count
sys.path.insert(0, "bench")  # (run from the repository root)
from read_floor import triton_floor

dev = torch.device("cuda")
timer = Timer(torch, dev, reps=15)
ceil = measure_ceilings(torch, dev, timer)
print(f"device: {torch.cuda.get_device_name()}; copy {ceil.copy_bytes_per_s/1e12:.2f} TB/s", flush=True)
configs = [(b, it, w) for b in (1024, 2048) for it in (1, 4, 8) for w in (4, 8)]
variants = [int(v) for v in (sys.argv[3] if len(sys.argv) > 3 else "0,1,2,4,7,0").split(",")]
print(f"{'shape':>12} {'SOL':>5} {'floor':>6} | M  " + " ".join(f"{'dbg'+str(v):>7}" for v in variants))
for spec in sys.argv[1].split(","):
    N, K = (int(v) for v in spec.split("x"))
    nbytes = N * K // 2 + N * K // 16
    sets = rotation_count(nbytes)
    raw = [torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device=dev) for _ in range(sets)]
    floor_us, cfg = triton_floor(timer, [r.view(torch.int32) for r in raw], configs)
    sol = nbytes / ceil.copy_bytes_per_s * 1e6
    qb = [r[:N * K // 2].view(N, K // 2) for r in raw]
    sb = [(r[N * K // 2:].view(N, K // 16) & 0x0F) | 0x30 for r in raw]
    for tok in (int(t) for t in sys.argv[2].split(",")):
        qa = torch.randint(0, 256, (tok, K // 2), dtype=torch.uint8, device=dev)
        sa = torch.randint(0x30, 0x40, (tok, K // 16), dtype=torch.uint8, device=dev)
        out = torch.empty(tok, N, dtype=torch.bfloat16, device=dev)
        cells = []
        for v in variants:
            os.environ["NVFP4_DBG"] = str(v)
            with ClockSampler(ms=20) as clk:
                t = timer.time(lambda i: nvfp4.gemm(qa, sa, qb[i], sb[i], out=out), sets).us
            st = clk.stats or {}
            cells.append(f"{t:7.2f}" + (f" {st.get('mhz', 0):4.0f}M{st.get('watts', 0):3.0f}W" if os.environ.get("ABL_CLOCK") else ""))
        os.environ["NVFP4_DBG"] = "0"
        print(f"{spec:>12} {sol:5.1f} {floor_us:6.2f} | {tok:<2} " + " ".join(cells), flush=True)
    del raw, qb, sb
    torch.cuda.empty_cache()
