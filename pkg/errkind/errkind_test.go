package errkind_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/errkind"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/state"
)

// Every service's sentinel errors are of the shared kinds, wrapped or not,
// and still themselves.
func TestSentinelsHaveTheirKinds(t *testing.T) {
	for _, c := range []struct {
		err  error
		kind *errkind.Kind
	}{
		{session.ErrInvalidArgument, errkind.InvalidArgument},
		{index.ErrInvalidArgument, errkind.InvalidArgument},
		{artifacts.ErrInvalidArgument, errkind.InvalidArgument},
		{state.ErrInvalidKey, errkind.InvalidArgument},
		{state.ErrInvalidValue, errkind.InvalidArgument},
		{session.ErrNotFound, errkind.NotFound},
		{artifacts.ErrNotFound, errkind.NotFound},
		{facts.ErrNotFound, errkind.NotFound},
		{session.ErrAlreadyExists, errkind.AlreadyExists},
		{session.ErrConflict, errkind.Conflict},
		{artifacts.ErrTooLarge, errkind.TooLarge},
		{session.ErrClosed, errkind.Unavailable},
		{index.ErrStoreUnavailable, errkind.Unavailable},
	} {
		wrapped := fmt.Errorf("while testing: %w", c.err)
		if !errors.Is(wrapped, c.kind) || !errors.Is(wrapped, c.err) {
			t.Errorf("%q: not of kind %q, or not itself", c.err, c.kind)
		}
	}
	if errors.Is(session.ErrNotFound, errkind.InvalidArgument) || errors.Is(artifacts.ErrNotFound, session.ErrNotFound) {
		t.Error("a sentinel matches a kind, or another service's sentinel, that it is not")
	}
	var refused *facts.ValidationError
	if err := fmt.Errorf("x: %w", &facts.ValidationError{Code: "c", Message: "m"}); !errors.Is(err, errkind.InvalidArgument) || !errors.As(err, &refused) {
		t.Error("a facts policy refusal is not an invalid argument")
	}
}
