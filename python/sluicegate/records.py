"""Record classes, as `dataclasses.dataclass` makes them, for the front's own records (`Config`,
an option's row, a bind address, a hook's request ...): `record` adds `__init__` (one argument
per annotated field, in order, with its default or `field(default_factory=...)`), `__repr__`,
`__eq__` and, for a frozen record, `__hash__` and the refusal of assignments
(`FrozenInstanceError`); `fields`, `replace` and `asdict` read and copy them.

Why not dataclasses: importing it imports inspect, and with it ast, dis and tokenize, about
1.1 MB of resident memory in the master and again in every worker forked from it (a page of a
master's counts in each process's RSS) for a few records made at the start. Only the subset
the front uses is here: no inheritance between records, no `__post_init__`, no `ClassVar`.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Tuple

_MISSING: Any = object()


class FrozenInstanceError(AttributeError):
    """An assignment to, or deletion of, a field of a frozen record."""


class Field:
    """One field of a record: its name, annotation (as written), default or default factory."""

    __slots__ = ("name", "type", "default", "default_factory")

    def __init__(self, default: Any = _MISSING, default_factory: Any = _MISSING) -> None:
        self.name = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, type={self.type!r})"


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] = _MISSING) -> Any:
    """A field's default given as a factory called per record (`field(default_factory=list)`)."""
    return Field(default, default_factory)


def record(cls: Any = None, *, frozen: bool = False, eq: bool = True) -> Any:
    """The class decorator (`@record`, `@record(frozen=True)`, `@record(frozen=True, eq=False)`)."""

    def wrap(cls: type) -> type:
        return _make(cls, frozen, eq)

    return wrap if cls is None else wrap(cls)


def _make(cls: Any, frozen: bool, eq: bool) -> type:
    found = []
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        f = cls.__dict__.get(name, _MISSING)
        if not isinstance(f, Field):
            f = Field(f)
        f.name, f.type = name, annotation
        if f.default is _MISSING:
            if name in cls.__dict__:
                delattr(cls, name)
        else:
            setattr(cls, name, f.default)
        found.append(f)
    fields_ = tuple(found)
    cls.__record_fields__ = fields_
    cls.__init__ = _init(cls, fields_, frozen)
    if "__repr__" not in cls.__dict__:
        cls.__repr__ = _repr
    explicit_hash = "__hash__" in cls.__dict__ and not (
        cls.__dict__["__hash__"] is None and "__eq__" in cls.__dict__)
    if eq and "__eq__" not in cls.__dict__:
        cls.__eq__ = _eq
    if frozen:
        cls.__setattr__ = _frozen_setattr
        cls.__delattr__ = _frozen_delattr
    if eq and not explicit_hash:
        cls.__hash__ = _hash if frozen else None
    return cls


#: Records of more fields than this get a generic `__init__` (`_generic_init`): compiling one
#: of `Config`'s hundred-odd parameters took 0.6 MB that stayed resident after it was freed.
COMPILED_FIELDS = 16


def _init(cls: type, fields_: Tuple[Field, ...], frozen: bool) -> Callable[..., None]:
    """`__init__` written out and compiled, as dataclasses does: a record made per request (a
    hook's request) costs what a hand-written class would. A record of many fields, made once
    at the start (`Config`), gets `_generic_init`."""
    if len(fields_) > COMPILED_FIELDS:
        return _generic_init(cls, fields_, frozen)
    names: Dict[str, Any] = {"__record_set__": object.__setattr__, "__record_missing__": _MISSING}
    params, body = ["__record_self__"], []
    for i, f in enumerate(fields_):
        if f.default_factory is not _MISSING:
            names[f"__record_factory_{i}__"] = f.default_factory
            params.append(f"{f.name}=__record_missing__")
            value = f"__record_factory_{i}__() if {f.name} is __record_missing__ else {f.name}"
        else:
            if f.default is not _MISSING:
                names[f"__record_default_{i}__"] = f.default
                params.append(f"{f.name}=__record_default_{i}__")
            else:
                params.append(f.name)
            value = f.name
        if frozen:
            body.append(f"__record_set__(__record_self__, {f.name!r}, {value})")
        else:
            body.append(f"__record_self__.{f.name} = {value}")
    text = (f"def __create__({', '.join(names)}):\n"
            f" def __init__({', '.join(params)}):\n"
            + "".join(f"  {line}\n" for line in body or ["pass"])
            + " return __init__\n")
    scope: Dict[str, Any] = {}
    exec(text, {}, scope)
    init = scope["__create__"](**names)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _generic_init(cls: type, fields_: Tuple[Field, ...], frozen: bool) -> Callable[..., None]:
    """An `__init__` taking the fields as the compiled one does (positionally or by name,
    defaults for those not given), refusing what Python would refuse, with the same words."""
    index = {f.name: i for i, f in enumerate(fields_)}
    set_ = object.__setattr__ if frozen else setattr
    qualname = f"{cls.__qualname__}.__init__()"

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(fields_):
            raise TypeError(f"{qualname} takes {len(fields_) + 1} positional arguments but "
                            f"{len(args) + 1} were given")
        values = list(args) + [_MISSING] * (len(fields_) - len(args))
        for name, value in kwargs.items():
            i = index.get(name)
            if i is None:
                raise TypeError(f"{qualname} got an unexpected keyword argument {name!r}")
            if i < len(args):
                raise TypeError(f"{qualname} got multiple values for argument {name!r}")
            values[i] = value
        missing = []
        for f, value in zip(fields_, values):
            if value is _MISSING:
                if f.default_factory is not _MISSING:
                    value = f.default_factory()
                elif f.default is not _MISSING:
                    value = f.default
                else:
                    missing.append(f.name)
                    continue
            set_(self, f.name, value)
        if missing:
            raise TypeError(f"{qualname} missing {len(missing)} required argument(s): "
                            + ", ".join(repr(n) for n in missing))

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _repr(self: Any) -> str:
    inner = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in self.__record_fields__)
    return f"{type(self).__qualname__}({inner})"


def _values(self: Any) -> Tuple[Any, ...]:
    return tuple(getattr(self, f.name) for f in self.__record_fields__)


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        return _values(self) == _values(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(_values(self))


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def fields(obj: Any) -> Tuple[Field, ...]:
    """A record's (or record class's) fields, in order."""
    try:
        return obj.__record_fields__  # type: ignore[no-any-return]
    except AttributeError:
        raise TypeError("must be called with a record type or instance") from None


def replace(obj: Any, **changes: Any) -> Any:
    """A new record: `obj`'s fields, with `changes` (an unknown name is a TypeError)."""
    values = {f.name: getattr(obj, f.name) for f in fields(obj)}
    unknown = set(changes) - set(values)
    if unknown:
        raise TypeError(f"{type(obj).__qualname__} has no field {sorted(unknown)[0]!r}")
    values.update(changes)
    return type(obj)(**values)


def asdict(obj: Any) -> Dict[str, Any]:
    """A record's fields as a dict (values as they are: the front's records hold immutable
    values)."""
    return {f.name: getattr(obj, f.name) for f in fields(obj)}
