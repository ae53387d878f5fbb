#!/usr/bin/env python3
"""layers.py - checks the library's layers on its objects.

Usage: layers.py OBJDIR [MAP]   (OBJDIR: $BUILD/obj; MAP: src/internal.h)

The folders' order is the map's: the order of its #include "F/F.h" lines,
bottom first.  From the objects' symbols (nm) it fails, naming the symbol,
on:
  - a call from a folder to a function of a folder after it (a call up);
  - a cycle between folders (listed whole);
  - a counter leaf (segment, seg_fast, ledger, claim, rare) calling a counter
    file above the leaves;
  - an internal name (lc__WORD...) whose WORD names neither its folder nor
    its file (lc__log_* lives in log/, lc__seg_* in segment.c);
  - a source file src/F/*.c the map does not name, or a folder without its
    header.
It prints one line per finding and exits 1 if there was any.
"""
import collections
import glob
import os
import re
import subprocess
import sys

LEAVES = {"segment", "seg_fast", "ledger", "claim", "rare"}
COUNTER_ABOVE = {"counter", "counter_ops", "next", "prefetch", "first",
                 "records", "close"}
# Names every file uses, kept short on purpose (base/errors.c).
SHARED = {"lc__fail": "errors", "lc__detail": "errors"}


def folders_of(map_path):
    order = []
    with open(map_path) as f:
        for line in f:
            m = re.match(r'#include "(\w+)/\1\.h"', line)
            if m:
                order.append(m.group(1))
    return order


def symbols(objdir):
    """{(folder, stem): (defined, undefined)} from nm."""
    out = {}
    for o in sorted(glob.glob(os.path.join(objdir, "*", "*.o"))):
        folder = os.path.basename(os.path.dirname(o))
        stem = os.path.basename(o)[:-2]
        text = subprocess.run(["nm", o], capture_output=True, text=True,
                              check=True).stdout
        defined, used = set(), set()
        for line in text.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBRCG":
                defined.add(p[2])
            elif len(p) == 2 and p[0] == "U":
                used.add(p[1])
        out[(folder, stem)] = (defined, used)
    return out


def prefix_ok(sym, folder, stem):
    for name, home in SHARED.items():
        if sym == name or sym.startswith(name + "_"):
            return stem == home
    if sym.startswith("lc__test_"):  # test seams, named for what they hook
        return True
    word = sym[4:].split("_")[0]
    if not word:
        return False
    return any(a.startswith(b) for a, b in
               ((folder, word), (word, folder), (stem, word), (word, stem)))


def cycles(edges):
    """The strongly connected components of more than one folder."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    objdir = sys.argv[1]
    map_path = sys.argv[2] if len(sys.argv) > 2 else "src/internal.h"
    order = folders_of(map_path)
    rank = {f: i for i, f in enumerate(order)}
    syms = symbols(objdir)
    if not syms:
        print(f"layers: no objects under {objdir}/*/")
        return 1
    loose = sorted(glob.glob(os.path.join(objdir, "*.o")))
    home = {}
    for key, (defined, _) in syms.items():
        for s in defined:
            home[s] = key
    # (an object whose source is gone is a stale build's: not counted)
    bad = [f"src/{os.path.basename(o)[:-2]}.c is in no folder" for o in loose
           if os.path.exists(os.path.join(os.path.dirname(map_path),
                                          os.path.basename(o)[:-2] + ".c"))]
    for folder in sorted({f for f, _ in syms}):
        if folder not in rank:
            bad.append(f"src/{folder}/ is not in the map ({map_path})")
        if not os.path.exists(os.path.join(os.path.dirname(map_path),
                                           folder, folder + ".h")):
            bad.append(f"src/{folder}/ has no header {folder}/{folder}.h")
    with open(map_path) as f:
        map_text = f.read()
    for folder, stem in sorted(syms):
        if not re.search(r"\b" + re.escape(stem) + r"\.c\b", map_text):
            bad.append(f"the map does not name src/{folder}/{stem}.c")
    edges = collections.defaultdict(set)
    for (folder, stem), (defined, used) in sorted(syms.items()):
        for s in sorted(used):
            if s not in home:
                continue
            tf, ts = home[s]
            if tf != folder:
                edges[folder].add(tf)
                if rank.get(tf, -1) > rank.get(folder, -1):
                    bad.append(f"call up: src/{folder}/{stem}.c uses {s} "
                               f"of src/{tf}/{ts}.c")
            elif (folder == "counter" and stem in LEAVES
                  and ts in COUNTER_ABOVE):
                bad.append(f"leaf calls up: src/counter/{stem}.c uses {s} "
                           f"of src/counter/{ts}.c")
        for s in sorted(defined):
            if s.startswith("lc__") and not prefix_ok(s, folder, stem):
                bad.append(f"prefix: {s} lives in src/{folder}/{stem}.c")
    for comp in cycles(edges):
        bad.append("cycle between folders: " + " ".join(comp))
    for line in bad:
        print("layers:", line)
    print(f"layers: {len(syms)} objects in {len(order)} folders "
          f"({' < '.join(order)}), {len(bad)} findings")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
