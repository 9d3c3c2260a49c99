package userarchive

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/hectormem/hector/pkg/userdata"
)

// legacyUser is what user.jsonl held besides its first line in formats 1
// and 2: the user's state, their facts and a description of every
// artifact version, whose files followed their sessions. Restore hands
// them to the stores' importers as the files format 3 holds.
type legacyUser struct {
	state map[string]any
	facts []json.RawMessage
	files map[string]legacyArtifact // by file name
	order []string                  // the files, as described
}

type legacyArtifact struct {
	userdata.ArtifactFile
	File string `json:"file"`
}

func newLegacyUser(head *userLine) *legacyUser {
	if head.Format == 1 { // which did not count its sessions
		head.Sessions = -1
	}
	return &legacyUser{files: map[string]legacyArtifact{}}
}

// line reads one line of user.jsonl past the first.
func (u *legacyUser) line(kind string, raw []byte) error {
	switch kind {
	case "user_state":
		var l struct{ State map[string]any }
		if err := json.Unmarshal(raw, &l); err != nil {
			return err
		}
		u.state = l.State
	case "fact":
		var l struct{ Fact json.RawMessage }
		if err := json.Unmarshal(raw, &l); err != nil {
			return err
		}
		u.facts = append(u.facts, l.Fact)
	case "artifact":
		var l legacyArtifact
		if err := json.Unmarshal(raw, &l); err != nil {
			return err
		}
		if l.Artifact == nil || !strings.HasPrefix(l.File, userdata.Artifacts+"/") {
			return fmt.Errorf("an artifact line needs the artifact and a file under artifacts/")
		}
		if _, dup := u.files[l.File]; dup {
			return fmt.Errorf("file %s is described twice", l.File)
		}
		u.files[l.File] = l
		u.order = append(u.order, l.File)
	default:
		return fmt.Errorf("kind %q is not one of user.jsonl's (user, user_state, fact, artifact)", kind)
	}
	return nil
}

// parts are the stores' parts the archive holds something of.
func (u *legacyUser) parts() []string {
	var out []string
	for part, holds := range map[string]bool{userdata.UserState: len(u.state) > 0, userdata.Facts: len(u.facts) > 0,
		userdata.Artifacts: len(u.files) > 0} {
		if holds {
			out = append(out, part)
		}
	}
	return out
}

// start writes back what user.jsonl held whole: the state and the facts.
func (u *legacyUser) start(ctx context.Context, importer func(name string) (userdata.Importer, bool)) error {
	feed := func(name string, v any) error {
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		imp, _ := importer(name)
		return imp.File(ctx, name, bytes.NewReader(raw))
	}
	if len(u.state) > 0 {
		if err := feed(userdata.UserState+"/state.json", u.state); err != nil {
			return err
		}
	}
	if len(u.facts) > 0 {
		return feed(userdata.Facts+"/versions.json", u.facts)
	}
	return nil
}

// file writes back an artifact's file: its description, then its content.
func (u *legacyUser) file(ctx context.Context, name string, body io.Reader, imp userdata.Importer, isPart bool) error {
	a, described := u.files[name]
	if !described || !isPart {
		return bad("it holds %s, which user.jsonl does not describe", name)
	}
	desc, err := json.Marshal(a.ArtifactFile)
	if err != nil {
		return err
	}
	if err := imp.File(ctx, name+".json", bytes.NewReader(desc)); err != nil {
		return err
	}
	if err := imp.File(ctx, name, body); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// end refuses an archive that ends without a file user.jsonl described.
func (u *legacyUser) end(seen map[string]bool) error {
	for _, name := range u.order {
		if !seen[name] {
			return bad("it ends without %s, which user.jsonl describes", name)
		}
	}
	return nil
}
