"""Checks the SASS of sm_90a kernels for register hazards around asynchronous wgmma.

An RS wgmma (HGMMA with its A operand in registers) reads those registers, and every wgmma
reads and writes its accumulator, until its commit group has been retired by a
wgmma.wait_group (WARPGROUP.DEPBAR.LE n: at most n groups still pending). The source pins
nothing physical (its register fences order virtual registers only), so the guarantee that no
instruction writes such a register early rests on ptxas' register allocation and scheduling.
This tool checks the result: it follows every path through each function that has HGMMA,
tracking the commit groups still in flight (a group ends at the HGMMA that carries gsb0), and
reports
  - a write to an A register of a group still in flight,
  - a read or write of an accumulator register while any group is in flight,
  - an HGMMA whose A or accumulator registers were written since the last WARPGROUP.ARRIVE
    (wgmma.fence);
local-memory accesses (spills) inside the innermost loops that issue HGMMA, and, in those loops
that decode weights (HMUL2), a split of the decode's left shifts that leans to one pipe: fewer
than a third of them as SHF (ALU pipe) or as IMAD.SHL (FMA pipe). fp4_decode.cuh pins half on
each; written as plain shifts, ptxas put them all on the FMA pipe inside the GEMM kernels and the
loop kept the tensor pipe ~5 points less busy (bench/NOTES.md session 21). Loops with the
byte-wise decode (an IMAD.HI: the 32-token tile, measured faster with its shifts as IMAD.SHL,
session 26) are not checked for the split.
The model is heuristic where SASS is irregular: an instruction's destination is its first
register operand (after a leading predicate), 2 registers for .64 / WIDE / CS2R, 4 for .128;
uniform, store, barrier and branch instructions write no vector register. It can miss a
hazard in an instruction it parses too narrowly; weakening every wait of the library's main
loop by one makes it report hundreds.

Usage: python tools/check_wgmma_sass.py FILE [FILE ...]   (an object, library or cubin, run
through cuobjdump -sass; or a text file of that output). Exit status 1 if any hazard.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import deque

_INSN = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_REG = re.compile(r"^[-|!]*R(\d+)")
_PRED = re.compile(r"^!?U?P(T|\d)$")
_NO_VECTOR_DEST = ("BRA", "BSSY", "BSYNC", "SYNCS", "WARPGROUP", "ST", "RED", "ATOM", "NOP", "BAR", "EXIT", "RET",
                   "U", "S2UR", "R2UR", "ISETP", "FSETP", "HSETP", "DSETP", "PLOP3", "CALL", "WARPSYNC", "MEMBAR",
                   "FENCE", "ERRBAR", "CCTL", "ELECT", "ACQBULK", "UTMA", "UBLKCP", "UCGABAR", "CGAERRBAR", "DEPBAR",
                   "YIELD", "VOTEU", "ARRIVES", "PREEXIT", "BPT", "KILL", "NANOSLEEP", "UTMACCTL", "UTMAPF")


def functions(sass: str):
    """(name, [(pc, text)]) for every function of cuobjdump -sass output."""
    parts = re.split(r"\n\s*Function : (\S+)\n", "\n" + sass)
    for k in range(1, len(parts), 2):
        insns = []
        for line in parts[k + 1].splitlines():
            m = _INSN.match(line)
            if m:
                insns.append((int(m.group(1), 16), m.group(2).strip()))
        yield parts[k], insns


def _regs(tok: str, n: int = 1) -> set[int]:
    m = _REG.match(tok.strip())
    return set(range(int(m.group(1)), int(m.group(1)) + n)) if m else set()


def _parse(text: str):
    pred, t = None, text
    if t.startswith("@"):
        pred, t = t.split(" ", 1)
    op, _, rest = t.strip().partition(" ")
    return pred, op, [a.strip() for a in rest.split(",")] if rest else []


def _width(op: str) -> int:
    if ".128" in op:
        return 4
    if ".64" in op or "WIDE" in op or op == "CS2R":
        return 2
    return 1


def _dests(op: str, args: list[str]) -> set[int]:
    if not args or op.startswith(_NO_VECTOR_DEST):
        return set()
    first = 1 if _PRED.match(args[0]) and len(args) > 1 else 0
    return _regs(args[first], _width(op))


def _srcs(op: str, args: list[str]) -> set[int]:
    out: set[int] = set()
    start = 0 if op.startswith(("ST", "SYNCS", "RED", "ATOM")) else 1
    for a in args[start:]:
        for m in re.finditer(r"(?<![A-Z])R(\d+)", a):
            b = int(m.group(1))
            out.add(b)
            if "[" not in a and _width(op) > 1:
                out |= set(range(b + 1, b + _width(op)))
    return out


def _hgmma_acc(op: str, args: list[str]) -> set[int]:
    # HGMMA.64xNx16.F32...: the accumulator is N/2 fp32 registers per thread from the destination
    m = re.match(r"HGMMA\.64x(\d+)x\d+\.F32", op)
    n = int(m.group(1)) // 2 if m else 0
    return _regs(args[0], n) if args and n else set()


def check(insns: list[tuple[int, str]]) -> tuple[int, list[tuple]]:
    """(number of HGMMA, hazards) of one function, its innermost HGMMA loops' spills
    (hot_loop_spills) and one-pipe decode shifts (decode_shift_split) included; each hazard
    (pc, instruction, what)."""
    text = dict(insns)
    order = [pc for pc, _ in insns]
    nxt_of = {pc: order[i + 1] if i + 1 < len(order) else None for i, pc in enumerate(order)}
    parsed = {pc: _parse(t) for pc, t in insns}
    hgmma = [pc for pc in order if parsed[pc][1].startswith("HGMMA")]
    acc: set[int] = set()
    areg: set[int] = set()
    for pc in hgmma:
        _, op, args = parsed[pc]
        acc |= _hgmma_acc(op, args)
        if len(args) > 1:
            areg |= _regs(args[1], 4)  # RS form: A in 4 registers (the SS form has a descriptor here)
    track = acc | areg
    hazards: set[tuple] = set()
    seen: dict[tuple, frozenset] = {}
    work: deque = deque()

    def push(pc, pend, opn, dirty):
        if pc is None or pc not in text:
            return
        key = (pc, pend, opn)
        old = seen.get(key)
        if old is not None and dirty <= old:
            return
        seen[key] = dirty if old is None else old | dirty
        work.append(key)

    if order:
        push(order[0], (), frozenset(), frozenset())
    while work:
        key = work.popleft()
        pc, pend, opn = key
        dirty = seen[key]
        pred, op, args = parsed[pc]
        if op.startswith(("EXIT", "RET")) and pred is None:
            continue
        live = frozenset().union(*pend) | opn
        inflight = bool(pend) or bool(opn)
        if op.startswith("HGMMA"):
            a = _regs(args[1], 4) if len(args) > 1 else set()
            if a & dirty:
                hazards.add((pc, text[pc], "A registers written since the last WARPGROUP.ARRIVE"))
            if acc & dirty:
                hazards.add((pc, text[pc], "accumulator touched since the last WARPGROUP.ARRIVE"))
            opn = opn | frozenset(a)
            if "gsb0" in text[pc]:
                pend, opn = pend + (opn,), frozenset()
        else:
            d = _dests(op, args)
            if d & live:
                hazards.add((pc, text[pc], "writes an A register of a group in flight"))
            if inflight and d & acc:
                hazards.add((pc, text[pc], "writes the accumulator while a group is in flight"))
            if inflight and _srcs(op, args) & acc:
                hazards.add((pc, text[pc], "reads the accumulator while a group is in flight"))
            if op == "WARPGROUP.ARRIVE":
                dirty = frozenset()
            elif op == "WARPGROUP.DEPBAR.LE":
                n = int(args[1], 16)
                pend = pend[max(0, len(pend) - n):] if n > 0 else ()
            else:
                dirty = dirty | frozenset((d | (_srcs(op, args) & acc)) & track)
        if op.startswith("BRA"):
            push(int(args[-1], 16), pend, opn, dirty)
            if pred is None:
                continue
        if nxt_of[pc] is not None:
            push(nxt_of[pc], pend, opn, dirty)
    if not hgmma:
        return 0, sorted(hazards)
    inner = _inner_hgmma_loops(insns)  # the control-flow analysis once, for both loop checks
    return len(hgmma), sorted(hazards) + hot_loop_spills(insns, inner) + decode_shift_split(insns, inner)


def _natural_loops(insns: list[tuple[int, str]]):
    """The natural loops of the function's control-flow graph, as sets of instruction pcs: for
    each back edge s -> h (h dominates s), h and every instruction that reaches s without
    passing through h. By the graph, not the layout: ptxas places a loop's body anywhere."""
    order = [pc for pc, _ in insns]
    text = dict(insns)
    idx = {pc: i for i, pc in enumerate(order)}
    succ: dict[int, list[int]] = {}
    for i, pc in enumerate(order):
        pred, op, args = _parse(text[pc])
        out = []
        ends = op.startswith(("EXIT", "RET")) and pred is None
        if op.startswith("BRA") and args:
            try:
                out.append(int(args[-1], 16))
            except ValueError:
                pass
            ends = pred is None
        if not ends and i + 1 < len(order):
            out.append(order[i + 1])
        succ[pc] = [t for t in out if t in idx]
    preds: dict[int, list[int]] = {pc: [] for pc in order}
    for pc, outs in succ.items():
        for t in outs:
            preds[t].append(pc)
    # dominators (iterative, over instructions in layout order; the entry is the first one)
    every = frozenset(order)
    dom = {pc: every for pc in order}
    dom[order[0]] = frozenset([order[0]])
    changed = True
    while changed:
        changed = False
        for pc in order[1:]:
            ps = [dom[p] for p in preds[pc]]
            new = (frozenset.intersection(*ps) if ps else frozenset()) | {pc}
            if new != dom[pc]:
                dom[pc], changed = new, True
    loops = []
    for s_pc, outs in succ.items():
        for h in outs:
            if h in dom[s_pc]:  # a back edge
                body, stack = {h, s_pc}, [s_pc]
                while stack:
                    for p in preds[stack.pop()]:
                        if p not in body:
                            body.add(p)
                            stack.append(p)
                loops.append((h, frozenset(body)))
    return loops


