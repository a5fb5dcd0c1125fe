"""Session 27, PREPARED, NOT RUN: why the packed MoE decode route is ~4 µs slower at G = 64 than at G <= 33 with the
same 8 live one-row experts (33.8 against 29.7 µs, session 27 call 7). Times one grouped_gemm_packed call (2048 x
7168 experts, the first 8 experts live, one row each) as CUDA-graph replays of 20 back-to-back calls, rotating over
S input sets, for G in {8, 33, 64, 128} x S in {1, 4}, plus G = 64 with 4 sets that share one weight buffer. If the time
follows the bytes allocated per set and the set count (G = 64, S = 4 slow; S = 1 or shared weights fast), the gap
is the spread of the rotation's weight buffers (page walks), not the kernel. Prints one line per case."""
import torch
import nvfp4

N, K, LIVE = 2048, 7168, 8
dev = torch.device("cuda")


def make_set(G, weights=None):
    counts = [1] * LIVE + [0] * (G - LIVE)
    off = torch.tensor([0] + list(torch.tensor(counts).cumsum(0).tolist()), dtype=torch.int32, device=dev)
    a = torch.randint(0, 256, (LIVE, K // 2), dtype=torch.uint8, device=dev)
    sfa = torch.randint(0x30, 0x48, (LIVE, K // 16), dtype=torch.uint8, device=dev)
    if weights is None:
        b = torch.randint(0, 256, (G, N, K // 2), dtype=torch.uint8, device=dev)
        sfb = torch.randint(0x30, 0x48, (G, N, K // 16), dtype=torch.uint8, device=dev)
    else:
        b, sfb = weights
    return a, sfa, b, sfb, off


def time_sets(sets, calls=20, reps=30):
    outs = [torch.empty((LIVE, N), dtype=torch.float16, device=dev) for _ in sets]
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for i in range(len(sets)):  # warm-up (plans, memo)
            nvfp4.grouped_gemm_packed(*sets[i], out=outs[i])
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            for c in range(calls):
                i = c % len(sets)
                nvfp4.grouped_gemm_packed(*sets[i], out=outs[i])
    times = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1) * 1000.0 / calls)
    times.sort()
    return times[len(times) // 2]


for G in (8, 33, 64, 128):
    for S in (1, 4):
        sets = [make_set(G) for _ in range(S)]
        print(f"G {G:4d} sets {S}: {time_sets(sets):6.1f} us  ({S * G * N * K * 9 // 16 / 2**20:.0f} MiB of weights + scales allocated)",
              flush=True)
        del sets
        torch.cuda.empty_cache()
w64 = make_set(64)
shared = [make_set(64, weights=(w64[2], w64[3])) for _ in range(4)]
print(f"G   64 sets 4, one weight buffer: {time_sets(shared):6.1f} us", flush=True)
del shared, w64
torch.cuda.empty_cache()
