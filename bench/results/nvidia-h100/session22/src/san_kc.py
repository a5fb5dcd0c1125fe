# Session 22: one decode-kernel call per shape that the new plan sends to clusters of 5..8 (under compute-sanitizer),
# checked against the float64 reference on a few rows.
import numpy as np, torch, nvfp4
from nvfp4 import reference as ref
for (M, N, K) in [(4, 4096, 14336), (16, 4096, 14336), (8, 2048, 7168), (4, 4096, 7168), (20, 7168, 7168), (24, 4096, 14336), (28, 4100, 4096)]:
    g = torch.Generator(device="cuda").manual_seed(M + N + K)
    qa = torch.randint(0, 256, (M, K // 2), device="cuda", dtype=torch.uint8, generator=g)
    sa = torch.randint(0x30, 0x40, (M, K // 16), device="cuda", dtype=torch.uint8, generator=g)
    qb = torch.randint(0, 256, (N, K // 2), device="cuda", dtype=torch.uint8, generator=g)
    sb = torch.randint(0x30, 0x40, (N, K // 16), device="cuda", dtype=torch.uint8, generator=g)
    c = nvfp4.gemm(qa, sa, qb, sb, out_dtype="float32")
    torch.cuda.synchronize()
    r = ref.gemm_ref(qa.cpu().numpy(), sa.cpu().numpy(), qb[:256].cpu().numpy(), sb[:256].cpu().numpy())
    err = np.abs(c[:, :256].cpu().numpy() - r) / (1e-3 + 1e-3 * np.abs(r))
    print(f"{M}x{N}x{K}: {nvfp4.last_backend()} max err / tol {err.max():.3f}", "ok" if err.max() <= 1 else "FAIL")
