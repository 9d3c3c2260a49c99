package userarchive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/hectormem/hector/internal/writelock"
	"github.com/hectormem/hector/pkg/errkind"
)

// ErrImportRunning refuses an import into a user another import is
// writing: the user would hold both archives mixed.
var ErrImportRunning = errkind.New(errkind.Conflict, "an import into this user is under way")

// Import is the record of an import under way. A stop leaves it behind,
// and the next start undoes what it wrote (see Unfinished).
type Import struct {
	AppName, UserID, By string
	// Process names the process writing it (see Services.Process): where
	// it runs, then after a "#" which of that place's runs it is.
	Process string
	// Writing: it found the user empty and may have written; before,
	// it has written nothing, and undoing it is forgetting the record.
	Writing bool
	// Beat is when the import last said it was alive (every ImportBeat).
	Beat time.Time
}

// ImportBeat is how often an import under way renews its record; one not
// renewed for StaleAfter has stopped, whichever process ran it.
const (
	ImportBeat = 2 * time.Second
	StaleAfter = 3 * ImportBeat
)

// Imports keeps the records of imports under way, one a user at most.
type Imports interface {
	// Claim records an import into the user, or refuses with
	// ErrImportRunning when one is recorded.
	Claim(ctx context.Context, im Import) error
	// Beat renews the user's record (its Writing, and the time).
	Beat(ctx context.Context, im Import) error
	// Release forgets the user's record: the import is done, or undone.
	Release(ctx context.Context, appName, userID string) error
	// Unfinished lists the records there are.
	Unfinished(ctx context.Context) ([]Import, error)
}

// NewInMemoryImports keeps the records in the process.
func NewInMemoryImports() Imports { return &memoryImports{m: map[[2]string]Import{}} }

type memoryImports struct {
	mu sync.Mutex
	m  map[[2]string]Import
}

func (m *memoryImports) Claim(_ context.Context, im Import) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := [2]string{im.AppName, im.UserID}
	if _, ok := m.m[key]; ok {
		return ErrImportRunning
	}
	m.m[key] = im
	return nil
}

func (m *memoryImports) Beat(_ context.Context, im Import) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[[2]string{im.AppName, im.UserID}] = im
	return nil
}

func (m *memoryImports) Release(_ context.Context, appName, userID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, [2]string{appName, userID})
	return nil
}

func (m *memoryImports) Unfinished(context.Context) ([]Import, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Import
	for _, im := range m.m {
		out = append(out, im)
	}
	return out, nil
}

// importRow is an import under way, in the sessions' database.
type importRow struct {
	AppName string `gorm:"primaryKey;size:128"`
	UserID  string `gorm:"primaryKey;size:128"`
	By      string `gorm:"size:128;not null"`
	Process string `gorm:"size:512;not null"`
	Writing bool   `gorm:"not null"`
	BeatNs  int64  `gorm:"not null"`
}

func (importRow) TableName() string { return "user_imports" }

func (r importRow) record() Import {
	return Import{AppName: r.AppName, UserID: r.UserID, By: r.By, Process: r.Process, Writing: r.Writing, Beat: time.Unix(0, r.BeatNs).UTC()}
}

func rowOf(im Import) *importRow {
	return &importRow{AppName: im.AppName, UserID: im.UserID, By: im.By, Process: im.Process, Writing: im.Writing, BeatNs: im.Beat.UnixNano()}
}

// NewSQLImports keeps the records in db (the sessions' database), where
// every replica sees them.
func NewSQLImports(db *gorm.DB) (Imports, error) {
	if err := db.AutoMigrate(&importRow{}); err != nil {
		return nil, err
	}
	return &sqlImports{db}, nil
}

type sqlImports struct{ db *gorm.DB }

func (q *sqlImports) Claim(ctx context.Context, im Import) error {
	defer writelock.Hold(q.db)()
	res := q.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(rowOf(im))
	switch {
	case res.Error != nil:
		return res.Error
	case res.RowsAffected == 0:
		return ErrImportRunning
	}
	return nil
}

func (q *sqlImports) Beat(ctx context.Context, im Import) error {
	defer writelock.Hold(q.db)()
	return q.db.WithContext(ctx).Model(&importRow{}).Where("app_name = ? AND user_id = ?", im.AppName, im.UserID).
		Updates(map[string]any{"writing": im.Writing, "beat_ns": im.Beat.UnixNano()}).Error
}

func (q *sqlImports) Release(ctx context.Context, appName, userID string) error {
	defer writelock.Hold(q.db)()
	err := q.db.WithContext(ctx).Where("app_name = ? AND user_id = ?", appName, userID).Delete(&importRow{}).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil
	}
	return err
}

func (q *sqlImports) Unfinished(ctx context.Context) ([]Import, error) {
	var rows []importRow
	if err := q.db.WithContext(ctx).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]Import, len(rows))
	for i, r := range rows {
		out[i] = r.record()
	}
	return out, nil
}

// Undoer undoes the imports a stop cut short, in the background.
type Undoer struct {
	imports Imports
	forget  func(ctx context.Context, appName, userID string) error
	logger  *slog.Logger
	done    chan struct{}

	mu      sync.Mutex
	undoing map[[2]string]error // nil while under way, else why it failed so far
}

// RunOf names a run of the process at place (its host and data
// directory, which a restart keeps) in the records of its imports.
func RunOf(place, run string) string { return place + "#" + run }

