"""The bf16 peers the main job times beside nvfp4 (bench/peers.py adds the others):
cuBLAS bf16 through torch.matmul on bf16 copies of the decoded operands (exact: every
e2m1·e4m3 product fits bf16). dual: one matmul on [B1;B2] + silu·mul; grouped: one
matmul per group, and torch._grouped_mm (one bf16 launch for all groups) where this
torch has it."""

from __future__ import annotations

from ._bench_gpu import Impl
from ._bench_problems import Dual, Gemm, Gemv, Grouped


class CublasBf16(Impl):
    name = "cuBLAS bf16"

    def skip_reason(self, h, p):
        if not isinstance(p, (Gemv, Gemm, Grouped)):
            return f"no bf16 matmul peer for {p.op}"
        return None

    def set_bytes(self, p):
        if isinstance(p, Gemv):
            return 2 * p.L * (p.M * p.K + p.K + p.M)
        if isinstance(p, Gemm):   # Dual too: A, B1 and B2 (as [B1;B2]), the output
            return 2 * ((p.M + p.n_b * p.N) * p.K + p.M * p.N)
        return 2 * ((p.T + p.G * p.N) * p.K + p.T * p.N)

    def prepare(self, h, p, s):
        t, bf = h.torch, h.torch.bfloat16
        if isinstance(p, Gemv):
            return {"a": h.decode(s["a"], s["sfa"], bf), "b": h.decode(s["b"], s["sfb"], bf).unsqueeze(-1),
                    "out": t.empty(p.L, p.M, 1, dtype=bf, device=h.device)}
        if isinstance(p, Dual):
            b12 = t.cat((h.decode(s["b1"], s["sfb1"], bf), h.decode(s["b2"], s["sfb2"], bf)))
            return {"a": h.decode(s["a"], s["sfa"], bf), "b12": b12, "N": p.N}
        if isinstance(p, Gemm):
            return {"a": h.decode(s["a"], s["sfa"], bf), "b": h.decode(s["b"], s["sfb"], bf),
                    "out": t.empty(p.M, p.N, dtype=bf, device=h.device)}
        a, b = h.decode(s["a"], s["sfa"], bf), h.decode(s["b"], s["sfb"], bf)
        out = t.empty(p.T, p.N, dtype=bf, device=h.device)
        rows = [(p.offsets[g], p.offsets[g + 1]) for g in range(p.G)]
        return {"out": out, "groups": [(a[lo:hi], b[g].t(), out[lo:hi]) for g, (lo, hi) in enumerate(rows) if hi > lo]}

    def launch(self, h, st):
        t = h.torch
        if "groups" in st:
            for a, bt, out in st["groups"]:
                t.mm(a, bt, out=out)
        elif "b12" in st:
            hh = t.matmul(st["a"], st["b12"].t())
            n = st["N"]
            st["out"] = t.nn.functional.silu(hh[:, :n]) * hh[:, n:]
        else:
            bt = st["b"] if st["b"].dim() == 3 else st["b"].t()
            t.matmul(st["a"], bt, out=st["out"])

    def result(self, st):
        out = st["out"]
        return out[..., 0] if out.dim() == 3 else out


class GroupedMM(Impl):
    name = "torch._grouped_mm bf16"
    _probe = {}

    @classmethod
    def available(cls, h) -> bool:
        return cls.probe(h) is None

    @classmethod
    def probe(cls, h):
        """None if torch._grouped_mm runs here, else why not (checked once per device)."""
        key = str(h.device)
        if key not in cls._probe:
            t = h.torch
            if not hasattr(t, "_grouped_mm"):
                cls._probe[key] = f"torch {t.__version__} has no torch._grouped_mm"
            else:
                try:
                    a = t.randn(48, 64, dtype=t.bfloat16, device=h.device)
                    b = t.randn(2, 32, 64, dtype=t.bfloat16, device=h.device)
                    offs = t.tensor([16, 48], dtype=t.int32, device=h.device)
                    t._grouped_mm(a, b.transpose(-2, -1), offs=offs, out_dtype=t.bfloat16)
                    h.sync()
                    cls._probe[key] = None
                except Exception as e:  # noqa: BLE001
                    cls._probe[key] = f"torch._grouped_mm fails here: {str(e).strip().splitlines()[0][:120]}"
        return cls._probe[key]

    def skip_reason(self, h, p):
        if not isinstance(p, Grouped):
            return f"no grouped peer for {p.op}"
        return self.probe(h)

    def set_bytes(self, p):
        return 2 * ((p.T + p.G * p.N) * p.K + p.T * p.N)

    def prepare(self, h, p, s):
        bf = h.torch.bfloat16
        return {"a": h.decode(s["a"], s["sfa"], bf), "bt": h.decode(s["b"], s["sfb"], bf).transpose(-2, -1),
                "offs": s["offsets"][1:].clone()}

    def launch(self, h, st):
        t = h.torch
        st["out"] = t._grouped_mm(st["a"], st["bt"], offs=st["offs"], out_dtype=t.bfloat16)

    def result(self, st):
        return st["out"]
