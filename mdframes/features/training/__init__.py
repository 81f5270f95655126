"""The training wing: labels, purged splits, the training set, its file and its replay."""
