package erase

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hectormem/hector/pkg/errkind"
	"github.com/hectormem/hector/pkg/ident"
)

// ErrInProgress refuses a write to a user while they are being erased: it
// would either be erased a moment later or survive the erasure.
var ErrInProgress = errkind.New(errkind.Conflict, "this user is being erased: writes to them are refused until the erasure is verified")

// Runner runs erasures apart from the requests that ask for them, so that
// a client that stops waiting, a slow store or a refused resume never
// leaves an erasure half-done or stops a server from starting. Receipts
// are the record every replica shares: a user whose receipt is running is
// held, here and on every other replica.
type Runner struct {
	receipts Receipts
	erase    EraseFunc
	logger   *slog.Logger

	mu      sync.Mutex
	runs    map[[2]string]*run
	failing map[[2]string]error // resumes that failed, retried in the background
	retry   time.Duration       // the first wait before retrying a failed resume
	// seen is the users whose erasure the receipts said was running at
	// the last look (Watch), and when that was: a write asks it rather
	// than the database while it is fresh.
	seen   map[[2]string]bool
	seenAt time.Time
	life   context.Context // Watch's
	// ended is when this process's erasures ended: a look begun before
	// then may still see them running, and is not believed about them.
	ended map[[2]string]time.Time
}

// Every replica looks at the running receipts every WatchEvery (Watch),
// and an erasure waits Settle after recording itself before it removes
// anything, so that by then every replica holds the user's writes.
const (
	WatchEvery = 100 * time.Millisecond
	Settle     = 3 * WatchEvery
)

// EraseFunc erases one user, going on from a receipt a stop left running
// when from is not nil (app.Services erases through one).
type EraseFunc func(ctx context.Context, app, user, by string, from *Receipt) (*Receipt, error)

type run struct {
	done    chan struct{}
	receipt *Receipt
	err     error
}

// NewRunner runs erasures with erase, recording them in receipts.
func NewRunner(receipts Receipts, erase EraseFunc, logger *slog.Logger) *Runner {
	return &Runner{receipts: receipts, erase: erase, logger: logger,
		runs: map[[2]string]*run{}, failing: map[[2]string]error{}, ended: map[[2]string]time.Time{}, retry: time.Second}
}

// Erase erases a user and waits up to wait for the receipt. done is false
// when the erasure goes on after that: the receipt is then its progress so
// far, and Latest gives it again until it is done. A second call for a
// user being erased waits for the same erasure.
func (r *Runner) Erase(ctx context.Context, app, user, by string, wait time.Duration) (receipt *Receipt, done bool, err error) {
	// Refused before anything is recorded: a receipt left running for an
	// ID no store takes could never be finished.
	if err := ident.Check("app name", app); err != nil {
		return nil, false, err
	}
	if err := ident.Check("user ID", user); err != nil {
		return nil, false, err
	}
	// An erasure a stop left running is gone on with, not begun again.
	from, err := r.receipts.Latest(ctx, app, user)
	if err != nil {
		return nil, false, err
	}
	if from != nil && from.State != StateRunning {
		from = nil
	}
	rn := r.start(app, user, by, from)
	go r.resumeIfFailed(rn, app, user)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-rn.done:
		if errors.Is(rn.err, ErrNotVerified) { // resumed in the background: follow it
			return rn.receipt, false, nil
		}
		return rn.receipt, true, rn.err
	case <-ctx.Done():
		return nil, false, ctx.Err()
	case <-timer.C:
	}
	latest, err := r.receipts.Latest(ctx, app, user)
	if err != nil || latest == nil || latest.State != StateRunning {
		// Not recorded yet, or done in between: the receipt to show is
		// the one the erasure ends with.
		select {
		case <-rn.done:
			if !errors.Is(rn.err, ErrNotVerified) {
				return rn.receipt, true, rn.err
			}
		default:
		}
		latest = &Receipt{AppName: app, UserID: user, By: by, State: StateRunning}
	}
	return latest, false, nil
}

// start runs an erasure of the user unless one is running in this process,
// which it returns instead.
func (r *Runner) start(app, user, by string, from *Receipt) *run {
	key := [2]string{app, user}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rn := r.runs[key]; rn != nil {
		return rn
	}
	rn := &run{done: make(chan struct{})}
	r.runs[key] = rn
	go func() {
		defer close(rn.done)
		rn.receipt, rn.err = r.erase(context.Background(), app, user, by, from)
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.runs, key)
		delete(r.seen, key) // ended here: writes go on at once
		r.ended[key] = time.Now()
		if rn.err != nil {
			r.logger.Error("erase: the erasure failed; it is resumed in the background", "app", app, "error", rn.err)
		}
	}()
	return rn
}

