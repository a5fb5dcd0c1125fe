# Session 23: one decode-kernel call per shape that the plan sends to fine (256-K) stages, under
# compute-sanitizer, checked against the float64 reference on the first 256 rows.
import numpy as np, torch, nvfp4
from nvfp4 import reference as ref
for (M, N, K, lay) in [(4, 7168, 7168, "linear"), (16, 4096, 2048, "linear"), (8, 5120, 5120, "linear"),
                       (3, 4100, 4000, "blocked"), (25, 7200, 1312, "blocked"), (28, 4100, 4096, "linear")]:
    g = torch.Generator(device="cuda").manual_seed(M + N + K)
    qa = torch.randint(0, 256, (M, K // 2), device="cuda", dtype=torch.uint8, generator=g)
    sa = torch.randint(0x30, 0x40, (M, K // 16), device="cuda", dtype=torch.uint8, generator=g)
    qb = torch.randint(0, 256, (N, K // 2), device="cuda", dtype=torch.uint8, generator=g)
    sb = torch.randint(0x30, 0x40, (N, K // 16), device="cuda", dtype=torch.uint8, generator=g)
    if lay == "blocked":
        c = nvfp4.gemm(qa, torch.from_numpy(ref.to_blocked(sa.cpu().numpy())).cuda(), qb,
                       torch.from_numpy(ref.to_blocked(sb.cpu().numpy())).cuda(), sf_layout="blocked", out_dtype="float32")
    else:
        c = nvfp4.gemm(qa, sa, qb, sb, out_dtype="float32")
    torch.cuda.synchronize()
    r = ref.gemm_ref(qa.cpu().numpy(), sa.cpu().numpy(), qb[:256].cpu().numpy(), sb[:256].cpu().numpy())
    err = np.abs(c[:, :256].cpu().numpy() - r) / (1e-3 + 1e-3 * np.abs(r))
    print(f"{M}x{N}x{K} {lay}: {nvfp4.last_backend()} max err / tol {err.max():.3f}", "ok" if err.max() <= 1 else "FAIL")
