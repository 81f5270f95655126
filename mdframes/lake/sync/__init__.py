"""A sync run: the request and its units (``plan``), the modes, the versions, the state, the pacer."""
