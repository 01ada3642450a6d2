"""One shape for every validation error of a user's file: ``dotted.key: what is wrong``.

``thresholds.yaml`` and attribute-set files are both frozen pydantic models with
``extra='forbid'``; a misspelled key is reported with the keys allowed where it
stands, found by walking the model from its root through nested models, dict
values, tuple items and ``X | None``.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, RootModel, ValidationError

from fairness_core.errors import did_you_mean


class FrozenModel(BaseModel):
    """The one base of the project's pydantic models: immutable, and a key it does not know is an error.

    A misspelled key in a user's file must fail, not fall back to a default.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")


class StrictModel(FrozenModel):
    """For numbers a gate depends on (``thresholds.yaml``): no coercion of ``"0.1"`` or ``true``, no inf or nan."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)


def describe_errors(error: ValidationError, root: type[BaseModel]) -> list[str]:
    """Each problem of ``error`` as one line naming its dotted location."""
    return [describe_error(detail, root) for detail in error.errors()]


def describe_error(error: Any, root: type[BaseModel]) -> str:
    """One error of a :class:`ValidationError` (an item of ``.errors()``) as ``dotted.key: what is wrong``.

    A misspelled key gets the closest allowed key and the list of them; a bad
    value is shown only when it is a short scalar (:func:`shown_value`), so that
    the message never repeats a section of the user's file.
    """
    location = ".".join(str(part) for part in error["loc"]) or "(top level)"
    if error["type"] == "extra_forbidden" and isinstance(error["loc"][-1], str):
        allowed = allowed_keys(root, error["loc"][:-1])
        return (f"{location}: unknown key {error['loc'][-1]!r}; allowed keys here: {', '.join(allowed)}."
                f"{did_you_mean(error['loc'][-1], allowed)}")
    if error["type"] == "missing":
        return f"{location}: {error['msg']}"
    value = error.get("input")
    return f"{location}: {error['msg']} (got {shown_value(value)}){_number_as_text(value)}"


#: The longest text of a bad value that an error message repeats.
SHOWN_CHARACTERS = 40


def shown_value(value: Any) -> str:
    """A bad value as an error message shows it: a short scalar as written, anything else by its kind and size.

    >>> shown_value(1.5), shown_value({"a": 1, "b": 2}), shown_value([1, 2, 3])
    ('1.5', 'a mapping of 2 keys', 'a list of 3 items')
    >>> shown_value("x" * 50)
    "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…' (50 characters)"
    """
    if isinstance(value, Mapping):
        return f"a mapping of {len(value)} key{'s' if len(value) != 1 else ''}"
    if isinstance(value, (list, tuple, set)):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, str) and len(value) > SHOWN_CHARACTERS:
        return f"{value[:SHOWN_CHARACTERS] + '…'!r} ({len(value)} characters)"
    text = repr(value)
    return text if len(text) <= SHOWN_CHARACTERS else f"a {type(value).__name__}"


def _number_as_text(value: Any) -> str:
    """Why YAML gave text where a number was written: ``1e308`` is a string in YAML 1.1, ``1.0e308`` a float.

    >>> _number_as_text("1e308")
    ': YAML reads 1e308 as text; write a number in exponent form with a dot and a signed exponent, e.g. 1.0e+308'
    """
    if not isinstance(value, str):
        return ""
    try:
        number = float(value)
    except ValueError:
        return ""
    return (f": YAML reads {value} as text; write a number in exponent form with a dot and a signed exponent, "
            f"e.g. {number:.1e}")


def allowed_keys(root: type[BaseModel], parent: tuple) -> list[str]:
    """The fields of the model found at ``parent`` below ``root`` (``["(see the README)"]`` where there is none)."""
    annotation: Any = root
    for part in parent:
        annotation = _unwrapped(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(part) if isinstance(part, str) else None
            annotation = field.annotation if field else None
        else:
            origin = get_origin(annotation)
            annotation = get_args(annotation)[0 if origin is tuple else -1] if origin in (dict, tuple) else None
    annotation = _unwrapped(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(annotation.model_fields)
    return ["(see the README)"]


def _unwrapped(annotation: Any) -> Any:
    """The model an error location steps into: ``X`` of ``X | None``, and the type a ``RootModel`` wraps."""
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    if isinstance(annotation, type) and issubclass(annotation, RootModel):
        annotation = annotation.model_fields["root"].annotation
    return annotation
