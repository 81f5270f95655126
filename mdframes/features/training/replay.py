"""A training set made again: its features from ``info``, the lake at the table versions it
recorded (Delta time travel), and the set rebuilt and compared (CONTRACT §13).

:class:`~mdframes.features.panels.pinned.LakeAt` (the lake pinned at fixed table versions, which a training set
also reads through) lives with the sources and is named here too.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...errors import DataValidationError, InvalidParameterError
from ..panels.definitions import by_name
from ..panels.pinned import LakeAt
from ..panels.spec import Feature
from .trainfile import feature_definition

__all__ = ["LakeAt", "features_of", "features_from_info", "pinned", "first_difference", "verified"]


def pinned(source: Any, info: Mapping[str, Any]) -> Any:
    """``source`` at the versions ``info`` recorded, when it is a lake that can time travel
    (``md.Lake``), its coverage as known when they were pinned (``info["pinned_at"]``);
    otherwise ``source`` as it is."""
    from ...lake import Lake

    versions = info.get("versions") or {}
    if isinstance(source, Lake) and any(v is not None for v in versions.values()):
        at = info.get("pinned_at")
        return LakeAt(source, versions, at=None if at is None else pd.Timestamp(at))
    return source


def _function(text: str, feature: str, role: str) -> Any:
    module, _, qualname = text.rpartition(".")
    try:
        target: Any = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError, ValueError):
        target = None
    if not callable(target) or "<" in qualname:
        raise InvalidParameterError(
            f"feature {feature!r}: its {role} function {text} cannot be found again (a lambda "
            "or a function defined in a notebook cell): define it in a module to rebuild or "
            "audit the set from its file",
            parameter="features",
        )
    return target


def _column(value: Any, feature: str, role: str, columns: set[str] | None) -> Any:
    """A definition's column or function: a dotted name that is not a column of the dataset
    is a function (``module.qualname``)."""
    if value is None or not isinstance(value, str) or "." not in value:
        return value
    if columns is not None and value in columns:
        return value
    return _function(value, feature, role)


def features_of(ts: Any) -> list[Feature]:
    """The set's features: those it was made with (in this process), else rebuilt from
    ``info["features"]`` (catalog features by name; custom ones from their definition, their
    functions imported by qualified name)."""
    kept = getattr(ts, "features", None)
    return list(kept) if kept else features_from_info(ts.info)


def features_from_info(info: Mapping[str, Any]) -> list[Feature]:
    out = []
    for name, spec in (info.get("features") or {}).items():
        known = by_name(name)
        if known is not None and feature_definition(known, spec.get("dtype")) == spec:
            out.append(known)
            continue
        out.append(
            Feature(
                name,
                spec["dataset"],
                value=_column(spec.get("value"), name, "value", None),
                window=spec.get("window"),
                agg=spec.get("agg", "sum"),
                where=_column(spec.get("where"), name, "where", None),
                sign=_column(spec.get("sign"), name, "sign", None),
                dtype=spec.get("dtype") if spec.get("dtype") in ("Int64", "float64") else None,
                description=spec.get("description", ""),
            )
        )
    return out


def first_difference(a: Any, b: Any, shown: int = 5) -> str | None:
    """Where set ``a`` first differs from ``b`` (the expected one), in words: the index, the
    columns, or the first ``shown`` differing cells (date, symbol, column, expected, got)
    and how many differ; ``None`` when equal."""
    if not a.X.index.equals(b.X.index):
        return f"the index differs ({len(a.X)} rows against {len(b.X)})"
    if list(a.X.columns) != list(b.X.columns):
        return f"the columns differ ({list(a.X.columns)} against {list(b.X.columns)})"
    pairs = [(name, a.X[name], b.X[name]) for name in a.X.columns]
    pairs += [(str(a.y.name), a.y, b.y), ("t1", a.t1, b.t1)]
    cells: list[str] = []
    total = 0
    for name, left, right in pairs:
        if str(left.dtype) != str(right.dtype):
            return f"{name}: dtype {left.dtype} against {right.dtype}"
        lna, rna = left.isna().to_numpy(), right.isna().to_numpy()
        if left.dtype.kind == "M" or str(left.dtype).startswith("datetime"):
            same = (lna & rna) | (left.to_numpy() == right.to_numpy())
        else:
            lv = left.to_numpy(dtype="float64", na_value=np.nan)
            rv = right.to_numpy(dtype="float64", na_value=np.nan)
            same = (lna & rna) | (lv == rv)
        bad = np.flatnonzero(~same)
        total += len(bad)
        for i in bad[: max(0, shown - len(cells))]:
            date, symbol = a.X.index[i]
            cells.append(f"{date:%Y-%m-%d} {symbol} {name}: expected {right.iloc[i]}, "
                         f"got {left.iloc[i]}")  # fmt: skip
    if not total:
        return None
    counted = "1 cell differs" if total == 1 else f"{total} cells differ, the first"
    return f"{counted}: " + "; ".join(cells)


def verified(ts: Any, again: Any) -> bool:
    """:meth:`TrainingSet.verify`: ``True`` when ``ts`` is ``again``, the set rebuilt from
    its info, and records its rows' hash; else :class:`DataValidationError` naming the
    first differing cells, or the recorded hash that is not its rows'."""
    recorded, own = ts.info.get("content_hash"), ts.content_hash()
    edited = recorded is not None and own != recorded
    cells = first_difference(ts, again)
    if cells is None and again.info["content_hash"] != own:
        cells = "the canonical forms differ"
    if cells is not None:
        also = "; its rows no longer match info['content_hash'] either" if edited else ""
        raise DataValidationError(
            f"the set differs from the one rebuilt from the lake at its recorded versions "
            f"(expected: rebuilt, got: the set's): {cells}{also}"
        )
    if edited:
        raise DataValidationError(
            f"info['content_hash'] ({recorded[:12]}...) is not the hash of the set's rows "
            f"({own[:12]}...), which equal the set rebuilt at its recorded versions: the "
            "recorded hash was edited"
        )
    return True
