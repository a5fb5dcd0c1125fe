"""Join two `nvfp4 bench --quiet` outputs (default routes / NVFP4_DECODE_MAX=1: the tiled GEMM's small tiles)
per shape: graph µs of each and tiled / default. argv: default.txt tiled.txt."""
import re, sys
def rows(path):
    out = {}
    for line in open(path):
        m = re.match(r"gemm\s+M=(\d+) N=(\d+) K=(\d+)\s+nvfp4\s+auto\s+([\d.]+)\s+([\d.]+)", line)
        if m:
            out[tuple(int(v) for v in m.groups()[:3])] = (float(m.group(4)), float(m.group(5)))
    return out
a, b = rows(sys.argv[1]), rows(sys.argv[2])
print(f"{'M':>3} {'N':>6} {'K':>6}  route g/e        tiled g/e      tiled/route")
for k in sorted(a, key=lambda k: (k[1], k[2], k[0])):
    if k in b:
        ra, rb = a[k], b[k]
        flag = "  <- tiled faster" if rb[0] < 0.97 * ra[0] else ""
        print(f"{k[0]:>3} {k[1]:>6} {k[2]:>6}  {ra[0]:6.1f}/{ra[1]:6.1f}  {rb[0]:6.1f}/{rb[1]:6.1f}  {rb[0] / ra[0]:5.2f}{flag}")
