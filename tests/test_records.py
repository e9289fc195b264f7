"""records.py makes the front's records as dataclasses would: each behaviour the front relies on
is checked against the same class made by dataclasses (the front stopped importing dataclasses
to keep it, with inspect, ast and dis, out of every process: tests/test_front_imports.py)."""

from __future__ import annotations

import dataclasses
import sys
from typing import List, Optional, Tuple

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "python"))
from sluicegate import records  # noqa: E402
from sluicegate.validated import Config  # noqa: E402


def both(frozen: bool):
    """The same class, made by dataclasses and by records (compiled `__init__` or generic, as
    records.COMPILED_FIELDS is)."""
    made = []
    for decorate, field in ((dataclasses.dataclass(frozen=frozen), dataclasses.field),
                            (records.record(frozen=frozen), records.field)):
        @decorate
        class Point:
            x: int
            y: Optional[int] = None
            tags: List[str] = field(default_factory=list)
            pair: Tuple[int, int] = (1, 2)

        made.append(Point)
    return made


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("frozen", [True, False])
def test_a_record_is_made_read_compared_and_copied_as_a_dataclass(frozen, compiled, monkeypatch):
    monkeypatch.setattr(records, "COMPILED_FIELDS", 16 if compiled else 0)
    dc, rc = both(frozen)
    for args, kwargs in (((1,), {}), ((1, 2), {"tags": ["a"]}), ((), {"x": 3, "pair": (4, 5)})):
        a, b = dc(*args, **kwargs), rc(*args, **kwargs)
        assert [getattr(a, f.name) for f in dataclasses.fields(a)] == \
            [getattr(b, f.name) for f in records.fields(b)]
        assert repr(a).replace("dc", "") == repr(b).replace("rc", "")
        assert (a == dc(*args, **kwargs)) and (b == rc(*args, **kwargs))
        assert b != rc(99) and b != a  # another value; another class
        assert dataclasses.asdict(a) == records.asdict(b)
        assert dataclasses.replace(a, y=7).y == records.replace(b, y=7).y == 7
    assert dc(1).tags is not dc(1).tags and rc(1).tags is not rc(1).tags  # one list per record
    if frozen:
        assert hash(dc(1, 2, ())) == hash(rc(1, 2, ()))  # the fields' tuple's hash
        with pytest.raises(AttributeError):
            rc(1).x = 2
        with pytest.raises(records.FrozenInstanceError):
            del rc(1).x
    else:
        assert dc.__hash__ is None and rc.__hash__ is None
        b = rc(1)
        b.x = 2
        assert b.x == 2


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("args, kwargs", [((), {}), ((1, 2, [], (1, 2), 5), {}),
                                          ((1,), {"x": 1}), ((1,), {"z": 1})])
def test_a_wrong_call_is_refused_as_by_a_dataclass(args, kwargs, compiled, monkeypatch):
    monkeypatch.setattr(records, "COMPILED_FIELDS", 16 if compiled else 0)
    for cls in both(True):
        with pytest.raises(TypeError):
            cls(*args, **kwargs)
    dc, rc = both(True)
    with pytest.raises(TypeError):
        dataclasses.replace(dc(1), z=1)
    with pytest.raises(TypeError):
        records.replace(rc(1), z=1)


def test_config_has_the_generic_init_and_refuses_as_python_would():
    """Config has more fields than records.COMPILED_FIELDS: its __init__ is not compiled."""
    assert len(records.fields(Config)) > records.COMPILED_FIELDS
    with pytest.raises(TypeError, match="missing"):
        Config()
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        Config(nope=1)
    with pytest.raises(TypeError, match="multiple values for argument 'app'"):
        Config("a", app="b")
