"""Program-order SASS listing of an ncu source csv: every instruction (address offset, samples, top stall,
executed warp-instructions), so the roles (producer, consumer decode, wgmma, epilogue) show as ranges.
argv: csv path."""
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr_i = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
hdr, data = rows[hdr_i], [r for r in rows[hdr_i + 1:] if len(r) == len(rows[hdr_i])]
col = {h: i for i, h in enumerate(hdr)}
stalls = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
samp, ex = col["Warp Stall Sampling (All Samples)"], col["Instructions Executed"]
base = int(data[0][0], 16)
tot = sum(float(r[samp] or 0) for r in data) or 1
print(f"total samples {tot:.0f}")
for r in data:
    s = float(r[samp] or 0)
    st = sorted(stalls, key=lambda h: -float(r[col[h]] or 0))[:2]
    why = " ".join(f"{h[6:]}:{float(r[col[h]] or 0):.0f}" for h in st if float(r[col[h]] or 0) > 0)
    print(f"{int(r[0], 16) - base:6x} {s:5.0f} {int(float(r[ex] or 0)):8d}  {r[col['Source']].strip()[:70]:70s} {why}")
