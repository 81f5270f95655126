"""The lake's errors about its own files, in one place: what is damaged and what to do."""

from __future__ import annotations

from typing import Any

from ..errors import LakeDamagedError, MdframesError

__all__ = ["damaged", "write_failed"]


def damaged(ds: str, file: str, why: Any) -> LakeDamagedError:
    """The error for a lake file that is missing or unreadable."""
    return LakeDamagedError(
        f"{ds}: {file} is missing or unreadable ({why}); run lake.repair() "
        "(or `mdframes lake repair`) to drop what is lost and sync it again",
        dataset=ds,
        file=file,
    )


def write_failed(ds: str, exc: Any) -> MdframesError:
    """A write that the storage refused (a full disk, a lost connection), in one line;
    nothing of it is visible."""
    text = " ".join(str(exc).split())
    return MdframesError(
        f"{ds}: cannot write to the lake ({text}); nothing of this write is visible"
    )
