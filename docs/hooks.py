"""mkdocs hooks (``hooks:`` in mkdocs.yml).

The literate-nav plugin builds the "Datasets" section of the navigation from the generated
``datasets/SUMMARY.md``, but mkdocs would also publish that file as a page of its own (a
stray "SUMMARY" page). Once the plugin has read it, it is excluded from the site.
"""

from __future__ import annotations

from typing import Any

from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files, InclusionLevel


@event_priority(-200)  # after literate-nav (-100), which reads the file in its on_files
def on_files(files: Files, config: Any) -> Files:
    for file in files:
        if file.src_uri.rsplit("/", 1)[-1] == "SUMMARY.md":
            file.inclusion = InclusionLevel.EXCLUDED
    return files
