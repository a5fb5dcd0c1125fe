"""Session 29: does the grouped gpu-mode case 128+384 x 4096 x 1536 move with the SM clock? Alternates a CUDA graph
of 20 nvfp4.grouped_gemm calls (list API, 16 rotated input sets) and a graph of 20 cuBLAS bf16 loops (two matmuls
per call, the bench's peer), 200 replays per sample (~75 ms), while a thread reads NVML every 2 ms (SM clock, power,
temperature, throttle reasons). Phase 1: 12 alternations; phase 2: ~3 s of 8192^3 bf16 matmuls (heat); phase 3: 12
alternations again. Prints µs per call and the mean SM MHz / W / deg C during each sample.
  run: python3 bench/results/nvidia-h100/session29/clock/clock_probe.py"""
import ctypes
import statistics
import threading
import time

import torch
import nvfp4

nv = ctypes.CDLL("libnvidia-ml.so.1")
assert nv.nvmlInit_v2() == 0
h = ctypes.c_void_p()
assert nv.nvmlDeviceGetHandleByIndex_v2(torch.cuda.current_device(), ctypes.byref(h)) == 0


def nvml():
    c, p, t, r = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint(), ctypes.c_ulonglong()
    nv.nvmlDeviceGetClockInfo(h, 1, ctypes.byref(c))  # NVML_CLOCK_SM
    nv.nvmlDeviceGetPowerUsage(h, ctypes.byref(p))  # mW
    nv.nvmlDeviceGetTemperature(h, 0, ctypes.byref(t))
    nv.nvmlDeviceGetCurrentClocksThrottleReasons(h, ctypes.byref(r))
    return c.value, p.value / 1000, t.value, r.value


class Sampler:
    def __enter__(self):
        self.s, self.stop = [], False
        self.th = threading.Thread(target=self.run)
        self.th.start()
        return self

    def run(self):
        while not self.stop:
            self.s.append(nvml())
            time.sleep(0.002)

    def __exit__(self, *a):
        self.stop = True
        self.th.join()


dev = torch.device("cuda")
Ms, N, K, SETS, CALLS = [128, 384], 4096, 1536, 16, 20
T, G = sum(Ms), len(Ms)
sets = []
for _ in range(SETS):
    a = torch.randint(0, 256, (T, K // 2), dtype=torch.uint8, device=dev)
    sfa = torch.randint(0x30, 0x40, (T, K // 16), dtype=torch.uint8, device=dev)
    b = torch.randint(0, 256, (G, N, K // 2), dtype=torch.uint8, device=dev)
    sfb = torch.randint(0x30, 0x40, (G, N, K // 16), dtype=torch.uint8, device=dev)
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


stream = torch.cuda.Stream()


def capture(fn):
    with torch.cuda.stream(stream):
        for s in sets:
            fn(s)
    stream.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=stream, capture_error_mode="thread_local"):
        for i in range(CALLS):
            fn(sets[i % SETS])
    return g


graphs = {"nvfp4": capture(f_nvfp4), "cublas": capture(f_cublas)}


def sample(name, reps=200):
    g = graphs[name]
    with torch.cuda.stream(stream):
        g.replay()
        stream.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with Sampler() as sm:
            e0.record()
            for _ in range(reps):
                g.replay()
            e1.record()
            e1.synchronize()
    us = e0.elapsed_time(e1) * 1000 / (reps * CALLS)
    mhz = statistics.mean(x[0] for x in sm.s)
    w = statistics.mean(x[1] for x in sm.s)
    temp = max(x[2] for x in sm.s)
    reasons = 0
    for x in sm.s:
        reasons |= x[3]
    return us, mhz, w, temp, reasons


def phase(label, n=12):
    rows = {"nvfp4": [], "cublas": []}
    for _ in range(n):
        for name in ("nvfp4", "cublas"):
            r = sample(name)
            rows[name].append(r)
            print(f"{label} {name:6s} {r[0]:6.2f} us  {r[1]:6.0f} MHz  {r[2]:5.0f} W  {r[3]:3d} C  reasons 0x{r[4]:x}",
                  flush=True)
    for name, rs in rows.items():
        print(f"{label} {name:6s} median {statistics.median(r[0] for r in rs):.2f} us at "
              f"{statistics.median(r[1] for r in rs):.0f} MHz, {statistics.median(r[2] for r in rs):.0f} W")


print("idle:", nvml())
phase("cool")
x = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
t0 = time.time()
with Sampler() as sm:
    while time.time() - t0 < 3:
        for _ in range(10):
            x @ x
        torch.cuda.synchronize()
print(f"heat: 8192^3 bf16 for 3 s at {statistics.mean(s[0] for s in sm.s):.0f} MHz, "
      f"{statistics.mean(s[1] for s in sm.s):.0f} W, max {max(s[2] for s in sm.s)} C")
phase("hot")
