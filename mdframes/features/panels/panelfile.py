"""A panel written as a folder of Parquet files, atomically (CONTRACT §11.1).

As :func:`~.build.write_panel` tells: parts staged under ``_temporary/`` (readers skip names
starting with ``_``), the marker ``_SUCCESS`` last; a killed run so never leaves a truncated
part under a final name, nor a folder that :func:`read_panel` takes for a whole panel.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import pandas as pd

from ..._deps import require
from ...errors import (
    DataQualityWarning,
    DataValidationError,
    InvalidParameterError,
    MdframesError,
    warn,
)
from ...lake.store.storage import checkpoint

__all__ = ["PanelFolder", "read_panel", "write_part", "MARKER"]

MARKER: Final = "_SUCCESS"
STAGING: Final = "_temporary"
_FORMAT: Final = 1
_PART: Final = re.compile(r"part-\d{5}\.parquet")
# What an unfinished run of write_panel may leave: its own names only. Anything else in the
# folder is someone else's, and is never deleted.
_OURS: Final = re.compile(rf"(part-\d{{5}}\.parquet|{STAGING}|{MARKER}\.tmp)")


def filesystem(target: str) -> tuple[Any, str]:
    """The pyarrow filesystem of ``target`` (a URI or a local path) and the path on it."""
    import pyarrow.fs as pafs

    if "://" in target:
        return pafs.FileSystem.from_uri(target)
    return pafs.LocalFileSystem(), target


def _child(target: str, name: str) -> str:
    """``target/name``, the URI's options (``?endpoint_override=...``) kept at the end."""
    base, sep, query = target.partition("?")
    return f"{base.rstrip('/')}/{name}{sep}{query}"


class PanelFolder:
    """The folder (or object-store prefix) ``write_panel`` writes one panel to.

    :meth:`open` checks it and clears what an unfinished run left; the workers write their
    parts to :attr:`staging`; :meth:`commit` moves them into place and writes the marker.
    """

    def __init__(self, text: str, target: str) -> None:
        self.text = text  # as the caller gave it (returned, and named in messages)
        self.target = target
        self.fs, self.base = filesystem(target)
        self.base = self.base.rstrip("/")

    @property
    def staging(self) -> str:
        """Where workers write their parts (a path or URI every worker can open)."""
        return _child(self.target, STAGING)

    @classmethod
    def open(cls, path: Any) -> PanelFolder:
        """``path`` made ready for a new panel: created; refused when it is a file, holds a
        finished panel or anything write_panel did not write; an unfinished run's files
        removed."""
        import pyarrow.fs as pafs

        if not isinstance(path, (str, os.PathLike)):
            raise InvalidParameterError(
                f"path must be a folder or an object-store URI, not {type(path).__name__}",
                parameter="path",
            )
        text = os.fspath(path)
        target = text if "://" in text else os.path.abspath(text)
        try:
            folder = cls(text, target)
            fs, base = folder.fs, folder.base
            info = fs.get_file_info(base)
            if info.type == pafs.FileType.File:
                raise InvalidParameterError(f"{text} is a file, not a folder", parameter="path")
            names = []
            if info.type == pafs.FileType.Directory:
                names = [i.base_name for i in fs.get_file_info(pafs.FileSelector(base))]
            if MARKER in names:
                raise InvalidParameterError(
                    f"{text} already holds files: a finished panel ({MARKER}); give a new or "
                    "empty folder",
                    parameter="path",
                )
            foreign = [n for n in names if not _OURS.fullmatch(n)]
            if foreign:
                raise InvalidParameterError(
                    f"{text} already holds files ({', '.join(sorted(foreign)[:3])}): give a new "
                    "or empty folder",
                    parameter="path",
                )
            for name in names:  # an unfinished run of write_panel: written anew
                entry = f"{base}/{name}"
                if fs.get_file_info(entry).type == pafs.FileType.Directory:
                    fs.delete_dir(entry)
                else:
                    fs.delete_file(entry)
            fs.create_dir(base, recursive=True)
            fs.create_dir(f"{base}/{STAGING}", recursive=True)
        except (OSError, ValueError) as exc:
            if isinstance(exc, InvalidParameterError):
                raise
            raise InvalidParameterError(
                f"cannot write to {text}: {exc}", parameter="path"
            ) from None
        return folder

    def commit(self, marker: dict[str, Any]) -> None:
        """The staged parts moved to their final names, then the marker written: the panel
        is finished only once the marker is there."""
        import pyarrow.fs as pafs

        staged = sorted(
            i.base_name
            for i in self.fs.get_file_info(pafs.FileSelector(f"{self.base}/{STAGING}"))
            if _PART.fullmatch(i.base_name)
        )
        listed = [part["name"] for part in marker["parts"]]
        if staged != listed:
            raise MdframesError(
                f"write_panel to {self.text}: the workers wrote {len(staged)} part files, "
                f"expected {len(listed)}; the folder is left unfinished (run it again)"
            )
        checkpoint("panel-staged")
        for name in staged:
            self.fs.move(f"{self.base}/{STAGING}/{name}", f"{self.base}/{name}")
            checkpoint("panel-part-moved")
        self.fs.delete_dir(f"{self.base}/{STAGING}")
        text = json.dumps(marker).encode()
        with self.fs.open_output_stream(f"{self.base}/{MARKER}.tmp") as out:
            out.write(text)
        checkpoint("panel-marker-staged")
        self.fs.move(f"{self.base}/{MARKER}.tmp", f"{self.base}/{MARKER}")


