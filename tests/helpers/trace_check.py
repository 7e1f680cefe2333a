"""What trace viewers make of a Chrome trace, without the viewers: every track's slices nest,
every flow binds, and speedscope's import (complete events turned into begin / end pairs in
floating point, then replayed as a stack per thread) finds nothing to complain about."""

from __future__ import annotations

from collections import defaultdict


def _by_thread(events: list[dict]) -> dict[tuple, list[dict]]:
    threads = defaultdict(list)
    for e in events:
        if e["ph"] in ("X", "B", "E"):
            threads[(e["pid"], e["tid"])].append(e)
    return threads


def speedscope_warnings(events: list[dict]) -> list[str]:
    """The warnings speedscope's Trace Event importer prints for ``events``: its algorithm
    (per thread: times minus the thread's first, X events sorted by start then longest
    first, end = ts + dur in doubles, ends before begins at one time but for the same
    event) replayed step by step."""
    out = []
    for key, evs in _by_thread(events).items():
        first = min(e["ts"] for e in evs)
        xs = sorted((e for e in evs if e["ph"] == "X"), key=lambda e: (e["ts"] - first, -e.get("dur", 0)))
        begins = sorted(({**e, "ts": e["ts"] - first} for e in xs), key=lambda e: e["ts"])
        ends = sorted(({**e, "ts": (e["ts"] - first) + e.get("dur", 0)} for e in xs), key=lambda e: e["ts"])
        stack: list[dict] = []
        i = j = 0
        while i < len(begins) or j < len(ends):
            if j >= len(ends) or (i < len(begins) and (begins[i]["ts"] < ends[j]["ts"] or (
                    begins[i]["ts"] == ends[j]["ts"] and _key(begins[i]) == _key(ends[j])))):
                stack.append(begins[i])
                i += 1
                continue
            e = ends[j]
            j += 1
            if not stack:
                out.append(f"{key}: ended {e['name']!r} on an empty stack")
            elif stack[-1]["name"] != e["name"] or _key(stack[-1]) != _key(e):
                out.append(f"{key} ts={e['ts']}: tried to end {e['name']!r} when {stack[-1]['name']!r} was on top")
            else:
                stack.pop()
        out += [f"{key}: {e['name']!r} still open at the end" for e in stack]
    return out


def _key(e: dict) -> tuple:
    return e["name"], repr(sorted((e.get("args") or {}).items()))


def nesting_errors(events: list[dict]) -> list[str]:
    """Slices of one track that overlap without nesting, in exact ns (ts and dur rounded to ns)."""
    out = []
    for key, evs in _by_thread(events).items():
        spans = sorted(((round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000), e["name"])
                        for e in evs if e["ph"] == "X"), key=lambda s: (s[0], -s[1]))
        stack: list[tuple] = []
        for s in spans:
            while stack and stack[-1][1] <= s[0]:
                stack.pop()
            if stack and s[1] > stack[-1][1]:
                out.append(f"{key}: {s[2]!r} [{s[0]}, {s[1]}] crosses {stack[-1][2]!r} [{stack[-1][0]}, {stack[-1][1]}]")
            stack.append(s)
    return out


def flow_errors(events: list[dict]) -> list[str]:
    """Flows whose start or end binds to no slice: a start (``s``) must lie inside a slice of
    its thread, an end (``f``, ``bp: e``) too; every id has one start and one end."""
    out = []
    slices = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            slices[(e["pid"], e["tid"])].append((round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)))
    ids = defaultdict(list)
    for e in events:
        if e["ph"] in ("s", "f"):
            ids[e["id"]].append(e["ph"])
            t = round(e["ts"] * 1000)
            if not any(a <= t <= b for a, b in slices[(e["pid"], e["tid"])]):
                out.append(f"flow {e['id']} {e['ph']} at {e['ts']} us binds to no slice of {(e['pid'], e['tid'])}")
    out += [f"flow {k}: {v}" for k, v in ids.items() if sorted(v) != ["f", "s"]]
    return out
