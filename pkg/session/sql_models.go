package session

// The SQL backend's tables. State is one row per key, so a delta writes only
// the keys it names and concurrent writers of different keys never collide.

type sessionRow struct {
	AppName   string `gorm:"primaryKey;size:128;index:sessions_by_age,priority:1;index:sessions_by_update,priority:1"`
	UserID    string `gorm:"primaryKey;size:128;index:sessions_by_age,priority:2;index:sessions_by_update,priority:2"`
	ID        string `gorm:"primaryKey;size:128;index:sessions_by_age,priority:4;index:sessions_by_update,priority:4"`
	CreatedNs int64  `gorm:"not null;index:sessions_by_age,priority:3"`
	UpdatedNs int64  `gorm:"not null;index:sessions_by_update,priority:3"`
	LastSeq   int64  `gorm:"not null"`
	Title     string `gorm:"size:1024;not null;default:''"` // at most MaxTitleChars characters
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