def write_part(target: str, name: str, table: Any) -> str:
    """``table`` written as the Parquet file ``target/name``; returns the SHA-256 of its bytes.

    The file is made in memory first (a part is compressed: a small fraction of its rows'
    memory), so its digest is taken from the very bytes written, without reading them back
    from a store."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    data = sink.getvalue()
    fs, base = filesystem(target)
    with fs.open_output_stream(f"{base.rstrip('/')}/{name}") as out:
        out.write(data)
    return hashlib.sha256(memoryview(data)).hexdigest()


def marker(
    *,
    symbols: Sequence[str],
    dates: pd.DatetimeIndex,
    features: dict[str, Any],
    chunk: int,
    rows: Sequence[int],
    digests: Sequence[str],
    source: str,
    known_at: Any,
    errors: str,
    attrs: dict[str, Any],
) -> dict[str, Any]:
    """The marker's content: the arguments, the part list (each part's name, row count and
    SHA-256, which :func:`read_panel` checks) and the panel's attrs."""
    from ..._version import __version__
    from ..training.trainfile import encode

    return {
        "format": _FORMAT,
        "symbols": list(symbols),
        "dates": [f"{d:%Y-%m-%d}" for d in dates],
        "features": features,
        "chunk": chunk,
        "parts": [
            {"name": f"part-{k:05d}.parquet", "rows": int(n), "sha256": digest}
            for k, (n, digest) in enumerate(zip(rows, digests, strict=True))
        ],
        "source": source,
        "known_at": known_at.isoformat() if isinstance(known_at, pd.Timestamp) else known_at,
        "errors": errors,
        "attrs": encode(attrs),
        "mdframes": __version__,
        "created_at": pd.Timestamp.now(tz="UTC").isoformat(),
    }


