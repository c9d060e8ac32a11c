#!/usr/bin/env python3
"""Counts import circles between the modules of a Rust crate (no build needed).

    scripts/import-circles.py crates/herdless-cli/src            # modules
    scripts/import-circles.py crates/herdless-cli/src --files    # files
    scripts/import-circles.py crates/herdless/src/engine --prefix engine

A *unit* is a module with its whole subtree, found by descending from the root
through container modules (a file holding only `mod` declarations, `use`
re-exports, attributes and docs: `lib.rs`, `cmd/mod.rs`): the CLI's units are
`cli`, each `cmd::<subcommand>` and each `shared::<piece>`. With `--files` every
file is a unit.

An edge A -> B is any path in A's code (tests included; comments, docs and
strings are not code) that names an item of B: `use` trees, inline
`crate::`/`super::`/`self::` paths and `child::` paths through a declared child
module. A circle is a strongly connected group of more than one unit; the
output lists each, and the count of units in circles over the units.
Exit status: 0 with no circle, 1 with at least one.
"""

import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(src):
    """Source with comments, strings and char literals blanked (lines kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            i = j
            continue
        if src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * src.count("\n", i, j))
            i = j
            continue
        m = re.match(r'b?r(#*)"', src[i:i + 300])
        if m and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            end = '"' + m.group(1)
            j = src.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j
            continue
        if c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j + 1
            continue
        if c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", src[i:i + 12])
            if m:
                out.append("' '")
                i += m.end()
                continue
        out.append(c)
        i += 1
    return "".join(out)


def module_files(root, prefix):
    """{module path tuple: file} for every .rs file under root."""
    mods = {}
    for d, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".rs") or (f == "main.rs" and "lib.rs" in files):
                continue  # a binary beside its library only calls it
            rel = os.path.relpath(os.path.join(d, f), root)[:-3].split(os.sep)
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            if rel and rel[-1] in ("lib", "main") and len(rel) == 1:
                rel = []
            mods[tuple(prefix + rel)] = os.path.join(d, f)
    return mods


def expand_use(tree):
    """`a::{b, c::{d, self}}` -> [a::b, a::c::d, a::c]."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+" + IDENT, "", tree))
    depth, top = 0, []
    start = 0
    for k, ch in enumerate(tree):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            top.append(tree[start:k])
            start = k + 1
    top.append(tree[start:])
    paths = []
    for t in top:
        if not t:
            continue
        b = t.find("{")
        if b < 0:
            paths.append(t)
            continue
        head = t[:b].rstrip(":")
        for sub in expand_use(t[b + 1:-1]):
            paths.append(head if sub == "self" else (head + "::" + sub if head else sub))
    return paths


def references(code, here, children):
    """Module paths named in `code` of module `here`."""
    refs = []
    code = re.sub(r"pub\s*\(\s*in\s+[^)]*\)", "pub", code)
    # inline modules: `mod name {` opens a scope for super:: resolution
    depth = 0
    tokens = re.finditer(r"\bmod\s+(" + IDENT + r")\s*\{|[{}]|\buse\s+([^;]+);|"
                         r"\b((?:crate|super|self|" + IDENT + r")(?:\s*::\s*" + IDENT + r")+)",
                         code)
    inline = []
    for m in tokens:
        t = m.group(0)
        if m.group(1):
            depth += 1
            inline.append((m.group(1), depth))
            continue
        if t == "{":
            depth += 1
            continue
        if t == "}":
            if inline and inline[-1][1] == depth:
                inline.pop()
            depth -= 1
            continue
        base = list(here) + [name for name, _ in inline]
        paths = expand_use(m.group(2)) if m.group(2) else [re.sub(r"\s+", "", m.group(3))]
        for p in paths:
            parts = [x for x in p.split("::") if x]
            if not parts:
                continue
            if parts[0] == "crate":
                refs.append(tuple(parts[1:]))
            elif parts[0] in ("super", "self"):
                cur = list(base)
                while parts and parts[0] in ("super", "self"):
                    if parts[0] == "super":
                        cur = cur[:-1]
                    parts = parts[1:]
                refs.append(tuple(cur + parts))
            elif parts[0] in children and not inline:
                refs.append(tuple(list(here) + parts))
    return refs


def is_container(code):
    body = re.sub(r"#!?\[[^\]]*\]", "", code)
    body = re.sub(r"\b(pub(\s*\([^)]*\))?\s+)?mod\s+" + IDENT + r"\s*;", "", body)
    body = re.sub(r"\bpub(\s*\([^)]*\))?\s+use\s+[^;]+;", "", body)
    return body.strip() == ""


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    files_mode = "--files" in sys.argv
    prefix = []
    if "--prefix" in sys.argv:
        prefix = sys.argv[sys.argv.index("--prefix") + 1].split("::")
        args = [a for a in args if a != sys.argv[sys.argv.index("--prefix") + 1]]
    root = args[0] if args else "."
    mods = module_files(root, prefix)
    code = {m: strip(open(f, encoding="utf-8").read()) for m, f in mods.items()}
    children = {m: set(re.findall(r"\bmod\s+(" + IDENT + r")\s*;", c)) for m, c in code.items()}

    def owner(path):
        """The deepest file module that `path` lies in (None: outside the tree)."""
        path = tuple(path)
        for k in range(len(path), -1, -1):
            if path[:k] in mods:
                return path[:k]
        return None

    if files_mode:
        unit_of = {m: m for m in mods}
    else:
        unit_of = {}

        def assign(m):
            if m in code and is_container(code[m]) and children[m]:
                for c in children[m]:
                    assign(m + (c,))
            else:
                for other in mods:
                    if other[:len(m)] == m:
                        unit_of[other] = m
        assign(tuple(prefix))
        for m in mods:
            unit_of.setdefault(m, m)

    edges = {u: set() for u in set(unit_of.values())}
    for m, c in code.items():
        for ref in references(c, m, children[m]):
            o = owner(ref)
            if o is None or o not in unit_of:
                continue
            a, b = unit_of[m], unit_of[o]
            if a != b:
                edges[a].add(b)

    # Tarjan's strongly connected components
    index, low, onstack, stack, sccs, counter = {}, {}, set(), [], [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        onstack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in onstack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                onstack.discard(w)
                comp.append(w)
                if w == v:
                    break
            sccs.append(comp)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    circles = [sorted(c) for c in sccs if len(c) > 1]
    name = lambda u: "::".join(u) or "(root)"
    for c in sorted(circles, key=len, reverse=True):
        print(f"circle of {len(c)}: " + ", ".join(name(u) for u in c))
    inside = sum(len(c) for c in circles)
    kind = "files" if files_mode else "modules"
    print(f"{len(circles)} import circle(s); {inside} of {len(edges)} {kind} in one")
    sys.exit(1 if circles else 0)


if __name__ == "__main__":
    main()
