"""GPU tests (marker `gpu`, skipped without a CUDA device) of quantize / dequantize / swizzle_scales /
unswizzle_scales on device arrays, every backend of the device: bit-identical to the CPU library.

Run: python -m pytest -q tests/test_gpu_quantize.py"""

from __future__ import annotations

import numpy as np
import pytest

import nvfp4
from nvfp4 import reference as R
from _util import BACKENDS, EDGE_CASES, LAYOUTS, assert_same_floats, edge_input, interesting_input, run_backend

pytestmark = pytest.mark.gpu


QUANT_SHAPES = [(64,), (7, 96), (3, 129, 160), (256, 7168), (1000, 32)]


def _cpu_quantize(dev, xd, **kw):
    """The CPU library's quantize of the same values (bf16 through a torch CPU tensor)."""
    if dev.name == "torch":
        q, sf, g = nvfp4.quantize(xd.cpu(), **kw)
        return q.numpy(), sf.numpy(), g.numpy()
    return nvfp4.quantize(dev.get(xd), **kw)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("given_gs", [False, True])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", QUANT_SHAPES)
def test_quantize_matches_cpu_bit_for_bit(dev, shape, dtype, layout, given_gs, backend, rng):
    if dtype == "bfloat16" and dev.name != "torch":
        pytest.skip("bfloat16 device arrays need PyTorch")
    x = interesting_input(shape, "float32", rng)
    xd = dev.put(x).to(dev.torch.bfloat16) if dtype == "bfloat16" else dev.put(x.astype(dtype))
    gs = float(np.float32(rng.uniform(0.01, 2.0))) if given_gs else None
    q, sf, g = run_backend(backend, lambda: nvfp4.quantize(xd, global_scale=gs, sf_layout=layout, backend=backend))
    qc, sfc, gc = _cpu_quantize(dev, xd, global_scale=gs, sf_layout=layout)
    np.testing.assert_array_equal(dev.get(q), qc)
    np.testing.assert_array_equal(dev.get(sf), sfc)
    assert dev.get(g).tobytes() == gc.tobytes()
    qr, sfr, gr = R.quantize_ref(dev.get(xd).astype(np.float32), global_scale=gs, sf_layout=layout)
    np.testing.assert_array_equal(qc, qr)
    np.testing.assert_array_equal(sfc, sfr)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", EDGE_CASES)
def test_quantize_edge_inputs_match_cpu(dev, case, backend, rng):
    x = edge_input(case, (130, 256), rng)
    for gs in (None, 1.0, 1e-30):
        for layout in LAYOUTS:
            q, sf, g = run_backend(backend, lambda: nvfp4.quantize(dev.put(x), global_scale=gs, sf_layout=layout,
                                                                   backend=backend))
            qc, sfc, gc = nvfp4.quantize(x, global_scale=gs, sf_layout=layout)
            np.testing.assert_array_equal(dev.get(q), qc, err_msg=f"{case} gs={gs} {layout}")
            np.testing.assert_array_equal(dev.get(sf), sfc, err_msg=f"{case} gs={gs} {layout}")
            assert dev.get(g).tobytes() == gc.tobytes()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("gs", [1.0, 0.37, "device"])
def test_dequantize_every_code_and_scale_matches_cpu(dev, dtype, gs, backend):
    if dtype == "bfloat16" and dev.name != "torch":
        pytest.skip("bfloat16 device arrays need PyTorch")
    q = np.tile(R.pack_fp4(np.arange(32) % 16), (256, 1))           # every code in every row
    sf = np.repeat(np.arange(256, dtype=np.uint8)[:, None], 2, axis=1)   # row r: scale byte r
    for layout in LAYOUTS:
        sf_in = R.to_blocked(sf) if layout == "blocked" else sf
        g = dev.scalar(0.37) if gs == "device" else gs
        out = run_backend(backend, lambda: nvfp4.dequantize(dev.put(q), dev.put(sf_in), global_scale=g,
                                                            sf_layout=layout, dtype=dtype, backend=backend))
        gv = 0.37 if gs == "device" else gs
        if dtype == "bfloat16":   # the CPU library through torch CPU tensors; compare the 16-bit patterns
            t = dev.torch
            cpu = nvfp4.dequantize(t.from_numpy(q), t.from_numpy(sf_in), global_scale=gv, sf_layout=layout,
                                   dtype=dtype)
            got, want = out.cpu().view(t.int16).numpy(), cpu.view(t.int16).numpy()
            nan = t.isnan(cpu).numpy()
            np.testing.assert_array_equal(t.isnan(out.cpu()).numpy(), nan)
            np.testing.assert_array_equal(got[~nan], want[~nan])
            continue
        cpu = nvfp4.dequantize(q, sf_in, global_scale=gv, sf_layout=layout, dtype=dtype)
        assert_same_floats(dev.get(out), cpu)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("qshape", [(7, 48), (3, 129, 80), (512, 3584), (16,)])
def test_dequantize_random_matches_cpu(dev, qshape, layout, backend, rng):
    k = 2 * qshape[-1]
    q = R.random_fp4(qshape, rng)
    sf = rng.integers(0, 256, qshape[:-1] + (k // 16,), dtype=np.uint8)      # NaN scales included
    sf_in = R.to_blocked(sf if sf.ndim > 1 else sf[None]) if layout == "blocked" else sf
    for dtype in ("float32", "float16"):
        out = run_backend(backend, lambda: nvfp4.dequantize(dev.put(q), dev.put(sf_in), global_scale=0.5,
                                                            sf_layout=layout, dtype=dtype, backend=backend))
        cpu = nvfp4.dequantize(q, sf_in, global_scale=0.5, sf_layout=layout, dtype=dtype)
        assert_same_floats(dev.get(out), cpu)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("L", [None, 3])
@pytest.mark.parametrize("rows,k", [(1, 32), (7, 96), (129, 160), (300, 32), (1000, 7168)])
def test_swizzle_unswizzle_match_cpu(dev, rows, k, L, backend, rng):
    lead = () if L is None else (L,)
    sf = rng.integers(0, 256, lead + (rows, k // 16), dtype=np.uint8)     # any bytes, NaN and zero too
    n = R.blocked_bytes(rows, k)
    out = dev.poisoned(lead + (n,), "uint8")
    run_backend(backend, lambda: nvfp4.swizzle_scales(dev.put(sf), out=out, backend=backend))
    blocked = dev.get(out)
    np.testing.assert_array_equal(blocked, nvfp4.swizzle_scales(sf))      # CPU library (padding zero)
    np.testing.assert_array_equal(blocked, R.to_blocked(sf))
    back = run_backend(backend, lambda: nvfp4.unswizzle_scales(out, rows, k, backend=backend))
    np.testing.assert_array_equal(dev.get(back), sf)
