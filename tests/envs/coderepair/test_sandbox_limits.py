"""The sandbox child sets every resource limit or refuses to start: a limit it cannot set is never skipped."""

from __future__ import annotations

import resource

import pytest

from drill.envs.coderepair import sandbox_child

LIMITS = {"memory_bytes": 1 << 30, "cpu_seconds": 5, "file_bytes": 1 << 20, "processes": 8}

pytestmark = pytest.mark.without_jail  # pure functions of the child: no jail is built


def test_a_limit_that_cannot_be_set_raises_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    set_calls: list[int] = []

    def refuse(which: int, values: tuple[int, int]) -> None:
        set_calls.append(which)
        if which == resource.RLIMIT_FSIZE:
            raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(resource, "getrlimit", lambda which: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    monkeypatch.setattr(resource, "setrlimit", refuse)
    with pytest.raises(OSError, match="cannot set RLIMIT_FSIZE"):
        sandbox_child._limit(LIMITS)
    assert resource.RLIMIT_NPROC not in set_calls  # it stopped at the first failure


def test_a_lower_hard_limit_already_in_place_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    given: dict[int, tuple[int, int]] = {}
    monkeypatch.setattr(resource, "getrlimit", lambda which: (100, 100) if which == resource.RLIMIT_AS
                        else (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    monkeypatch.setattr(resource, "setrlimit", lambda which, values: given.__setitem__(which, values))
    sandbox_child._limit(LIMITS)
    assert given[resource.RLIMIT_AS] == (100, 100)  # stricter than the 1 GiB asked: kept
    assert given[resource.RLIMIT_CPU] == (5, 5)
    assert given[resource.RLIMIT_NOFILE] == (64, 64)
