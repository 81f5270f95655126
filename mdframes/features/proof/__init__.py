"""The proof wing: a training set audited for look-ahead and leaks, and revisions measured."""
