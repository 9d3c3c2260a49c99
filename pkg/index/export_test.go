package index

// SnapshotPathOf returns the path a list of options persists to, if any:
// tests that share a store across reopenings need it.
func SnapshotPathOf(opts ...Option) string { return newOptions(opts).snapshotPath }
