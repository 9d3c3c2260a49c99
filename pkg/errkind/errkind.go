// Package errkind names the kinds of error that Hector's services share,
// so that a caller (the HTTP server, an SDK user) can tell them apart
// without knowing which service failed: every sentinel error of state,
// session, artifacts, index and facts is of one of these kinds, and
// errors.Is(err, errkind.NotFound) holds for a missing session, artifact
// or fact alike.
package errkind

// Kind is a kind of error. An error of a kind matches it with errors.Is.
type Kind struct{ name string }

func (k *Kind) Error() string { return k.name }

// The kinds.
var (
	// InvalidArgument: the request was wrong; nothing was written.
	InvalidArgument = &Kind{"invalid argument"}
	NotFound        = &Kind{"not found"}
	AlreadyExists   = &Kind{"already exists"}
	// Conflict: what was read has changed since; read it again.
	Conflict = &Kind{"conflict"}
	TooLarge = &Kind{"too large"}
	// Unavailable: a backing store cannot serve now; trying later may work.
	Unavailable = &Kind{"unavailable"}
	// Upstream: a service Hector calls on the caller's behalf (a model)
	// failed or answered an error.
	Upstream = &Kind{"upstream failed"}
)

// New returns a sentinel error of kind k with a message of its own.
func New(k *Kind, message string) error { return &sentinel{k, message} }

type sentinel struct {
	kind    *Kind
	message string
}

func (s *sentinel) Error() string { return s.message }
func (s *sentinel) Unwrap() error { return s.kind }
