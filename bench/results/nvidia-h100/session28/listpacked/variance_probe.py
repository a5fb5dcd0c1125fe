"""PREPARED IN SESSION 28, NOT RUN (~1 min): where the ~8% spread of an nvfp4 row between identical repetitions comes
from (NOTES "Session 28", call 11: the grouped row 128 + 384 x 4096 x 1536 took 17.4-18.9 µs in six repetitions of one
process while the cuBLAS loop beside it took 18.3-18.6).
Each line is the graph-replay time per call (20 calls per graph over SETS rotated input sets, median of 30 replays) of
one configuration; every factor is changed alone:
  A  the same graph replayed again (pure run-to-run noise),
  B  a new graph on new input sets (the bench's situation: what call 11 saw),
  C  the same input sets, captured on a new stream (a new library scratch, i.e. a new token-workspace address),
  D  the same input sets and stream, a new capture (graph instantiation alone).
The nvfp4 token workspace of each stream is the library's scratch (cpp/src/workspace_cache.cpp: per device and
stream). Also printed per B round: the low 24 bits of the first weight and token addresses (TMA boxes and pages).
  run: python3 bench/results/nvidia-h100/session28/listpacked/variance_probe.py (after the build)"""
import statistics
import torch
import nvfp4

dev = torch.device("cuda")
Ms, N, K, SETS = [128, 384], 4096, 1536, 16
T, G = sum(Ms), len(Ms)


def make_sets():
    out = []
    for _ in range(SETS):
        a = torch.randint(0, 256, (T, K // 2), dtype=torch.uint8, device=dev)
        sfa = torch.randint(0x30, 0x40, (T, K // 16), dtype=torch.uint8, device=dev)
        b = torch.randint(0, 256, (G, N, K // 2), dtype=torch.uint8, device=dev)
        sfb = torch.randint(0x30, 0x40, (G, N, K // 16), dtype=torch.uint8, device=dev)
        o = torch.empty((T, N), dtype=torch.float16, device=dev)
        out.append(dict(la=[a[:Ms[0]], a[Ms[0]:]], lsa=[sfa[:Ms[0]], sfa[Ms[0]:]], lb=[b[0], b[1]], lsb=[sfb[0], sfb[1]],
                        lo=[o[:Ms[0]], o[Ms[0]:]], a=a, b=b))
    return out


def fn(s):
    nvfp4.grouped_gemm(s["la"], s["lsa"], s["lb"], s["lsb"], out=s["lo"])


def capture(sets, stream):
    with torch.cuda.stream(stream):
        for s in sets:
            fn(s)  # warm-up on this stream (its scratch)
    stream.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=stream, capture_error_mode="thread_local"):
        for i in range(20):
            fn(sets[i % SETS])
    return g


def time_graph(g, stream):
    ts = []
    with torch.cuda.stream(stream):
        for _ in range(30):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            g.replay()
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1) * 1000 / 20)
    return statistics.median(ts)


st = torch.cuda.Stream()
sets = make_sets()
g = capture(sets, st)
print("A same graph again:", " ".join(f"{time_graph(g, st):.2f}" for _ in range(6)))
row = []
for r in range(6):
    s2 = make_sets()
    g2 = capture(s2, st)
    row.append(f"{time_graph(g2, st):.2f} (w {s2[0]['b'].data_ptr() & 0xFFFFFF:06x} x {s2[0]['a'].data_ptr() & 0xFFFFFF:06x})")
    del g2, s2
print("B new sets + graph:", " | ".join(row))
row = []
for r in range(6):
    st2 = torch.cuda.Stream()
    g3 = capture(sets, st2)
    row.append(f"{time_graph(g3, st2):.2f}")
    del g3
print("C new stream (scratch):", " ".join(row))
print("D new capture only:", " ".join(f"{time_graph(capture(sets, st), st):.2f}" for _ in range(6)))