// Held refuses with ErrInProgress a write to a user whose erasure runs,
// here or on another replica.
func (r *Runner) Held(ctx context.Context, app, user string) error {
	key := [2]string{app, user}
	r.mu.Lock()
	_, here := r.runs[key]
	seen, fresh := r.seen[key], time.Since(r.seenAt) < 2*WatchEvery
	r.mu.Unlock()
	if here || fresh && seen {
		return ErrInProgress
	}
	if fresh {
		return nil
	}
	// Nobody watches, or the last look failed: ask the receipts.
	latest, err := r.receipts.Latest(ctx, app, user)
	if err != nil {
		return err
	}
	if latest != nil && latest.State == StateRunning {
		return ErrInProgress
	}
	return nil
}

// Watch looks at the running receipts every WatchEvery until ctx ends,
// so that Held answers from memory. A look that fails leaves the view to
// go stale, and Held asks the receipts itself.
func (r *Runner) Watch(ctx context.Context) {
	r.mu.Lock()
	r.life = ctx // failed erasures are resumed until it ends
	r.mu.Unlock()
	tick := time.NewTicker(WatchEvery)
	defer tick.Stop()
	for {
		began := time.Now()
		if running, err := r.receipts.Running(ctx); err == nil {
			seen := make(map[[2]string]bool, len(running))
			for _, rec := range running {
				seen[[2]string{rec.AppName, rec.UserID}] = true
			}
			r.mu.Lock()
			for key, at := range r.ended {
				if at.After(began) {
					delete(seen, key) // it ended here after this look began
				} else if began.Sub(at) > time.Minute {
					delete(r.ended, key)
				}
			}
			r.seen, r.seenAt = seen, time.Now()
			r.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// resumeIfFailed resumes an erasure that failed (a store that did not
// answer, or writes it could not get ahead of) until it is done: an
// erasure asked for is never left half-done until someone asks again.
func (r *Runner) resumeIfFailed(rn *run, app, user string) {
	<-rn.done
	if rn.err == nil {
		return
	}
	r.mu.Lock()
	life := r.life
	r.mu.Unlock()
	if life == nil || life.Err() != nil {
		return // not watching: Resume at the next start finishes it
	}
	if latest, err := r.receipts.Latest(life, app, user); err == nil && latest != nil && latest.State == StateRunning {
		r.resume(life, latest)
	}
}

// Resume finishes, in the background, the erasures a stop left running.
// One that fails is logged, reported by Failing and tried again, waiting
// longer each time (up to a minute), until ctx ends: it never keeps a
// server from starting.
func (r *Runner) Resume(ctx context.Context) error {
	running, err := r.receipts.Running(ctx)
	if err != nil {
		return fmt.Errorf("reading erasure receipts: %w", err)
	}
	for _, rec := range running {
		go r.resume(ctx, rec)
	}
	return nil
}

func (r *Runner) resume(ctx context.Context, rec *Receipt) {
	key := [2]string{rec.AppName, rec.UserID}
	wait := r.retry
	for {
		r.logger.Info("erase: resuming an erasure left half-done", "app", rec.AppName, "user", rec.UserID)
		rn := r.start(rec.AppName, rec.UserID, rec.By, rec)
		<-rn.done
		r.mu.Lock()
		if rn.err == nil || ctx.Err() != nil {
			delete(r.failing, key)
			r.mu.Unlock()
			return
		}
		r.failing[key] = rn.err
		r.mu.Unlock()
		r.logger.Error("erase: finishing an erasure failed; trying again", "app", rec.AppName, "user", rec.UserID, "in", wait, "error", rn.err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Minute)
		if latest, err := r.receipts.Latest(ctx, rec.AppName, rec.UserID); err == nil && latest != nil {
			if latest.State != StateRunning { // finished meanwhile, by another replica
				r.mu.Lock()
				delete(r.failing, key)
				r.mu.Unlock()
				return
			}
			rec = latest
		}
	}
}

// Failing is an error naming the erasures whose resume failed so far, nil
// when none did: for readiness, which reports it.
func (r *Runner) Failing() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.failing) == 0 {
		return nil
	}
	var errs []error
	for _, key := range slices.SortedFunc(maps.Keys(r.failing), func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	}) {
		errs = append(errs, fmt.Errorf("erasing %q of app %q: %w", key[1], key[0], r.failing[key]))
	}
	return fmt.Errorf("%d erasures could not be finished yet, retried in the background: %w", len(errs), errors.Join(errs...))
}

// Wait waits until no erasure runs in this process: for a command that
// exits once its work is done.
func (r *Runner) Wait() {
	for {
		r.mu.Lock()
		var rn *run
		for _, rn = range r.runs {
			break
		}
		r.mu.Unlock()
		if rn == nil {
			return
		}
		<-rn.done
	}
}
