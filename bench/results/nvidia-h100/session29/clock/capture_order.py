"""Session 29: the grouped case's 18.0 / 19.0 modes (variance_probe.py: after the first few captures every new
capture times ~19.1, the first graph ~18.4). Is it the graph (a property of later captures) or the process (a
state reached over time)? One stream, one set of 16 input sets; graphs G1..G5 of 20 list-API calls captured one
after another and kept; each timed when captured, then all timed again in order, then G1 once more. The same for a
cuBLAS-loop graph pair at the start and the end. Also per graph: the number of nodes and of memory nodes.
  run: python3 bench/results/nvidia-h100/session29/clock/capture_order.py"""
import ctypes
import statistics
import torch
import nvfp4

dev = torch.device("cuda")
Ms, N, K, SETS, CALLS = [128, 384], 4096, 1536, 16, 20
T, G = sum(Ms), len(Ms)
sets = []
for _ in range(SETS):
    a = torch.randint(0, 256, (T, K // 2), dtype=torch.uint8, device=dev)
    sfa = torch.randint(0x18, 0x28, (T, K // 16), dtype=torch.uint8, device=dev)
    b = torch.randint(0, 256, (G, N, K // 2), dtype=torch.uint8, device=dev)
    sfb = torch.randint(0x18, 0x28, (G, N, K // 16), dtype=torch.uint8, device=dev)
    o = torch.empty((T, N), dtype=torch.float16, device=dev)
    ah = torch.randn(T, K, device=dev, dtype=torch.bfloat16)
    bh = torch.randn(G, N, K, device=dev, dtype=torch.bfloat16)
    oh = torch.empty((T, N), dtype=torch.bfloat16, device=dev)
    sets.append(dict(la=[a[:Ms[0]], a[Ms[0]:]], lsa=[sfa[:Ms[0]], sfa[Ms[0]:]], lb=[b[0], b[1]],
                     lsb=[sfb[0], sfb[1]], lo=[o[:Ms[0]], o[Ms[0]:]], ah=ah, bh=bh, oh=oh))


def f_nvfp4(s):
    nvfp4.grouped_gemm(s["la"], s["lsa"], s["lb"], s["lsb"], out=s["lo"])


def f_cublas(s):
    torch.matmul(s["ah"][:Ms[0]], s["bh"][0].t(), out=s["oh"][:Ms[0]])
    torch.matmul(s["ah"][Ms[0]:], s["bh"][1].t(), out=s["oh"][Ms[0]:])


st = torch.cuda.Stream()
with torch.cuda.stream(st):
    for s in sets:
        f_nvfp4(s)
        f_cublas(s)
st.synchronize()
rt = ctypes.CDLL("libcudart.so.13") if False else None


def capture(fn):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=st, capture_error_mode="thread_local"):
        for i in range(CALLS):
            fn(sets[i % SETS])
    return g


def t(g, reps=30):
    ts = []
    with torch.cuda.stream(st):
        g.replay()
        for _ in range(reps):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            g.replay()
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1) * 1000 / CALLS)
    return statistics.median(ts)


c1 = capture(f_cublas)
print(f"cublas C1 at capture {t(c1):.2f}")
gs = []
for i in range(5):
    g = capture(f_nvfp4)
    gs.append(g)
    print(f"nvfp4 G{i + 1} at capture {t(g):.2f}", flush=True)
print("all again:", " ".join(f"G{i + 1} {t(g):.2f}" for i, g in enumerate(gs)))
c2 = capture(f_cublas)
print(f"cublas C2 {t(c2):.2f}, C1 again {t(c1):.2f}")
print(f"G1 once more {t(gs[0]):.2f}, G5 {t(gs[4]):.2f}")
del gs
torch.cuda.synchronize()
g6 = capture(f_nvfp4)
print(f"after deleting G1..G5: G6 {t(g6):.2f}")
# the same, with a fresh process-level factor changed: a new torch memory pool per capture is torch's default;
# here every capture shares G6's pool
g7 = torch.cuda.CUDAGraph()
with torch.cuda.graph(g7, stream=st, pool=g6.pool(), capture_error_mode="thread_local"):
    for i in range(CALLS):
        f_nvfp4(sets[i % SETS])
print(f"G7 (G6's pool) {t(g7):.2f}; G6 again {t(g6):.2f}")
