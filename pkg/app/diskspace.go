package app

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/hectormem/hector/pkg/config"
)

// minFreeBytes is the free space below which a disk Hector writes to is
// reported full: SQLite, artifacts and the index file would soon fail.
var minFreeBytes uint64 = 1 << 20

// diskFull returns an error when the disk holding path has less than
// minFreeBytes free for this process, nil when it has more or cannot tell.
func diskFull(path string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return nil // not there yet (made on first write) or not a local disk: the writes will say
	}
	if free := uint64(st.Bavail) * uint64(st.Bsize); free < minFreeBytes {
		return fmt.Errorf("the disk holding %s is full (%d bytes free)", path, free)
	}
	return nil
}

// disks are the directories whose disks Hector writes to here: the data
// directory and each SQLite database's.
func disks(cfg *config.Config) map[string]string {
	out := map[string]string{"server.data_dir": cfg.Server.DataDir}
	for name, db := range cfg.Databases {
		if db.Driver == "sqlite" {
			out["databases."+name] = filepath.Dir(db.DSN)
		}
	}
	return out
}
