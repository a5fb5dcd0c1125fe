"""The peers a Hopper user would pick instead of nvfp4, on the same problems and inputs.

Each peer computes the same function from the same random NVFP4 operands (decoded
exactly to bf16, or converted to fp8), so its error against the float64 reference is
reported next to its time. Peers need torch; bench/run.py skips them when it is absent.

- cuBLAS bf16:        torch.matmul on bf16 copies (exact: e2m1·e4m3 fits bf16).
                      dual: one matmul on [B1;B2] + silu·mul; grouped: one matmul per group.
- cuBLAS fp8:         torch._scaled_mm, e4m3 operands with one fp32 scale per tensor
                      (amax/448), fast accumulation, bf16 out. Lossy (e4m3 keeps 4 of the 6
                      significant bits the products need): a speed reference, not an equal.
                      b is passed column-major (N, K)ᵀ as cuBLASLt requires; M is padded to
                      a multiple of 16 (N, K must be multiples of 16, else skipped).
- dequant+bf16:       nvfp4.dequantize both operands to bf16 (into scratch reused across
                      calls), then the bf16 matmul (grouped: torch._grouped_mm if present),
                      timed together: what a user without a fused NVFP4 kernel runs.
- torch._grouped_mm:  bf16 grouped GEMM, a (ΣM, K) with int32 group ends, b (G, K, N)
                      (column-major view of (G, N, K)); skipped if this torch lacks it or it
                      fails on this device.
- D2D copy:           for quantize/dequantize/swizzle: a device-to-device copy moving the
                      same number of bytes (read + write) as the op must.
"""

from __future__ import annotations

from nvfp4._bench_gpu import Impl
from nvfp4._bench_formats import Dequantize, Quantize, Swizzle
from nvfp4._bench_problems import Dual, Gemm, Gemv, Grouped
from nvfp4._bench_peers import CublasBf16, GroupedMM


