"""One dataset's Delta table: the facade ``table.DatasetTable`` and the roles it delegates to."""
