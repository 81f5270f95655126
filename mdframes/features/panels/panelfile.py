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
from ...errors import InvalidParameterError, MdframesError
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

    Examples
    --------
    >>> md.features.write_panel("panel/", ["AAPL"], "2026-01-05", "2026-03-31",
    ...                        ["insider_net_value_90d", "news_count_7d"])
    'panel/'
    >>> md.features.read_panel("panel/").columns.tolist()
    ['insider_net_value_90d', 'news_count_7d']
    """
    pa = require("pyarrow", "parquet", "read_panel")
    import pyarrow.parquet as pq

    from ..training.trainfile import decode
    from .chunk import index_of

    text = os.fspath(path)
    target = text if "://" in text else os.path.abspath(text)
    fs, base = filesystem(target)
    base = base.rstrip("/")
    try:
        with fs.open_input_stream(f"{base}/{MARKER}") as stream:
            meta = json.loads(stream.read())
    except FileNotFoundError:
        raise InvalidParameterError(
            f"{text} has no {MARKER} marker: the panel is unfinished (a write_panel run was "
            "interrupted or is still running) or the folder is not a panel; run the same "
            "write_panel again to finish it",
            parameter="path",
        ) from None
    if meta.get("format", 0) > _FORMAT:
        raise MdframesError(
            f"{text} was written in panel format {meta['format']}; this mdframes reads format "
            f"{_FORMAT}: upgrade mdframes"
        )
    symbols, chunk = meta["symbols"], meta["chunk"]
    dates = pd.DatetimeIndex(pd.to_datetime(meta["dates"]), name="date").as_unit("ns")
    tables = []
    for part in meta["parts"]:
        table = pq.read_table(f"{base}/{part['name']}", filesystem=fs)
        if table.num_rows != part["rows"]:
            raise MdframesError(
                f"{text}/{part['name']} holds {table.num_rows} rows, its marker says "
                f"{part['rows']}: the folder was changed after write_panel finished"
            )
        tables.append(table)
    if tables:
        frame = pa.concat_tables(tables).to_pandas()
    else:
        frame = pd.DataFrame(columns=["date", "symbol", *meta["features"]])
    # Part k holds its symbols' rows, dates outer: row (date j, symbol i of the part) is at
    # j * len(part) + i there and at j * len(symbols) + k * chunk + i in the panel.
    positions, n = [], len(symbols)
    for k in range(len(tables)):
        size = len(symbols[k * chunk : (k + 1) * chunk])
        j, i = np.divmod(np.arange(len(dates) * size), size)
        positions.append(j * n + k * chunk + i)
    order = np.argsort(np.concatenate(positions), kind="stable") if positions else np.array([], int)
    frame = frame.iloc[order].reset_index(drop=True)
    index = index_of(dates, symbols)
    if (
        len(frame) != len(index)
        or not (
            frame["date"].to_numpy(dtype="datetime64[ns]") == index.get_level_values(0).to_numpy()
        ).all()
    ):
        raise MdframesError(f"{text}: the part files do not hold the panel its marker describes")
    frame = frame.drop(columns=["date", "symbol"]).set_axis(index)
    frame.attrs = decode(meta["attrs"])
    return frame