def _ceil16(n: int) -> int:
    return -(-n // 16) * 16


class GroupedBf16Loop(CublasBf16):
    name = "cuBLAS bf16 loop"


class CublasFp8(Impl):
    name = "cuBLAS fp8"

    def skip_reason(self, h, p):
        t = h.torch
        if not isinstance(p, Gemm):
            return f"no fp8 peer for {p.op} (torch._scaled_mm is a 2-D GEMM with N % 16 == 0)"
        if not hasattr(t, "_scaled_mm") or not hasattr(t, "float8_e4m3fn"):
            return "torch._scaled_mm / float8_e4m3fn not in this torch"
        if h.cuda and t.cuda.get_device_capability(h.device) < (8, 9):
            return "fp8 needs CC >= 8.9"
        if p.K % 16 or (p.n_b * p.N) % 16:
            return "torch._scaled_mm needs N and K multiples of 16"
        return None

    def set_bytes(self, p):
        return (_ceil16(p.M) + p.n_b * p.N) * p.K + 2 * p.M * p.N

    def _fp8(self, h, x):
        """(x / s).to(e4m3) with s = amax/448 (one fp32 scale per tensor), and s."""
        t = h.torch
        s = (x.abs().max() / 448.0).clamp_min(1e-30).float().reshape(())
        return (x / s).to(t.float8_e4m3fn), s

    def prepare(self, h, p, s):
        t, f32 = h.torch, h.torch.float32
        a = t.zeros(_ceil16(p.M), p.K, dtype=f32, device=h.device)   # padding rows: M to a multiple of 16
        a[:p.M] = h.decode(s["a"], s["sfa"], f32)
        if isinstance(p, Dual):
            b = t.cat((h.decode(s["b1"], s["sfb1"], f32), h.decode(s["b2"], s["sfb2"], f32)))
        else:
            b = h.decode(s["b"], s["sfb"], f32)
        a8, sa = self._fp8(h, a)
        b8, sb = self._fp8(h, b)
        del a, b
        return {"a": a8, "sa": sa, "b": b8, "sb": sb, "M": p.M, "N": p.N, "dual": isinstance(p, Dual)}

    def launch(self, h, st):
        t = h.torch
        # b8 is (N, K) row-major: its transpose is the column-major (K, N) operand cuBLASLt wants
        c = t._scaled_mm(st["a"], st["b"].t(), scale_a=st["sa"], scale_b=st["sb"], out_dtype=t.bfloat16,
                         use_fast_accum=True)
        if st["dual"]:
            n = st["N"]
            c = t.nn.functional.silu(c[:, :n]) * c[:, n:]
        st["out"] = c

    def result(self, st):
        return st["out"][:st["M"]]


class DequantMatmul(Impl):
    """nvfp4.dequantize to bf16 scratch + the bf16 matmul, timed together."""
    name = "dequant+bf16"

    def __init__(self, backend: str = "auto"):
        self.dq_backend = backend
        self._scratch = None

    def skip_reason(self, h, p):
        if not isinstance(p, (Gemv, Gemm, Grouped)):
            return f"no dequantize+matmul peer for {p.op}"
        self.grouped_mm = isinstance(p, Grouped) and GroupedMM.available(h)
        if isinstance(p, Grouped):
            self.name = "dequant+grouped_mm" if self.grouped_mm else "dequant+bf16 loop"
        return None

    def io_bytes(self, p):
        return p.nv_bytes

    def _alloc(self, h, p):
        t, bf = h.torch, h.torch.bfloat16
        if isinstance(p, Gemv):
            return {"a": t.empty(p.L, p.M, p.K, dtype=bf, device=h.device), "b": t.empty(p.L, p.K, dtype=bf, device=h.device),
                    "out": t.empty(p.L, p.M, 1, dtype=bf, device=h.device)}
        if isinstance(p, Dual):
            return {"a": t.empty(p.M, p.K, dtype=bf, device=h.device), "b": t.empty(2 * p.N, p.K, dtype=bf, device=h.device)}
        if isinstance(p, Gemm):
            return {"a": t.empty(p.M, p.K, dtype=bf, device=h.device), "b": t.empty(p.N, p.K, dtype=bf, device=h.device),
                    "out": t.empty(p.M, p.N, dtype=bf, device=h.device)}
        return {"a": t.empty(p.T, p.K, dtype=bf, device=h.device), "b": t.empty(p.G, p.N, p.K, dtype=bf, device=h.device),
                "out": t.empty(p.T, p.N, dtype=bf, device=h.device)}

    def prepare(self, h, p, s):
        if self._scratch is None:
            self._scratch = self._alloc(h, p)
        st = {"s": s, "p": p, "w": self._scratch}
        if isinstance(p, Grouped):
            st["offs"] = s["offsets"][1:].clone()   # group ends, a fresh aligned int32 array
        return st

    def launch(self, h, st):
        import nvfp4

        t, s, p, w = h.torch, st["s"], st["p"], st["w"]
        dq = self.dq_backend
        nvfp4.dequantize(s["a"], s["sfa"], dtype="bfloat16", out=w["a"], backend=dq)
        if isinstance(p, Dual):
            nvfp4.dequantize(s["b1"], s["sfb1"], dtype="bfloat16", out=w["b"][:p.N], backend=dq)
            nvfp4.dequantize(s["b2"], s["sfb2"], dtype="bfloat16", out=w["b"][p.N:], backend=dq)
            hh = t.matmul(w["a"], w["b"].t())
            st["out"] = t.nn.functional.silu(hh[:, :p.N]) * hh[:, p.N:]
            return
        nvfp4.dequantize(s["b"], s["sfb"], dtype="bfloat16", out=w["b"], backend=dq)
        if isinstance(p, Gemv):
            t.matmul(w["a"], w["b"].unsqueeze(-1), out=w["out"])
        elif isinstance(p, Gemm):
            t.matmul(w["a"], w["b"].t(), out=w["out"])
        elif self.grouped_mm:
            st["out"] = t._grouped_mm(w["a"], w["b"].transpose(-2, -1), offs=st["offs"], out_dtype=t.bfloat16)
            return
        else:
            for g in range(p.G):
                lo, hi = p.offsets[g], p.offsets[g + 1]
                if hi > lo:
                    t.mm(w["a"][lo:hi], w["b"][g].t(), out=w["out"][lo:hi])
        st["out"] = w["out"]

    def result(self, st):
        out = st["out"]
        return out[..., 0] if out.dim() == 3 else out

    def release(self):
        self._scratch = None


class D2DCopy(Impl):
    """A copy moving the op's bytes (half read, half written): the bandwidth bound made real.
    Timed eagerly: captured in a CUDA graph the copy runs on the copy engines, ~1/3 slower."""
    name = "D2D copy"
    graphable = False

    def skip_reason(self, h, p):
        if not isinstance(p, (Quantize, Dequantize, Swizzle)):
            return f"no copy peer for {p.op}"
        return None

    def prepare(self, h, p, s):
        n = max(1, p.nv_bytes // 2)
        src = h.torch.empty(n, dtype=h.torch.uint8, device=h.device).random_()
        return {"src": src, "dst": h.torch.empty_like(src)}

    def launch(self, h, st):
        st["dst"].copy_(st["src"])

    def result(self, st):
        return None


def peers_for(p) -> list:
    """Peer implementations for a problem, in table order."""
    if isinstance(p, Gemv):
        return [CublasBf16(), DequantMatmul()]
    if isinstance(p, Gemm):      # Dual included
        return [CublasBf16(), CublasFp8(), DequantMatmul()]
    if isinstance(p, Grouped):
        return [GroupedMM(), GroupedBf16Loop(), DequantMatmul()]
    return [D2DCopy()]