// placeOf is where the process named process runs: an earlier run of the
// same place has stopped, as only one process at a time uses a data
// directory. A name without a run (written before runs were named) is
// all place.
func placeOf(process string) string {
	place, _, _ := strings.Cut(process, "#")
	return place
}

// UndoUnfinished starts undoing, until ctx ends, every import recorded in
// imports that has stopped: one that found its user empty is undone by
// forget (an erasure), one that had not is forgotten. The imports of an
// earlier run of this process's place (process, named by RunOf) stopped
// with that run, and are undone at once, and Pending names them until
// they are; another place's stopped when it no longer renews its record
// (StaleAfter): a live import on another replica is waited for, not
// undone. An import of this run is never undone: it is alive, or has
// answered.
func UndoUnfinished(ctx context.Context, imports Imports, process string, forget func(ctx context.Context, appName, userID string) error,
	logger *slog.Logger) (*Undoer, error) {
	u := &Undoer{imports: imports, forget: forget, logger: logger, done: make(chan struct{}), undoing: map[[2]string]error{}}
	records, err := imports.Unfinished(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the records of imports under way: %w", err)
	}
	for _, im := range records {
		if im.Process != process && placeOf(im.Process) == placeOf(process) {
			u.undoing[[2]string{im.AppName, im.UserID}] = nil
		}
	}
	go u.run(ctx, process, records)
	return u, nil
}

// Quiet waits until no live import writes into the user: one of this run
// (process, named by RunOf), or another place's still renewing its
// record. An erasure waits for it, having held the user's writes first,
// so that no import begun before goes on writing under it. A record a
// stop left is the undoer's, not waited for.
func Quiet(ctx context.Context, imports Imports, process, appName, userID string, logger *slog.Logger) error {
	for waited := false; ; waited = true {
		records, err := imports.Unfinished(ctx)
		if err != nil {
			return fmt.Errorf("reading the records of imports under way: %w", err)
		}
		live := slices.ContainsFunc(records, func(im Import) bool {
			return im.AppName == appName && im.UserID == userID &&
				(im.Process == process || placeOf(im.Process) != placeOf(process) && time.Since(im.Beat) < StaleAfter)
		})
		if !live {
			return nil
		}
		if !waited {
			logger.Info("erase: waiting for the import into the user under way to end", "app", appName, "user", userID)
		}
		if !sleep(ctx, quietEvery) {
			return ctx.Err()
		}
	}
}

// quietEvery is how often Quiet looks again.
const quietEvery = 50 * time.Millisecond

// Done is closed once no import is left to undo (or ctx ended).
func (u *Undoer) Done() <-chan struct{} { return u.done }

func (u *Undoer) run(ctx context.Context, process string, records []Import) {
	defer close(u.done)
	for pass := 0; ; pass++ {
		records = slices.DeleteFunc(records, func(im Import) bool { return im.Process == process })
		if len(records) == 0 {
			if pass > 0 {
				u.logger.Info("import: no import a stop cut short is left to undo")
			}
			return
		}
		var wait time.Duration // 0: read the records again at once
		later := func(d time.Duration) {
			if wait == 0 || d < wait {
				wait = d
			}
		}
		for _, im := range records {
			if age := time.Since(im.Beat); placeOf(im.Process) != placeOf(process) && age < StaleAfter {
				later(StaleAfter - age) // alive, or not yet known to have stopped
				continue
			}
			if !u.undo(ctx, im) {
				later(StaleAfter)
			}
		}
		for {
			if !sleep(ctx, wait) {
				return
			}
			var err error
			if records, err = u.imports.Unfinished(ctx); err == nil {
				break
			}
			u.logger.Error("import: reading the records of imports under way failed; trying again", "error", err)
			wait = StaleAfter
		}
	}
}

// sleep waits for d, and says whether ctx is still going.
func sleep(ctx context.Context, d time.Duration) bool {
	if d > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	return ctx.Err() == nil
}

// undo undoes one import that stopped, and says whether it is undone.
func (u *Undoer) undo(ctx context.Context, im Import) bool {
	key := [2]string{im.AppName, im.UserID}
	u.mu.Lock()
	u.undoing[key] = nil
	u.mu.Unlock()
	var err error
	if im.Writing {
		u.logger.Warn("import: undoing an import a stop cut short", "app", im.AppName, "user", im.UserID, "by", im.By)
		err = u.forget(ctx, im.AppName, im.UserID)
	}
	if err == nil {
		err = u.imports.Release(ctx, im.AppName, im.UserID)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if err != nil {
		u.logger.Error("import: undoing an import a stop cut short failed; trying again", "app", im.AppName, "user", im.UserID, "error", err)
		u.undoing[key] = err
		return false
	}
	if im.Writing {
		u.logger.Info("import: undone; the user holds nothing, import the archive again", "app", im.AppName, "user", im.UserID)
	}
	delete(u.undoing, key)
	return true
}

// Pending says which imports a stop cut short are still being undone
// (their users hold part of an archive meanwhile), nil when none is: for
// readiness.
func (u *Undoer) Pending() error {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	var errs []error
	for key, err := range u.undoing {
		why := "under way"
		if err != nil {
			why = "failed so far: " + err.Error()
		}
		errs = append(errs, fmt.Errorf("user %q of app %q holds part of an import a stop cut short, being undone: %s", key[1], key[0], why))
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}