def read_panel(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The panel :func:`~mdframes.features.write_panel` wrote to ``path``, equal to
    :func:`~mdframes.features.panel` with the same arguments (index, order, dtypes, attrs).

    Each part file listed in ``_SUCCESS`` is checked against the SHA-256 and row count
    recorded there when it was written (hashed from the bytes that are then parsed, so each
    file is read once); files not listed there are never read. A folder written by an
    mdframes older than these digests is read as before, its parts unchecked, with a
    :class:`~mdframes.DataQualityWarning` saying so (write it again to have it checked).

    Parameters
    ----------
    path : str or PathLike
        The folder or object-store URI given to ``write_panel``.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    InvalidParameterError
        The folder has no ``_SUCCESS`` marker (an unfinished or interrupted run: run the same
        ``write_panel`` again), or is not a panel folder.
    DataValidationError
        The folder was changed after ``write_panel`` finished: ``_SUCCESS`` is not a marker
        it wrote (unreadable JSON, missing or mistyped keys), or a part is missing, swapped
        with another, replaced or damaged. The message names the file; write the panel again.

    Examples
    --------
    >>> md.features.write_panel("panel/", ["AAPL"], "2026-01-05", "2026-03-31",
    ...                        ["insider_net_value_90d", "news_count_7d"])
    'panel/'
    >>> md.features.read_panel("panel/").columns.tolist()
    ['insider_net_value_90d', 'news_count_7d']
    """
    require("pyarrow", "parquet", "read_panel")
    text = os.fspath(path)
    target = text if "://" in text else os.path.abspath(text)
    fs, base = filesystem(target)
    folder = _Finished(text, fs, base.rstrip("/"))
    meta = folder.marker()
    return folder.panel(meta, [folder.part(part, meta["parts"]) for part in meta["parts"]])


_CHANGED: Final = "the folder was changed after write_panel finished; write the panel again"


class _Finished:
    """A finished panel folder as :func:`read_panel` reads it: every file checked against
    what ``write_panel`` recorded, any mismatch a :class:`DataValidationError` naming it."""

    def __init__(self, text: str, fs: Any, base: str) -> None:
        self.text, self.fs, self.base = text, fs, base

    def damaged(self, name: str, why: str) -> DataValidationError:
        return DataValidationError(f"{self.text}/{name} {why}: {_CHANGED}")

    def marker(self) -> dict[str, Any]:
        """``_SUCCESS``, its keys and types checked (a part's name must be a part name, so a
        marker never sends the reader outside the folder)."""
        try:
            with self.fs.open_input_stream(f"{self.base}/{MARKER}") as stream:
                raw = stream.read()
        except FileNotFoundError:
            raise InvalidParameterError(
                f"{self.text} has no {MARKER} marker: the panel is unfinished (a write_panel "
                "run was interrupted or is still running) or the folder is not a panel; run the "
                "same write_panel again to finish it",
                parameter="path",
            ) from None
        except OSError as exc:
            raise DataValidationError(f"{self.text}/{MARKER} cannot be read: {exc}") from None
        try:
            meta = json.loads(raw)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError both
            raise self.damaged(MARKER, f"is not readable JSON ({exc})") from None
        if not isinstance(meta, dict):
            raise self.damaged(MARKER, "is not a JSON object")
        version = meta.get("format", 0)
        if isinstance(version, int) and version > _FORMAT:
            raise MdframesError(
                f"{self.text} was written in panel format {version}; this mdframes reads "
                f"format {_FORMAT}: upgrade mdframes"
            )
        wrong = [key for key, kind in _KEYS.items() if not isinstance(meta.get(key), kind)]
        if wrong or isinstance(meta["chunk"], bool) or meta["chunk"] < 1:
            what = ", ".join(wrong) or "chunk"
            raise self.damaged(MARKER, f"lacks or garbles what write_panel records ({what})")
        self.check_parts(meta["parts"])
        return meta

    def check_parts(self, parts: list[Any]) -> None:
        """Every entry a part name, a row count and (since digests exist) a SHA-256."""
        for k, part in enumerate(parts):
            if not (
                isinstance(part, dict)
                and isinstance(part.get("name"), str)
                and _PART.fullmatch(part["name"])
                and isinstance(part.get("rows"), int)
                and not isinstance(part["rows"], bool)
                and part["rows"] >= 0
                and (
                    "sha256" not in part
                    or (isinstance(part["sha256"], str) and _SHA256.fullmatch(part["sha256"]))
                )
            ):
                raise self.damaged(MARKER, f"lacks or garbles its entry for part {k}")
        digests = sum("sha256" in part for part in parts)
        if digests and digests < len(parts):
            raise self.damaged(MARKER, "lacks or garbles the SHA-256 of some parts, not all")
        if parts and not digests:
            warn(
                f"{self.text} was written by an mdframes older than part digests: its parts are "
                "read unchecked (a part swapped or replaced by one of the same row count goes "
                "unnoticed); write the panel again to have them checked",
                DataQualityWarning,
            )

    def part(self, part: dict[str, Any], parts: list[dict[str, Any]]) -> Any:
        """One listed part, read once: its bytes hashed, then parsed from memory."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        name = part["name"]
        try:
            with self.fs.open_input_file(f"{self.base}/{name}") as file:
                data = file.read_buffer()
        except FileNotFoundError:
            raise self.damaged(name, f"is missing (listed in {MARKER})") from None
        except OSError as exc:  # a folder in its place, no permission: never a raw error
            raise DataValidationError(f"{self.text}/{name} cannot be read: {exc}") from None
        if "sha256" in part:
            digest = hashlib.sha256(memoryview(data)).hexdigest()
            if digest != part["sha256"]:
                raise self.damaged(name, self.mismatch(digest, len(data), parts))
        try:
            table = pq.read_table(pa.BufferReader(data))
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise self.damaged(name, f"is not a readable Parquet file ({exc})") from None
        if table.num_rows != part["rows"]:
            raise self.damaged(name, f"holds {table.num_rows} rows, {MARKER} says {part['rows']}")
        return table

    @staticmethod
    def mismatch(digest: str, size: int, parts: list[dict[str, Any]]) -> str:
        """Why a part's bytes are not the ones written: another part's (swapped or copied),
        or none the panel holds (replaced or damaged)."""
        for other in parts:
            if other["sha256"] == digest:
                return f"holds the bytes of {other['name']} (parts swapped or copied)"
        return (
            f"is not the file write_panel wrote ({size} bytes whose SHA-256 differs from the "
            f"one in {MARKER}: replaced, truncated or damaged)"
        )

    def panel(self, meta: dict[str, Any], tables: list[Any]) -> pd.DataFrame:
        """The checked parts put in the panel's order, its index and attrs."""
        import pyarrow as pa

        from ..training.trainfile import decode
        from .chunk import index_of

        symbols, chunk, features = meta["symbols"], meta["chunk"], list(meta["features"])
        try:
            dates = pd.DatetimeIndex(pd.to_datetime(meta["dates"]), name="date").as_unit("ns")
            attrs = decode(meta["attrs"])
        except (TypeError, ValueError) as exc:
            raise self.damaged(MARKER, f"lacks or garbles its dates or attrs ({exc})") from None
        for part, table in zip(meta["parts"], tables, strict=True):
            if table.column_names != ["date", "symbol", *features]:
                raise self.damaged(part["name"], f"does not hold the columns {MARKER} lists")
        try:
            frame = pa.concat_tables(tables).to_pandas() if tables else None
        except (pa.ArrowException, ValueError) as exc:
            raise DataValidationError(f"{self.text}: the parts differ in types ({exc})") from None
        if frame is None:
            frame = pd.DataFrame(columns=["date", "symbol", *features])
        index = index_of(dates, symbols)
        order = _order(len(dates), symbols, chunk, len(tables))
        if len(frame) == len(index) == len(order):
            frame = frame.iloc[order]
        if (
            len(frame) != len(index)
            or not (
                frame["date"].to_numpy(dtype="datetime64[ns]")
                == index.get_level_values(0).to_numpy()
            ).all()
        ):
            raise DataValidationError(
                f"{self.text}: the part files do not hold the panel {MARKER} describes; {_CHANGED}"
            )
        frame = frame.drop(columns=["date", "symbol"]).set_axis(index)
        frame.attrs = attrs
        return frame


# What write_panel's marker holds, by type; a marker lacking one was not written by it.
_KEYS: Final[dict[str, type]] = {
    "symbols": list,
    "dates": list,
    "features": dict,
    "chunk": int,
    "parts": list,
    "attrs": dict,
}
_SHA256: Final = re.compile(r"[0-9a-f]{64}")


def _order(n_dates: int, symbols: Sequence[str], chunk: int, n_parts: int) -> Any:
    """Where each row of the concatenated parts goes in the panel.

    Part k holds its symbols' rows, dates outer: row (date j, symbol i of the part) is at
    j * len(part) + i there and at j * len(symbols) + k * chunk + i in the panel."""
    positions, n = [], len(symbols)
    for k in range(n_parts):
        size = len(symbols[k * chunk : (k + 1) * chunk])
        j, i = np.divmod(np.arange(n_dates * size), size)
        positions.append(j * n + k * chunk + i)
    if not positions:
        return np.array([], int)
    return np.argsort(np.concatenate(positions), kind="stable")
