package facts

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/hectormem/hector/pkg/errkind"
)

// ErrUserHasFacts: a restore found facts of the user already; it wrote nothing.
var ErrUserHasFacts = errkind.New(errkind.AlreadyExists, "the user already has facts: erase the user first, or restore under another user ID")

// Restore writes back one user's facts as UserFacts returned them (an
// export, maybe of another deployment or another user ID), under app and
// user, in one transaction: every version keeps its ID, value, validity,
// place in its key's history, and is sealed with this service's key. (A
// copy of a user this service holds, whose IDs are taken, gets new IDs,
// linked as the old ones were.) Its
// source becomes "imported", by, with the archive's claim kept apart
// (Source.Claimed): an archive can say anything. The rules of this
// service's policy apply to each version as they apply to a write (an
// expiry past the longest TTL from now is brought back to it), but the
// scope's budget does not: nothing held is dropped. It fails with
// ErrUserHasFacts if the user has facts.
func (s *Service) Restore(ctx context.Context, app, user, by string, facts []ScopedFact) error {
	if app == "" || user == "" {
		return refuse("invalid_scope", "restoring facts needs the app and the user")
	}
	recs := make([]record, 0, len(facts))
	ids := make(map[string]bool, len(facts))
	current := make(map[string]bool) // scope and key of each current version
	for i, f := range facts {
		r, err := s.restored(app, user, by, f)
		if err != nil {
			return fmt.Errorf("fact %d of %d (%q): %w", i+1, len(facts), f.Key, err)
		}
		if ids[r.ID] {
			return refuse("id_invalid", "fact %d of %d: version ID %q appears twice", i+1, len(facts), r.ID)
		}
		ids[r.ID] = true
		if r.current() {
			if at := r.Scope.String() + "\x00" + r.Key; current[at] {
				return refuse("history_invalid", "fact %d of %d: key %q has two current versions", i+1, len(facts), r.Key)
			} else {
				current[at] = true
			}
		}
		recs = append(recs, r)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	held, err := s.st.userVersions(ctx, app, user)
	if err != nil {
		return err
	}
	if len(held) > 0 {
		return ErrUserHasFacts
	}
	taken, err := s.st.taken(ctx, slices.Collect(maps.Keys(ids)))
	if err != nil {
		return err
	}
	if taken { // a copy of a user held here: the copy's versions are new
		renumber(recs)
	}
	return s.st.restore(ctx, recs)
}

// renumber gives every version a new ID, and its history's links the
// same.
func renumber(recs []record) {
	fresh := make(map[string]string, len(recs))
	for i := range recs {
		fresh[recs[i].ID] = uuid.NewString()
		recs[i].ID = fresh[recs[i].ID]
	}
	for i := range recs {
		recs[i].Supersedes, recs[i].SupersededBy = fresh[recs[i].Supersedes], fresh[recs[i].SupersededBy]
	}
}

// maxIDChars is the longest version ID storage holds (a UUID).
const maxIDChars = 36

// restored is the record of one exported version, checked and sealed.
func (s *Service) restored(app, user, by string, f ScopedFact) (record, error) {
	scope := Scope{Kind: f.Scope, App: app, User: user, SessionID: f.SessionID}
	if f.Scope == ScopeApp {
		return record{}, refuse("invalid_scope", "an app's facts are every user's: they are not restored with one")
	}
	if err := scope.check(); err != nil {
		return record{}, err
	}
	if f.ID == "" || len(f.ID) > maxIDChars || !utf8.ValidString(f.ID) {
		return record{}, refuse("id_invalid", "a version needs an ID of at most %d bytes", maxIDChars)
	}
	source := Source{Kind: SourceImported, By: by, Claimed: f.Source.claim()}
	f.Value = cleanText(f.Value)
	if err := s.policy.Check(StoreRequest{Key: f.Key, Value: f.Value, Category: f.Category, Tags: f.Tags, Source: source}); err != nil {
		return record{}, err
	}
	if latest := s.now().Add(s.policy.MaxTTL); f.ExpiresAt.After(latest) {
		f.ExpiresAt = latest
	}
	switch {
	case f.ValidFrom.IsZero() || f.ExpiresAt.IsZero():
		return record{}, refuse("history_invalid", "a version needs the time it began to hold and its expiry")
	case f.ValidTo != nil && f.ValidTo.Before(f.ValidFrom):
		return record{}, refuse("history_invalid", "a version cannot end before it began")
	}
	r := record{ID: f.ID, Scope: scope, Key: f.Key, Category: f.Category, Tags: f.Tags, ValueChars: utf8.RuneCountInString(f.Value),
		Sealed: s.sealer.seal(f.Value, scope.String()+"\x00"+f.Key), Source: source, CreatedAt: f.CreatedAt.UTC(), ValidFrom: f.ValidFrom.UTC(),
		Supersedes: f.Supersedes, SupersededBy: f.SupersededBy, ExpiresAt: f.ExpiresAt.UTC()}
	if f.ValidTo != nil {
		r.ValidTo = f.ValidTo.UTC()
	} else {
		// Only a current version is compared with new writes; its vector is
		// embedded when first needed.
		r.ContentSig, r.EntitySig = phrase(f.Value).signatures(s.sigKey)
	}
	return r, nil
}
