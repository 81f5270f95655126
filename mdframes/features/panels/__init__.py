"""The panel wing: features defined, computed point in time per chunk of symbols, from a source."""
