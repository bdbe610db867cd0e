"""Copilot sheets are agent input: the formula evaluator must never hang the environment or its checker, and a
formula is a formula only when it computes from cells (the outside red team's "=1467" and k cells that each SUM
all k, which cost k**9 before the evaluator memoised and capped its work)."""

from __future__ import annotations

import pytest

from drill.core import Action
from drill.envs.copilot import CopilotEnv
from drill.envs.copilot.world import COLUMNS, ERROR, MAX_ROWS, MAX_WORK, Formulas, cell_value, computes


def _hostile_sheet() -> dict[str, str]:
    """Every cell of the sheet a formula over the whole sheet or the column below it: circular, deep and wide."""
    cells = {}
    for column in COLUMNS:
        for row in range(1, MAX_ROWS + 1):
            cells[f"{column}{row}"] = (f"=SUM(A1:H{MAX_ROWS})" if row % 2 else
                                       f"=SUM({column}{row + 1}:{column}{MAX_ROWS})+{column}{min(row + 1, MAX_ROWS)}")
    return cells


def test_self_referencing_sums_are_a_circular_error_not_a_hang() -> None:
    for k in (2, 5, 60):
        cells = {f"B{r}": f"=SUM(B1:B{k})" for r in range(1, k + 1)}
        assert cell_value(cells, "B1") == ERROR


@pytest.mark.timeout(60)  # a guard against a hang (the uncapped evaluator never ends here), not a speed target
def test_a_hostile_sheet_evaluates_within_the_work_cap() -> None:
    cells = _hostile_sheet()
    values = Formulas(cells)
    results = [values(ref) for ref in cells]
    assert values.work <= MAX_WORK + len(cells) + 1 and all(isinstance(v, (float, str)) for v in results)


def test_an_honest_sheet_still_evaluates() -> None:
    cells = {"B2": "100", "B3": "$1,200", "B4": "=B2*2", "B5": "=SUM(B2:B4)", "B6": "=AVERAGE(B2:B3)+MAX(B2:B4)/2",
             "B7": "=B5-B6", "B8": "=B9", "B9": "=B8"}
    values = Formulas(cells)
    assert (values("B5"), values("B6"), values("B7")) == (1500.0, 1250.0, 250.0)
    assert values("B8") == values("B9") == ERROR


@pytest.mark.timeout(60)  # a guard against a hang, not a speed target: the work cap is what is checked
def test_the_checker_of_a_hostile_sheet_finishes_at_once() -> None:
    env = CopilotEnv(transient_rate=0.0)
    task = next(t for t in env.tasks("test") + env.tasks("train") if t.template == "sheet_total")
    env.reset(task, 0)
    written = {f"B{r}": f"=SUM(B5:B{MAX_ROWS})" for r in range(5, MAX_ROWS + 1)} | {"A5": "Total"}
    env.step(Action.call("write_cells", doc_id=task.params["doc"], values=written))
    read = env.step(Action.call("read_cells", doc_id=task.params["doc"], cells="A1:H60"))
    result = env.step(Action.call("finish", status="done", answer="Done."))
    assert not read.observation.error
    checked = next(e.data for e in result.events if e.name == "checked")
    assert "B5 is the total" in checked["required_failed"]


def test_a_typed_total_dressed_as_a_formula_is_not_a_formula() -> None:
    env = CopilotEnv(transient_rate=0.0)
    task = next(t for t in env.tasks("test") + env.tasks("train") if t.template == "sheet_total")
    verdicts = {}
    for written in ("=SUM(B2:B4)", "typed"):
        env.reset(task, 0)
        cells = env.world.docs[task.params["doc"]].cell_map()
        total = sum(float(cells[f"B{r}"]) for r in (2, 3, 4))
        value = written if written != "typed" else f"={total:g}"
        env.step(Action.call("write_cells", doc_id=task.params["doc"], values={"A5": "Total", "B5": value}))
        result = env.step(Action.call("finish", status="done", answer="Done."))
        verdicts[written] = next(e.data for e in result.events if e.name == "checked")
    assert "B5 is a formula" in verdicts["=SUM(B2:B4)"]["quality_passed"]
    assert "B5 is a formula" in verdicts["typed"]["quality_failed"]  # "=1467" states the total, it computes nothing
    assert verdicts["typed"]["completed"]  # the total is right: only the quality check fails


FORMULAS = {  # the total of B2:B4 written as (formula, whether it computes the total from the cells)
    "=SUM(B2:B4)": True, "=B2+B3+B4": True, "=B4+B3+B2": True, "=SUM(B2:B3)+B4": True, "=(B2+B3+B4)*1": True,
    "={total}": False, "={total}+0*B2": False, "={total}-B2+B2": False, "=B2*0+{total}": False,
    "=B2+B3": False, "=SUM(B2:B4)*2-SUM(B2:B4)+0*{total}": True, "=3*AVERAGE(B2:B4)": True, "=B5": False,
}


