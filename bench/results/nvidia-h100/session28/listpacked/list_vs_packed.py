"""Session 28: why the list API (grouped_gemm) takes ~0.6 µs more than the packed API (grouped_gemm_packed) on the
same problem, 128 + 384 x 4096 x 1536 (NOTES "Session 28"). Both read the same packed storage (the list call gets
row views of it, as the bench does), 16 rotated input sets (~100 MB). Prints (1) graph-replay µs per call of each
API (20 calls per graph, median of 30 replays), (2) the mean duration of each kernel over 160 eager calls from the
torch profiler (CUPTI), (3) the same for the packed API with out= preallocated (list too)."""
import statistics
import torch
import nvfp4
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

dev = torch.device("cuda")
Ms, N, K, SETS = [128, 384], 4096, 1536, 16
T, G = sum(Ms), len(Ms)


def make():
    a = torch.randint(0, 256, (T, K // 2), dtype=torch.uint8, device=dev)
    sfa = torch.randint(0x30, 0x40, (T, K // 16), dtype=torch.uint8, device=dev)
    b = torch.randint(0, 256, (G, N, K // 2), dtype=torch.uint8, device=dev)
    sfb = torch.randint(0x30, 0x40, (G, N, K // 16), dtype=torch.uint8, device=dev)
    off = torch.tensor([0, Ms[0], T], dtype=torch.int32, device=dev)
    la = [a[0:Ms[0]], a[Ms[0]:T]]
    lsa = [sfa[0:Ms[0]], sfa[Ms[0]:T]]
    out_p = torch.empty((T, N), dtype=torch.float16, device=dev)
    out_l = [out_p[0:Ms[0]], out_p[Ms[0]:T]]
    return dict(a=a, sfa=sfa, b=b, sfb=sfb, off=off, la=la, lsa=lsa, lb=[b[0], b[1]], lsb=[sfb[0], sfb[1]],
                out_p=out_p, out_l=out_l)


sets = [make() for _ in range(SETS)]
call = {
    "list": lambda s: nvfp4.grouped_gemm(s["la"], s["lsa"], s["lb"], s["lsb"], out=s["out_l"]),
    "packed": lambda s: nvfp4.grouped_gemm_packed(s["a"], s["sfa"], s["b"], s["sfb"], s["off"], out=s["out_p"]),
}
# correctness of the two against each other (same storage, same problem)
call["list"](sets[0]); ref = sets[0]["out_p"].clone(); call["packed"](sets[0]); torch.cuda.synchronize()
print("list == packed bitwise:", bool(torch.equal(ref, sets[0]["out_p"])))

st = torch.cuda.Stream()
for name, fn in call.items():
    with torch.cuda.stream(st):
        for s in sets:
            fn(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=st):
            for i in range(20):
                fn(sets[i % SETS])
    ts = []
    for _ in range(30):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(st); g.replay(); e1.record(st); e1.synchronize()
        ts.append(e0.elapsed_time(e1) * 1000 / 20)
    print(f"{name:7s} graph µs per call: median {statistics.median(ts):.2f} (min {min(ts):.2f})")

for name, fn in call.items():
    for s in sets:
        fn(s)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(160):
            fn(sets[i % SETS])
        torch.cuda.synchronize()
    durs = {}
    for e in prof.events():
        if e.device_type == DeviceType.CUDA:
            durs.setdefault(e.name.split("(")[0][-60:], []).append(e.device_time)
    for k, v in durs.items():
        print(f"{name:7s} {k:60s} n {len(v):4d} mean {statistics.mean(v):6.2f} µs median {statistics.median(v):6.2f}")
