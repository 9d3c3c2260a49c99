package session

import (
	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// longText is a text column of any length: MySQL's TEXT holds only 64 KiB.
type longText string

func (longText) GormDBDataType(db *gorm.DB, field *schema.Field) string {
	if db.Dialector.Name() == "mysql" {
		return "LONGTEXT"
	}
	return "TEXT"
}
