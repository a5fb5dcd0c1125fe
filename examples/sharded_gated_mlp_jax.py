"""Tensor-parallel gated MLP with nvfp4.jax inside a sharded JAX program (jit + shard_map).

    y = W2 · (silu(W1·x) * (W3·x))          x: (tokens, hidden); W1, W3: (inter, hidden); W2: (hidden, inter)

The same split as examples/tp_gated_mlp_torch.py, written the JAX way: a Mesh over the
devices with one axis "tp"; W1, W3 and their scales sharded by rows, W2 and its scales by
columns (the reduction dimension), x replicated; shard_map runs the per-device body (the
nvfp4 ops are XLA custom calls on each device's shard) and `jax.lax.psum` sums the partial
outputs. Block scales run along the reduction dimension in blocks of 16, so shard-local
quantization of h with a shared global scale s_h gives the bytes of the whole h quantized
and sliced; the result equals the one-device result up to the fp32 summation order.

Checks the result against the float64 reference of the whole MLP (nvfp4.reference) and
times one jitted step on one device and on all of them.

Run:  python examples/sharded_gated_mlp_jax.py                   (every visible GPU)
      python examples/sharded_gated_mlp_jax.py --cpu --tokens 16 --hidden 256 --intermediate 512
            (two virtual CPU devices on the library's float64 CPU backend: the sharding without a GPU)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=int, default=256, help="M (default 256)")
    p.add_argument("--hidden", type=int, default=4096, help="H (default 4096)")
    p.add_argument("--intermediate", type=int, default=14336, help="I (default 14336)")
    p.add_argument("--devices", type=int, default=None, help="devices in the mesh (default: all; --cpu: 2)")
    p.add_argument("--iters", type=int, default=50, help="timed steps (default 50)")
    p.add_argument("--tol", type=float, default=1e-3, help="max ‖y − ref‖/‖ref‖ (default 1e-3)")
    p.add_argument("--cpu", action="store_true", help="virtual CPU devices (timings not meaningful)")
    return p.parse_args(argv)


args = parse_args()
if args.cpu:  # before JAX initializes its backends
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               f" --xla_force_host_platform_device_count={args.devices or 2}")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

import nvfp4.jax as nj  # noqa: E402
from nvfp4 import reference as ref  # noqa: E402

try:
    from jax import shard_map
except ImportError:  # JAX < 0.7
    from jax.experimental.shard_map import shard_map


def mlp(x, w1, sf1, w3, sf3, w2, sf2, g1, g3, g2, s_h):
    """One gated-MLP step on whatever shards it is given (s_h: a Python float, baked in)."""
    xq, xsf, gx = nj.quantize(x)
    h = nj.dual_gemm(xq, xsf, w1, sf1, w3, sf3, alpha1=gx * g1, alpha2=gx * g3, out_dtype="bfloat16")
    hq, hsf, _ = nj.quantize(h, global_scale=s_h)
    return nj.gemm(hq, hsf, w2, sf2, alpha=s_h * g2, out_dtype="float32")


def step_time_us(fn, iters):
    for _ in range(3):
        fn().block_until_ready()
    t0 = time.perf_counter()
    for _ in range(iters):
        y = fn()
    y.block_until_ready()
    return (time.perf_counter() - t0) / iters * 1e6


def main():
    devices = jax.devices()[: args.devices] if args.devices else jax.devices()
    n = len(devices)
    M, H, I = args.tokens, args.hidden, args.intermediate
    if n < 1 or I % (32 * n) or H % 32:
        raise SystemExit(f"--intermediate must be a multiple of {32 * n} and --hidden of 32 ({n} devices)")
    key = jax.random.split(jax.random.PRNGKey(0), 4)
    d0 = devices[0]
    put0 = lambda a: jax.device_put(a, d0)  # noqa: E731
    x = put0((jax.random.normal(key[0], (M, H))).astype(jnp.bfloat16))
    weights = [nj.quantize(put0((jax.random.normal(k, s) * 0.02).astype(jnp.bfloat16)))
               for k, s in [(key[1], (I, H)), (key[2], (I, H)), (key[3], (H, I))]]
    (w1, sf1, g1), (w3, sf3, g3), (w2, sf2, g2) = weights

    # calibration pass (one device): the global scale of h, shared by every shard
    xq, xsf, gx = nj.quantize(x)
    h = nj.dual_gemm(xq, xsf, w1, sf1, w3, sf3, alpha1=gx * g1, alpha2=gx * g3, out_dtype="bfloat16")
    s_h = float(jnp.max(jnp.abs(h.astype(jnp.float32)))) / (6 * 448)

    one = jax.jit(lambda *a: mlp(*a, s_h))
    full = (x, w1, sf1, w3, sf3, w2, sf2, g1, g3, g2)
    y_one = one(*full)

    mesh = Mesh(np.array(devices), ("tp",))
    specs = (P(), P("tp", None), P("tp", None), P("tp", None), P("tp", None), P(None, "tp"), P(None, "tp"),
             P(), P(), P())
    sharded = tuple(jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip(full, specs))

    def body(*a):
        return jax.lax.psum(mlp(*a, s_h), "tp")

    try:
        tp_body = shard_map(body, mesh=mesh, in_specs=specs, out_specs=P(), check_vma=False)
    except TypeError:  # older JAX spells it check_rep
        tp_body = shard_map(body, mesh=mesh, in_specs=specs, out_specs=P(), check_rep=False)
    tp = jax.jit(tp_body)
    y_tp = tp(*sharded)

    t_one = step_time_us(lambda: one(*full), args.iters)
    t_tp = step_time_us(lambda: tp(*sharded), args.iters)

    # float64 reference of the unsharded MLP (the tokens' quantization is the op's own)
    f32 = lambda a: np.float32(np.asarray(a).reshape(-1)[0])  # noqa: E731
    npa = np.asarray
    hr = ref.dual_gemm_ref(npa(xq), npa(xsf), npa(w1), npa(sf1), npa(w3), npa(sf3),
                           alpha1=f32(gx) * f32(g1), alpha2=f32(gx) * f32(g3))
    hr = np.asarray(jnp.asarray(hr, dtype=jnp.float32).astype(jnp.bfloat16).astype(jnp.float32))
    hq, hsf, _ = ref.quantize_ref(hr, global_scale=np.float32(s_h))
    want = ref.gemm_ref(hq, hsf, npa(w2), npa(sf2), alpha=np.float32(s_h) * f32(g2))
    err = lambda y: float(np.linalg.norm(npa(y).astype(np.float64) - want) / np.linalg.norm(want))  # noqa: E731
    e_one, e_tp = err(y_one), err(y_tp)

    kind = devices[0].device_kind
    print(f"gated MLP, M={M} H={H} I={I}: nvfp4.jax under jit + shard_map, bf16 h, fp32 y; {n} x {kind}")
    print(f"  1 device : {t_one:9.1f} µs/step   {M / t_one:8.3f} M tokens/s")
    print(f"  {n} devices: {t_tp:9.1f} µs/step   {M / t_tp:8.3f} M tokens/s  ({M / t_tp / n:.3f} per device), "
          f"{t_one / t_tp:.2f}x the 1-device step")
    print(f"  ‖y − ref‖/‖ref‖ against the float64 reference: 1 device {e_one:.2e}, {n} devices {e_tp:.2e}")
    ok = e_one < args.tol and e_tp < args.tol
    print("  matches the float64 reference" if ok else f"  MISMATCH (tolerance {args.tol:g})")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
