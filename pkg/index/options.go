package index

import (
	"log/slog"

	"github.com/hectormem/hector/pkg/session"
)

// Option configures an index.
type Option func(*options)

type options struct {
	include    Include
	file       string // where an index in process is kept; "" for nowhere
	onDisk     bool   // in the file (WithFile), not a snapshot of memory (WithSnapshot)
	sessions   session.Service
	logger     *slog.Logger
	progress   func(Progress)
	stem       bool
	chromem    bool
	background bool
	vectorLag  int64
	vectorsAt  Position
	fusion     *Fusion
}

// WithInclude chooses which events are indexed (default: the text of every message, not tool results nor summaries).
func WithInclude(x Include) Option { return func(o *options) { o.include = x } }

// WithFile keeps an index in process on disk, in an SQLite file at path
// (made when missing): its documents, terms and vectors, partitioned by
// (app, user) and read through the page cache, with how far along the
// change feed it is. The heap holds only the last second's new documents,
// until they are written to the file, so the index grows with the disk,
// and Start opens the file rather than reading it. A damaged file
// is set aside (path + ".damaged"), logged, and the index starts empty, to
// be filled from the change feed. It cannot be combined with WithChromem,
// whose collections live in memory. The last of WithFile and WithSnapshot
// given applies.
func WithFile(path string) Option { return func(o *options) { o.file, o.onDisk = path, true } }

// WithSnapshot persists an index held in memory to a snapshot file at
// path, with how far along the change feed it is: loaded by Start, written
// by Close and by every full Rebuild. A missing or damaged snapshot is
// logged and the index starts empty, to be filled from the change feed.
// The whole index is on the heap and read at start; WithFile keeps it on
// disk instead.
func WithSnapshot(path string) Option { return func(o *options) { o.file, o.onDisk = path, false } }

// WithSessions names the session service whose change feed the index
// follows. Start (in process) and CatchUp apply the feed; Index, in the
// process that leads the feed, catches up to the session's newest event,
// so a handle loaded with only recent events leaves nothing out; deleted
// sessions leave the index as the feed records their deletion.
func WithSessions(s session.Service) Option { return func(o *options) { o.sessions = s } }

// WithLogger sets where the index logs (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithProgress reports a rebuild's progress to fn, from the rebuilding goroutine.
func WithProgress(fn func(Progress)) Option { return func(o *options) { o.progress = fn } }

// WithStemming(false) turns off what is on by default, as it is in the
// server: English words reduced to their stems in the keyword index (and
// common English stop words dropped), so "running" finds "runs".
func WithStemming(on bool) Option { return func(o *options) { o.stem = on } }

// WithChromem keeps a vector or hybrid index's vectors in chromem-go
// collections, in memory and persisted by the index's snapshot, instead of
// the flat store. Both are exact; the flat store, the default, is faster
// (BenchmarkVectorStores). An index saved with one must be rebuilt to use
// the other.
func WithChromem() Option { return func(o *options) { o.chromem = true } }

// WithBackgroundVectors embeds a hybrid index's documents after they are
// written, in the process that follows the change feed, so that an append
// does not wait on a slow embedder: each document is written with its
// keyword terms at once (a search finds it by its words right away) and
// gets its vector shortly after. An append through that process waits only
// when vectors lag more than maxLag changes behind (DefaultVectorLag when
// 0). It needs
// WithSessions (the feed is how the embedding resumes after a restart);
// without it, or for another kind of index, documents are embedded as they
// are written.
func WithBackgroundVectors(maxLag int) Option {
	return func(o *options) {
		o.background = true
		o.vectorLag = int64(maxLag)
		if maxLag <= 0 {
			o.vectorLag = DefaultVectorLag
		}
	}
}

// WithVectorPosition keeps how far along the change feed an external
// index's background vectors are (NewInMemoryPosition when not given; an
// index in process keeps it in its snapshot). Its lease is not used: the
// process that leads the index's own position embeds.
func WithVectorPosition(p Position) Option { return func(o *options) { o.vectorsAt = p } }

// WithFusion sets how a hybrid search weighs its signals: the vector's
// share of the score and the similarity under which a result found only
// by its vector is left out. Without it an index takes the embedder's own
// weight (embed.VectorWeight, else DefaultVectorWeight) and floor
// (embed.SimilarityFloor), chosen on public benchmarks; it is for
// measuring others.
func WithFusion(f Fusion) Option { return func(o *options) { o.fusion = &f } }

// log is where the index logs.
func (o options) log() *slog.Logger {
	if o.logger != nil {
		return o.logger
	}
	return slog.Default()
}

func newOptions(opts []Option) options {
	o := options{stem: true} // as the server's configuration has it, so the SDK ranks alike
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
