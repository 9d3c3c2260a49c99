package session

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"time"

	"github.com/hectormem/hector/pkg/sqldb"
)

// OwnerLister lists who has sessions: the apps and users of a store, for
// operators (the console, an admin API). Both backends implement it.
type OwnerLister interface {
	ListOwners(ctx context.Context, req *OwnersRequest) (*OwnersResponse, error)
}

// OwnersRequest asks for a page of (app, user) pairs, ordered by app then
// user (as Go compares strings); AppName, when set, keeps one app's users.
type OwnersRequest struct {
	AppName   string
	PageSize  int
	PageToken string
}

// OwnersResponse is a page of owners.
type OwnersResponse struct {
	Owners        []OwnerInfo
	NextPageToken string
}

// OwnerInfo is one (app, user) with sessions.
type OwnerInfo struct {
	AppName, UserID string
	Sessions        int
	LastUpdate      time.Time
}

type ownersPosition struct {
	App  string `json:"a"`
	User string `json:"u"`
}

func checkOwners(req *OwnersRequest) (int, *ownersPosition, error) {
	if req == nil {
		return 0, nil, invalid("owners request is nil")
	}
	size, err := pageSize(req.PageSize)
	if err != nil || req.PageToken == "" {
		return size, nil, err
	}
	raw, err := base64.RawURLEncoding.DecodeString(req.PageToken)
	var p ownersPosition
	if err == nil {
		err = json.Unmarshal(raw, &p)
	}
	if err != nil || p.App == "" {
		return 0, nil, invalid("page token %q is not one returned by ListOwners: start again with an empty token", req.PageToken)
	}
	return size, &p, nil
}

func ownersPage(owners []OwnerInfo, size int) *OwnersResponse {
	resp := &OwnersResponse{Owners: owners}
	if len(owners) > size {
		resp.Owners = owners[:size]
		last := owners[size-1]
		resp.NextPageToken = OwnersPageToken(last.AppName, last.UserID)
	}
	return resp
}

// OwnersPageToken is the page token that lists the owners after (app,
// user), in the order ListOwners keeps (by app, then user, as Go compares
// strings): for callers that page owners of several stores together.
func OwnersPageToken(app, user string) string {
	raw, _ := json.Marshal(ownersPosition{app, user})
	return base64.RawURLEncoding.EncodeToString(raw)
}

// OwnersTokenPosition is the (app, user) a page token from ListOwners or
// OwnersPageToken lists after; "" for an empty token.
func OwnersTokenPosition(token string) (app, user string, err error) {
	_, from, err := checkOwners(&OwnersRequest{PageToken: token})
	if err != nil || from == nil {
		return "", "", err
	}
	return from.App, from.User, nil
}

func (m *inMemoryService) ListOwners(ctx context.Context, req *OwnersRequest) (*OwnersResponse, error) {
	size, from, err := checkOwners(req)
	if err != nil {
		return nil, err
	}
	m.mu.RLock()
	var owners []OwnerInfo
	for o, sessions := range m.sessions {
		if len(sessions) == 0 || (req.AppName != "" && o.app != req.AppName) ||
			(from != nil && cmp.Or(cmp.Compare(o.app, from.App), cmp.Compare(o.user, from.User)) <= 0) {
			continue
		}
		info := OwnerInfo{AppName: o.app, UserID: o.user, Sessions: len(sessions)}
		for _, s := range sessions {
			if t := time.Unix(0, s.updatedNs); t.After(info.LastUpdate) {
				info.LastUpdate = t
			}
		}
		owners = append(owners, info)
	}
	m.mu.RUnlock()
	slices.SortFunc(owners, func(a, b OwnerInfo) int {
		return cmp.Or(cmp.Compare(a.AppName, b.AppName), cmp.Compare(a.UserID, b.UserID))
	})
	return ownersPage(owners[:min(len(owners), size+1)], size), nil
}

func (s *SQLService) ListOwners(ctx context.Context, req *OwnersRequest) (*OwnersResponse, error) {
	size, from, err := checkOwners(req)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		AppName, UserID string
		Sessions        int
		LastUpdated     int64
	}
	q := s.db.WithContext(ctx).Model(&sessionRow{}).Select("app_name, user_id, count(*) AS sessions, max(updated_ns) AS last_updated")
	if req.AppName != "" {
		q = q.Where("app_name = ?", req.AppName)
	}
	// In the bytes' order, as Go compares: the server merges these owners
	// with other stores'.
	app, user := sqldb.ByteOrder(s.db, "app_name"), sqldb.ByteOrder(s.db, "user_id")
	if from != nil {
		q = q.Where("("+app+" > ? OR (app_name = ? AND "+user+" > ?))", from.App, from.App, from.User)
	}
	err = q.Group("app_name, user_id").Order(app + ", " + user).Limit(size + 1).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	owners := make([]OwnerInfo, len(rows))
	for i, r := range rows {
		owners[i] = OwnerInfo{AppName: r.AppName, UserID: r.UserID, Sessions: r.Sessions, LastUpdate: time.Unix(0, r.LastUpdated)}
	}
	return ownersPage(owners, size), nil
}
