package session

import "github.com/hectormem/hector/pkg/state"

// DefaultMaxEventBytes bounds the stored JSON of one event when no other limit is set.
const DefaultMaxEventBytes = 1 << 20

// Option configures a Service.
type Option func(*limits)

type limits struct {
	maxEventBytes int
	maxValueBytes int
}

// WithMaxEventBytes bounds the stored size of one event (message, actions and metadata as JSON).
func WithMaxEventBytes(n int) Option { return func(l *limits) { l.maxEventBytes = n } }

// WithMaxValueBytes bounds the JSON size of one state value.
func WithMaxValueBytes(n int) Option { return func(l *limits) { l.maxValueBytes = n } }

func newLimits(opts []Option) limits {
	l := limits{maxEventBytes: DefaultMaxEventBytes, maxValueBytes: state.DefaultMaxValueBytes}
	for _, o := range opts {
		o(&l)
	}
	return l
}
