package session

// The SQL backend's tables. State is one row per key, so a delta writes only
// the keys it names and concurrent writers of different keys never collide.

// sessionRow is a session. Every append rewrites it (its sequence number,
// update time and time order), so it has as few indexes as List needs: by
// creation. Listing by update sorts a user's sessions instead, which keeps
// an index's page out of every append.
type sessionRow struct {
	AppName   string `gorm:"primaryKey;size:128;index:sessions_by_age,priority:1"`
	UserID    string `gorm:"primaryKey;size:128;index:sessions_by_age,priority:2"`
	ID        string `gorm:"primaryKey;size:128;index:sessions_by_age,priority:4"`
	CreatedNs int64  `gorm:"not null;index:sessions_by_age,priority:3"`
	UpdatedNs int64  `gorm:"not null"`
	LastSeq   int64  `gorm:"not null"`
	Title     string `gorm:"size:1024;not null;default:''"` // at most MaxTitleChars characters
	// LastEventNs is the latest event timestamp stored (noEventNs before the
	// first), and EventsInOrder whether the events' timestamps never go back
	// as their sequence numbers go up: Get's After then finds the events
	// it asks for by walking back from the newest (see afterClause), with
	// no index on the events' times to keep up on every append.
	LastEventNs   int64 `gorm:"not null;default:0"`
	EventsInOrder bool  `gorm:"not null;default:false"`
}

func (sessionRow) TableName() string { return "sessions" }

type appStateRow struct {
	AppName  string   `gorm:"primaryKey;size:128"`
	StateKey string   `gorm:"primaryKey;size:256"`
	Value    longText `gorm:"not null"`
}

func (appStateRow) TableName() string { return "app_states" }

type userStateRow struct {
	AppName  string   `gorm:"primaryKey;size:128"`
	UserID   string   `gorm:"primaryKey;size:128"`
	StateKey string   `gorm:"primaryKey;size:256"`
	Value    longText `gorm:"not null"`
}

func (userStateRow) TableName() string { return "user_states" }

type sessionStateRow struct {
	AppName   string   `gorm:"primaryKey;size:128"`
	UserID    string   `gorm:"primaryKey;size:128"`
	SessionID string   `gorm:"primaryKey;size:128"`
	StateKey  string   `gorm:"primaryKey;size:256"`
	Value     longText `gorm:"not null"`
}

func (sessionStateRow) TableName() string { return "session_states" }

// tombstoneRow records a deleted session in the change feed.
type tombstoneRow struct {
	Cursor    int64  `gorm:"column:feed_cursor;primaryKey;autoIncrement:false"`
	AppName   string `gorm:"size:128;not null"`
	UserID    string `gorm:"size:128;not null"`
	SessionID string `gorm:"size:128;not null"`
}

func (tombstoneRow) TableName() string { return "session_tombstones" }

// feedHeadRow is the single row holding the last cursor handed out on
// MySQL (see insertWithCursor). PostgreSQL took its cursors from it before
// it took them from a sequence, which starts past it.
type feedHeadRow struct {
	ID         int   `gorm:"primaryKey;autoIncrement:false"`
	LastCursor int64 `gorm:"not null"`
}

func (feedHeadRow) TableName() string { return "change_feed_head" }
