"""Summarise an ncu source-page csv: stall reasons summed over the kernel, and the 25 SASS lines with the
most samples (with their top stall reason). argv: csv path."""
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr_i = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
hdr, data = rows[hdr_i], [r for r in rows[hdr_i + 1:] if len(r) == len(rows[hdr_i])]
col = {h: i for i, h in enumerate(hdr)}
stalls = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
tot = {h: sum(float(r[col[h]] or 0) for r in data) for h in stalls}
allsum = sum(tot.values()) or 1
print("stall share:", ", ".join(f"{h[6:]} {100 * v / allsum:.1f}%" for h, v in sorted(tot.items(), key=lambda x: -x[1])[:10]))
samp = col["Warp Stall Sampling (All Samples)"]
top = sorted(data, key=lambda r: -float(r[samp] or 0))[:25]
for r in top:
    worst = max(stalls, key=lambda h: float(r[col[h]] or 0))
    print(f"{float(r[samp]):7.0f}  {worst[6:]:14s} {r[col['Source']].strip()[:90]}")
