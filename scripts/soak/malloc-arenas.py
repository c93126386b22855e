#!/usr/bin/env python3
"""Where a process's malloc memory lives, arena by arena, and what was added between two moments.

Two uses (docs/testing.md, "Which arena, which thread"):

  MALLOC_ARENAS_OUT=a.json gdb -p PID -batch -x scripts/soak/malloc-arenas.py
      Inside gdb (the process is stopped for the second or two it takes): for every thread, the
      malloc arena it allocates from (glibc's `thread_arena`) and its top stack frames; for every
      arena, what it took from the system and every chunk in use (address, size, first 48 bytes),
      fastbin chunks left out. Needs glibc's debug symbols (Debian: libc6-dbg) for `main_arena`,
      `thread_arena`, `mp_` and the struct layouts. Written for glibc 2.36 (safe-linked fastbins,
      64 MiB thread heaps).

  python3 scripts/soak/malloc-arenas.py a.json b.json
      Per arena: who allocates from it, bytes and chunks in use then and now, the chunk sizes that
      grew most, and the chunks present only in b (by address, size and first bytes) grouped by
      size, with a sample of their first bytes: what the added memory is.

Why not heaptrack alone: heaptrack sees calls, not arenas, and changes the process's pace; this
reads the allocator's own books at the moment of interest (for the soak: right after an at-rest
reading, which it prints as it takes it).
"""
import json
import os
import struct
import sys
from collections import Counter, defaultdict

SZ = 8
HEAP_MAX = 64 << 20  # glibc's HEAP_MAX_SIZE on 64-bit: a thread heap is aligned to it


def u64(b, o=0):
    return struct.unpack_from("<Q", b, o)[0]


def snapshot(gdb, path):
    inf = gdb.selected_inferior()
    out = {"threads": [], "arenas": []}
    for th in inf.threads():
        th.switch()
        try:
            arena = int(gdb.parse_and_eval("(unsigned long)thread_arena"))
        except gdb.error:
            arena = -1
        lwp = th.ptid[1]
        try:
            comm = open(f"/proc/{inf.pid}/task/{lwp}/comm").read().strip()
        except OSError:
            comm = "?"
        frames = []
        try:
            f = gdb.newest_frame()
            while f is not None and len(frames) < 14:
                frames.append(f.name() or "?")
                f = f.older()
        except gdb.error:
            pass
        out["threads"].append({"lwp": lwp, "comm": comm, "arena": arena, "frames": frames})
    main = int(gdb.parse_and_eval("(unsigned long)&main_arena"))
    heap_info_size = int(gdb.parse_and_eval("sizeof(heap_info)"))
    mstate_size = int(gdb.parse_and_eval("sizeof(struct malloc_state)"))

    def fastbin_chunks(av):
        found = set()
        for i in range(10):
            p = int(gdb.parse_and_eval(f"(unsigned long)((struct malloc_state*){av})->fastbinsY[{i}]"))
            while p and len(found) < 1_000_000:
                found.add(p)
                # glibc >= 2.32 stores fd safe-linked: fd ^ (address of fd >> 12)
                p = u64(inf.read_memory(p + 2 * SZ, 8).tobytes()) ^ ((p + 2 * SZ) >> 12)
        return found

    def walk(start, end, top, skip, chunks):
        mem = inf.read_memory(start, end - start).tobytes()
        p = start
        while p < end:
            size = u64(mem, p - start + SZ) & ~7
            if p == top or size == 0 or p + size + 2 * SZ > end:
                break
            in_use = u64(mem, p + size - start + SZ) & 1  # the next chunk's PREV_INUSE bit
            if in_use and p not in skip:
                chunks.append([p, size, mem[p - start + 2 * SZ:p - start + 2 * SZ + 48].hex()])
            p += size

    av = main
    while True:
        st = gdb.parse_and_eval(f"*(struct malloc_state*){av}")
        top = int(st["top"])
        skip = fastbin_chunks(av)
        chunks = []
        if av == main:
            walk(int(gdb.parse_and_eval("(unsigned long)mp_.sbrk_base")), top + 2 * SZ, top, skip, chunks)
        else:
            heap = top & ~(HEAP_MAX - 1)
            while heap:  # the heap holding top, then the older ones
                size = u64(inf.read_memory(heap + 2 * SZ, 8).tobytes())
                prev = u64(inf.read_memory(heap + SZ, 8).tobytes())
                first = heap + heap_info_size
                if first == av:  # an arena's first heap carries the arena itself
                    first = av + mstate_size
                walk((first + 15) & ~15, heap + size, top, skip, chunks)
                heap = prev
        out["arenas"].append({"arena": av, "system": int(st["system_mem"]), "top": top,
                              "inuse": sum(c[1] for c in chunks), "n": len(chunks), "chunks": chunks})
        av = int(st["next"])
        if av == main:
            break
    json.dump(out, open(path, "w"))
    for a in out["arenas"]:
        users = [t["lwp"] for t in out["threads"] if t["arena"] == a["arena"]]
        print(f"arena {a['arena']:#x}: system {a['system']}, in use {a['inuse']} in {a['n']} chunks, threads {users}")
    gdb.execute("detach")


def printable(raw):
    return "".join(chr(x) if 32 <= x < 127 else "." for x in raw)


def diff(path_a, path_b):
    a_json, b_json = (json.load(open(p)) for p in (path_a, path_b))
    before = {a["arena"]: a for a in a_json["arenas"]}
    for b in b_json["arenas"]:
        a = before.get(b["arena"], {"system": 0, "inuse": 0, "n": 0, "chunks": []})
        print(f"\narena {b['arena']:#x}: system {a['system']} -> {b['system']}, in use {a['inuse']} -> {b['inuse']} "
              f"({b['inuse'] - a['inuse']:+}), chunks {a['n']} -> {b['n']} ({b['n'] - a['n']:+})")
        for t in b_json["threads"]:
            if t["arena"] == b["arena"]:
                print(f"   thread {t['lwp']} ({t['comm']}): {' / '.join(t['frames'][:7])}"[:300])
        count_a = Counter(c[1] for c in a["chunks"])
        count_b = Counter(c[1] for c in b["chunks"])
        grown = sorted((((count_b[s] - count_a[s]) * s, s, count_b[s] - count_a[s]) for s in set(count_a) | set(count_b)), reverse=True)
        print("   sizes grown most (bytes, chunk size, count):", [g for g in grown[:10] if g[0] > 0])
        old = {(c[0], c[1], c[2]) for c in a["chunks"]}
        added = defaultdict(list)
        for c in b["chunks"]:
            if (c[0], c[1], c[2]) not in old:
                added[c[1]].append(c)
        for size, cs in sorted(added.items(), key=lambda kv: -len(kv[1]) * kv[0])[:8]:
            print(f"   only in the second: {len(cs)} chunks of {size} B, e.g.")
            for c in cs[:3]:
                raw = bytes.fromhex(c[2])
                print(f"      {c[0]:#x} {raw.hex()} {printable(raw)}")


try:
    import gdb  # present only when gdb runs this file
except ImportError:
    gdb = None
if gdb is not None:
    snapshot(gdb, os.environ.get("MALLOC_ARENAS_OUT", "malloc-arenas.json"))
elif len(sys.argv) == 3:
    diff(sys.argv[1], sys.argv[2])
else:
    print(__doc__)
    sys.exit(2)
