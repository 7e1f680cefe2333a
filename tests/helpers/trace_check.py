"""What trace viewers make of a Chrome trace, without the viewers: every track's slices nest,
every flow binds, and speedscope's import (complete events turned into begin / end pairs in
floating point, then replayed as a stack per thread) finds nothing to complain about."""

from __future__ import annotations

import json
from collections import defaultdict


def _by_thread(events: list[dict]) -> dict[tuple, list[dict]]:
    threads = defaultdict(list)
    for e in events:
        if e["ph"] in ("X", "B", "E"):
            threads[(e["pid"], e["tid"])].append(e)
    return threads


def speedscope_warnings(events: list[dict]) -> list[str]:
    """The warnings speedscope's Trace Event importer (1.25) prints for ``events``: its
    algorithm replayed step by step. Per thread: times minus the thread's first; X events
    sorted by start, then longest first, each a begin and an end (ts + dur, in doubles); begins
    and ends each sorted by time (stably), taken in time order, at one time the ends first
    unless the begin's key is the end's; before an end, one at the same time whose key (else
    whose name) is the top frame's is taken first. A frame's key is its name, with its args
    as JSON when it has any."""
    out = []
    for key, evs in _by_thread(events).items():
        first = min(e["ts"] for e in evs)
        xs = sorted((e for e in evs if e["ph"] == "X"), key=lambda e: (e["ts"] - first, -e.get("dur", 0)))
        begins = sorted(({**e, "ts": e["ts"] - first} for e in xs), key=lambda e: e["ts"])
        ends = sorted(({**e, "ts": (e["ts"] - first) + e.get("dur", 0)} for e in xs), key=lambda e: e["ts"])
        stack: list[dict] = []
        i = j = 0
        while i < len(begins) or j < len(ends):
            if j >= len(ends) or (
                i < len(begins)
                and (
                    begins[i]["ts"] < ends[j]["ts"]
                    or (begins[i]["ts"] == ends[j]["ts"] and frame_key(begins[i]) == frame_key(ends[j]))
                )
            ):
                stack.append(begins[i])
                i += 1
                continue
            if stack:
                top = stack[-1]
                for same in (
                    lambda g, top=top: frame_key(g) == frame_key(top),
                    lambda g, top=top: g["name"] == top["name"],
                ):
                    u = j + 1  # as speedscope does, even when ends[j] is already the top's
                    while u < len(ends) and ends[u]["ts"] <= ends[j]["ts"] and not same(ends[u]):
                        u += 1
                    if u < len(ends) and ends[u]["ts"] <= ends[j]["ts"]:
                        ends[j], ends[u] = ends[u], ends[j]
                        break
            e = ends[j]
            j += 1
            if not stack:
                out.append(f"{key}: ended {e['name']!r} on an empty stack")
            elif stack[-1]["name"] != e["name"]:
                out.append(
                    f"{key} ts={e['ts']}: tried to end {e['name']!r} when {stack[-1]['name']!r} was on top"
                )
            else:
                if frame_key(stack[-1]) != frame_key(e):
                    out.append(
                        f"{key} ts={e['ts']}: tried to end {frame_key(e)!r} when {frame_key(stack[-1])!r} was on top"
                    )
                stack.pop()
        out += [f"{key}: {e['name']!r} still open at the end" for e in stack]
    return out


def frame_key(e: dict) -> str:
    """What speedscope takes for a trace event's function: its name, and its args as JSON."""
    name = e.get("name") or "(unnamed)"
    return f"{name} {json.dumps(e['args'], separators=(',', ':'))}" if e.get("args") is not None else name


def nesting_errors(events: list[dict]) -> list[str]:
    """Slices of one track that overlap without nesting, in exact ns (ts and dur rounded to ns)."""
    out = []
    for key, evs in _by_thread(events).items():
        spans = sorted(
            (
                (round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000), e["name"])
                for e in evs
                if e["ph"] == "X"
            ),
            key=lambda s: (s[0], -s[1]),
        )
        stack: list[tuple] = []
        for s in spans:
            while stack and stack[-1][1] <= s[0]:
                stack.pop()
            if stack and s[1] > stack[-1][1]:
                out.append(
                    f"{key}: {s[2]!r} [{s[0]}, {s[1]}] crosses {stack[-1][2]!r} [{stack[-1][0]}, {stack[-1][1]}]"
                )
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
                out.append(
                    f"flow {e['id']} {e['ph']} at {e['ts']} us binds to no slice of {(e['pid'], e['tid'])}"
                )
    out += [f"flow {k}: {v}" for k, v in ids.items() if sorted(v) != ["f", "s"]]
    return out


def slice_parents(events: list[dict]) -> dict[int, int | None]:
    """For each complete event (by its index in ``events``), the index of the innermost other
    complete event of its (pid, tid) that contains it in exact ns (at equal spans the one
    listed first holds the other), None at the top. Slices that cross are reported by
    ``nesting_errors``; here a slice that crosses its neighbour is not its child."""
    out: dict[int, int | None] = {}
    threads = defaultdict(list)
    for i, e in enumerate(events):
        if e["ph"] == "X":
            threads[(e["pid"], e["tid"])].append(
                (round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000), i)
            )
    for spans in threads.values():
        stack: list[tuple] = []
        for s in sorted(spans, key=lambda s: (s[0], -s[1], s[2])):
            while stack and not (s[0] < stack[-1][1] and s[1] <= stack[-1][1]):  # the top does not hold s
                stack.pop()
            out[s[2]] = stack[-1][2] if stack else None
            stack.append(s)
    return out


def ancestors(events: list[dict], i: int, parents: dict[int, int | None] | None = None) -> list[dict]:
    """The complete events that hold event ``i``, innermost first."""
    parents = slice_parents(events) if parents is None else parents
    out = []
    j = parents.get(i)
    while j is not None:
        out.append(events[j])
        j = parents[j]
    return out
