// Package writelock gives every writer of one SQLite database in the
// process one lock: the session service, facts, artifacts and index
// positions queue for it in Go. SQLite runs one writer at a time anyway,
// and left to itself a writer that finds the database busy polls with
// growing sleeps, so under a steady stream of appends a fact write could
// wait out the busy timeout and fail with "database is locked" (or fail at
// once, when its transaction had read before writing).
package writelock

import (
	"database/sql"
	"sync"

	"gorm.io/gorm"
)

var locks sync.Map // *sql.DB -> *sync.Mutex

// Of returns the write lock of the SQLite database db.
func Of(db *sql.DB) *sync.Mutex {
	m, _ := locks.LoadOrStore(db, new(sync.Mutex))
	return m.(*sync.Mutex)
}

// Hold takes db's write lock when db is SQLite and returns its release;
// PostgreSQL and MySQL take concurrent writers, and Hold takes nothing.
// A writer holds it for one transaction or statement, never while waiting
// for anything but the database.
func Hold(db *gorm.DB) (release func()) {
	if db.Dialector.Name() != "sqlite" {
		return func() {}
	}
	sqlDB, err := db.DB()
	if err != nil { // not a database/sql pool: nothing to share it with
		return func() {}
	}
	m := Of(sqlDB)
	m.Lock()
	return m.Unlock
}

// Forget drops db's lock when db is closed.
func Forget(db *sql.DB) { locks.Delete(db) }
