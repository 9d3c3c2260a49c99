package userarchive

import (
	"archive/tar"
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hectormem/hector/pkg/userdata"
)

// Describe counts what an archive holds, as importing it into an empty
// user would restore it: what an export says it wrote, read back from the
// archive itself (whether written here or by a server).
func Describe(r io.Reader) (*Summary, error) {
	tr := tar.NewReader(r)
	sum := &Summary{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return sum, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the archive: %w", err)
		}
		switch name := h.Name; {
		case name == headFile:
			err = json.NewDecoder(tr).Decode(&sum.From)
		case strings.HasPrefix(name, "sessions/"):
			sum.Sessions++
			lines := bufio.NewScanner(tr)
			lines.Buffer(nil, 64<<20)
			for first := true; lines.Scan(); first = false {
				if !first { // the session's own line, then its events
					sum.Events++
				}
			}
			err = lines.Err()
		case strings.HasPrefix(name, userdata.Artifacts+"/") && strings.HasSuffix(name, ".json"):
			sum.ArtifactVersions++
		case name == userdata.FactsFile:
			var versions []json.RawMessage
			err = json.NewDecoder(tr).Decode(&versions)
			sum.FactVersions = len(versions)
		case name == userdata.StateFile:
			var keys map[string]json.RawMessage
			err = json.NewDecoder(tr).Decode(&keys)
			sum.UserStateKeys = len(keys)
		}
		if err != nil {
			return nil, fmt.Errorf("reading the archive's %s: %w", h.Name, err)
		}
	}
}
