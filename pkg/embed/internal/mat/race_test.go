//go:build race

package mat

// raceEnabled: the race detector's sync.Pool drops what it is given now
// and then, so buffers kept in one are made again.
const raceEnabled = true
