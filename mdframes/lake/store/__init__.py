"""Where the lake lives and who may write: the root's location, storage, lease and store faults."""
