"""A sync run: the requests (``plan``), the modes, the versions, the state, the pacer."""
