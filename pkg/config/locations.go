package config

import (
	"fmt"
	mysqldriver "github.com/go-sql-driver/mysql"
	"os"
	"path/filepath"
	"slices"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/index"
)

// Location is where one part of Hector keeps its data.
type Location struct{ What, Where string }

// Locations says where each store keeps its data, paths made absolute and
// passwords left out: what `hector serve` prints at start-up, so a path
// that is not where the operator meant it shows at once.
func (c *Config) Locations() []Location {
	s := c.Server
	var out []Location
	add := func(what, format string, args ...any) {
		out = append(out, Location{what, fmt.Sprintf(format, args...)})
	}

	add("data directory", "%s", abs(s.DataDir))
	if s.Sessions.Backend == "inmemory" {
		add("sessions", "memory (lost at exit)")
	} else {
		add("sessions", "%s", c.describeDatabase(s.Sessions.Database))
	}
	switch s.Artifacts.Backend {
	case "inmemory":
		add("artifacts", "memory (lost at exit)")
	case "sql":
		add("artifacts", "%s", c.describeDatabase(s.Artifacts.Database))
	default:
		add("artifacts", "%s", abs(s.Artifacts.Dir))
	}
	if s.Facts.Backend == "sql" {
		add("facts", "%s", c.describeDatabase(s.Facts.Database))
	} else {
		add("facts", "memory (lost at exit)")
	}
	if os.Getenv(facts.KeyEnv) != "" {
		add("facts key", "$%s", facts.KeyEnv)
	} else {
		add("facts key", "%s", abs(facts.KeyPath(s.DataDir)))
	}
	idx := string(s.Index.Type)
	if s.Index.Type != index.KindKeyword {
		e := c.Embedders[s.Index.Embedder]
		idx += " (embedder " + s.Index.Embedder
		if e.Type == "builtin" && e.Model != s.Index.Embedder {
			idx += ": " + e.Model
		}
		if s.Index.Vectors == "background" {
			idx += ", vectors in the background"
		}
		idx += ")"
	}
	switch {
	case s.Index.External():
		idx += ", " + indexStores[s.Index.Store].describe(s.Index)
	case *s.Index.Persist:
		idx += ", kept in " + abs(c.IndexFile())
	default:
		idx += ", in memory (rebuilt from the sessions at start)"
	}
	add("index", "%s", idx)
	return out
}

// LocalState lists what this configuration keeps in the data directory
// alone: while there is any, one process at a time may use the directory.
// A replica whose stores are all shared (databases on a server, the index
// in an external engine) keeps none and needs no lock.
func (c *Config) LocalState() []string {
	s := c.Server
	var out []string
	for _, use := range []struct{ backend, database string }{
		{s.Sessions.Backend, s.Sessions.Database}, {s.Artifacts.Backend, s.Artifacts.Database}, {s.Facts.Backend, s.Facts.Database},
	} {
		if d := c.Databases[use.database]; use.backend == "sql" && d.Driver == "sqlite" && !slices.Contains(out, "the SQLite database") {
			out = append(out, "the SQLite database")
		}
	}
	if s.Artifacts.Backend == "filesystem" {
		out = append(out, "the artifacts directory")
	}
	if *s.Index.Persist && !s.Index.External() {
		out = append(out, "the index file")
	}
	return out
}

// IndexFile is where the in-process index is kept: an SQLite file read
// through the page cache, or, for chromem-go's collections, which live in
// memory, a snapshot of them.
func (c *Config) IndexFile() string {
	return filepath.Join(c.Server.DataDir, "index", string(c.Server.Index.Type)+indexSuffix(c.Server.Index.Store))
}

// IndexFormerFiles are where an index in process of another type or form
// (snapshot or file) would be: a copy of users' words that nothing keeps
// up to date once the configuration changes, not even an erasure, so they
// are removed at start.
func (c *Config) IndexFormerFiles() []string {
	var out []string
	for _, kind := range []index.Kind{index.KindKeyword, index.KindVector, index.KindHybrid} {
		for _, store := range []string{"memory", "chromem"} {
			path := filepath.Join(c.Server.DataDir, "index", string(kind)+indexSuffix(store))
			if path != c.IndexFile() {
				out = append(out, path)
			}
		}
	}
	return out
}

func indexSuffix(store string) string {
	if store == "chromem" {
		return ".snapshot"
	}
	return ".db"
}

// describeDatabase names a database without its password.
func (c *Config) describeDatabase(name string) string {
	d := c.Databases[name]
	switch d.Driver {
	case "sqlite":
		return "sqlite " + abs(d.DSN)
	case "mysql":
		mc, err := mysqldriver.ParseDSN(d.DSN)
		if err != nil {
			return "mysql (databases." + name + ".dsn cannot be read)"
		}
		return fmt.Sprintf("mysql %s@%s/%s", mc.User, mc.Addr, mc.DBName)
	case "postgres":
	default:
		return d.Driver + " (databases." + name + ")"
	}
	pc, err := pgconn.ParseConfig(d.DSN)
	if err != nil {
		return "postgres (databases." + name + ".dsn cannot be read)"
	}
	return fmt.Sprintf("postgres %s@%s:%d/%s", pc.User, pc.Host, pc.Port, pc.Database)
}

func abs(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}