@pytest.mark.parametrize("formula", FORMULAS)
def test_a_formula_counts_only_when_the_total_follows_the_cells(formula: str) -> None:
    """The outside red team's "=1467+0*B2" named a cell and passed "a formula rather than a typed number" until
    2026-11-28: now the formula must follow its inputs when they change (`world.computes`)."""
    cells = {"A1": "Month", "B1": "Amount", "B2": "400", "B3": "500", "B4": "567"}
    written = formula.format(total="1467")
    assert computes({**cells, "B5": written}, "B5", ["B2", "B3", "B4"]) is FORMULAS[formula]


def test_a_typed_total_plus_zero_times_a_cell_fails_the_formula_checks() -> None:
    env = CopilotEnv(transient_rate=0.0)
    for template, check in (("sheet_total", "B5 is a formula"), ("budget_to_sheet", "total row with a formula")):
        task = next(t for t in env.tasks("test") if t.template == template)
        verdicts = {}
        for typed in (False, True):
            env.reset(task, 0)
            for call in task.solution[:-1]:
                arguments = dict(call.arguments)
                if call.tool == "write_cells":
                    values = dict(arguments["values"])
                    sheet = {**env.world.docs[arguments["doc_id"]].cell_map(), **values}
                    for ref, value in values.items():
                        if typed and value.startswith("=SUM"):
                            values[ref] = f"={Formulas(sheet)(ref):g}+0*B2"
                    arguments["values"] = values
                env.step(Action(tool=call.tool, arguments=arguments))
            result = env.step(Action.call("finish", status="done", answer="Done."))
            verdicts[typed] = next(e.data for e in result.events if e.name == "checked")
        assert check in verdicts[False]["quality_passed"] and verdicts[False]["completed"]
        assert check in verdicts[True]["quality_failed"] and verdicts[True]["completed"], template


SPELLINGS = {  # the total of B2:B4 as spreadsheets also take it (formula, whether it computes the total)
    "=sum(b2:b4)": True, "=SUM($B$2:$B$4)": True, "=Sum(B$2:B$4)": True, "=SUM(B2,B3,B4)": True,
    "=SUM(B2:B3, B4)": True, "=SUM(B2:B4, 0)": True, "=sum({total})": False, "=SUM({total}, 0)": False,
    "=SUM(B2,B3)": False, "=SUM(B2:B4,B5)": False, "=SUM(B2:B4,)": False,
}


@pytest.mark.parametrize("formula", SPELLINGS)
def test_a_total_spelled_as_spreadsheets_take_it_is_a_formula(formula: str) -> None:
    """The ninth red team: lower-case names, `$` anchors and arguments separated by commas were `#ERROR`, so an
    honest "=sum(b2:b4)" or "=SUM(B2,B3,B4)" failed "B5 is the total" and lost the L3 task; a typed total is still
    no formula however it is spelled."""
    cells = {"A1": "Month", "B1": "Amount", "B2": "400", "B3": "500", "B4": "567"}
    written = formula.format(total="1467")
    assert computes({**cells, "B5": written}, "B5", ["B2", "B3", "B4"]) is SPELLINGS[formula]
    assert (Formulas({**cells, "B5": written})("B5") == 1467.0) is (SPELLINGS[formula] or "1467" in written)


@pytest.mark.parametrize("formula", ["={total}+SUM(1.5e305)*B2*0", "=SUM(B2:B4, nan)", "=SUM(B2:B4)+SUM(inf)*0",
                                     "=SUM(B2:B4, 1e0)"])
def test_a_total_that_overflows_or_reads_nan_is_no_formula(formula: str) -> None:
    """A reviewer after the ninth red team: a function's arguments were read with `float`, which takes "1.5e305",
    "nan" and "inf", so a typed total plus 1.5e305 * B2 * 0 was the total on the sheet and nan once `computes` raised
    B2 (the product overflows), and nan is never farther than the tolerance from anything: "B5 is a formula" passed
    on 3 of 4 sheet_total episodes (0 before the relaxation). Numbers in arguments are written as elsewhere in a
    formula, and a value that is not finite is `#ERROR`."""
    cells = {"A1": "Month", "B1": "Amount", "B2": "661", "B3": "513", "B4": "293"}
    written = {**cells, "B5": formula.format(total=1467)}
    assert not computes(written, "B5", ["B2", "B3", "B4"])
    assert Formulas(written)("B5") in (ERROR, 1467.0)