def _inner_hgmma_loops(insns: list[tuple[int, str]]):
    """The innermost natural loops that issue HGMMA (no other loop with HGMMA strictly inside)."""
    text = dict(insns)
    with_mma = [(h, body) for h, body in _natural_loops(insns) if any("HGMMA" in text[pc] for pc in body)]
    return [(h, body) for h, body in with_mma if not any(b < body for _, b in with_mma)]


def hot_loop_spills(insns: list[tuple[int, str]], inner=None) -> list[tuple]:
    """Local-memory accesses (LDL / STL: spills) inside the innermost loops that issue HGMMA
    (`inner`: _inner_hgmma_loops(insns), when the caller has it)."""
    text = dict(insns)
    loops = _inner_hgmma_loops(insns) if inner is None else inner
    return sorted({(pc, text[pc], f"local memory in the HGMMA loop at {h:#x}")
                   for h, body in loops for pc in body if re.search(r"\b(LDL|STL)\b", text[pc])})


def decode_shift_split(insns: list[tuple[int, str]], inner=None) -> list[tuple]:
    """Innermost HGMMA loops that decode (HMUL2) whose left shifts lean to one pipe: fewer than a
    third of the SHF.L + IMAD.SHL as either. One finding per loop, at its head (`inner` as in
    hot_loop_spills)."""
    text = dict(insns)
    found = []
    for h, body in _inner_hgmma_loops(insns) if inner is None else inner:
        ops = [_parse(text[pc])[1] for pc in body]
        if not any(op.startswith("HMUL2") for op in ops):
            continue
        if any(op.startswith("IMAD.HI") for op in ops):
            continue  # the byte-wise decode (decode_word_scaled: q >> 3 as a multiply-high), shifts by measurement
        alu = sum(op.startswith("SHF.L") for op in ops)
        fma = sum(op.startswith("IMAD.SHL") for op in ops)
        if alu + fma and 3 * min(alu, fma) < alu + fma:
            found.append((h, text[h], f"decode shifts lean to one pipe in the HGMMA loop at {h:#x}: "
                                      f"{alu} SHF.L, {fma} IMAD.SHL"))
    return found


def sass_of(path: str) -> str:
    with open(path, "rb") as f:
        head = f.read(4)
    if head == b"\x7fELF":
        return subprocess.run(["cuobjdump", "-sass", path], check=True, capture_output=True, text=True).stdout
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    bad = 0
    for path in argv:
        for name, insns in functions(sass_of(path)):
            n, hazards = check(insns)
            if n == 0:
                continue
            print(f"{'FAIL' if hazards else 'ok  '} {n:4d} HGMMA  {name[:110]}")
            for pc, text, what in hazards[:20]:
                print(f"       {pc:#07x}  {text}  <- {what}")
            bad += bool(hazards)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
