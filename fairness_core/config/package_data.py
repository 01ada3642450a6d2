"""Files shipped inside a package (templates, word lists, the default thresholds), read and validated.

Each evaluation keeps its data files in a ``data/`` folder beside its code;
:func:`read_data_file` parses one into a frozen pydantic model, so that a broken
edit fails loudly with the file and the field named.

>>> default_thresholds_path().name
'thresholds.yaml'
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from importlib.abc import Traversable

M = TypeVar("M", bound=BaseModel)


def default_thresholds_path() -> Path:
    """The package's own ``thresholds.yaml``: the limits an installed package audits with by default."""
    return Path(str(resources.files("fairness_core.data") / "thresholds.yaml"))


def read_data_file(package: str, name: str, model: type[M]) -> M:
    """Parse ``name`` in the ``data/`` folder of ``package`` into ``model``; errors name the file and field."""
    text = (resources.files(package) / "data" / name).read_text(encoding="utf-8")
    try:
        return model.model_validate(yaml.safe_load(text))
    except ValidationError as err:
        raise ValueError(f"{package}/data/{name} is invalid:\n{err}") from None


def data_path(package: str, name: str) -> Traversable:
    """The file ``name`` in the ``data/`` folder of ``package`` (open it with ``importlib.resources.as_file``)."""
    return resources.files(package) / "data" / name
