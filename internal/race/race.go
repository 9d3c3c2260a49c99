//go:build race

// Package race says whether the race detector is on: measurements that only
// its slowness would spoil (the sentence encoder runs ten times slower under
// it) run in scripts/test's second pass instead, without it.
package race

// Enabled is true when built with -race.
const Enabled = true
