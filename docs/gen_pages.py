"""mkdocs-gen-files script: write the registry-generated pages into the site at build time.

The dataset pages, the cache-lifetime table and the CLI help come from ``mdframes.docgen``
(and so from the registry and the CLI parser); nothing generated is committed, so the docs
cannot drift from the code.
"""

import mkdocs_gen_files

from mdframes import docgen

for path, text in docgen.pages().items():
    with mkdocs_gen_files.open(path, "w") as fh:
        fh.write(text)

for page in docgen.FILLS:
    with mkdocs_gen_files.open(page, "r") as fh:
        text = fh.read()
    with mkdocs_gen_files.open(page, "w") as fh:
        fh.write(docgen.fill(page, text))

# The features page: hand-written rules around the table generated from the catalog.
from mdframes.features import docs as feature_docs  # noqa: E402

with mkdocs_gen_files.open("features.md", "r") as fh:
    text = fh.read()
with mkdocs_gen_files.open("features.md", "w") as fh:
    fh.write(feature_docs.fill(text))
