package session

import (
	"context"
	"encoding/base64"
	"encoding/json"
)

// IDs lists every session of one user, newest created first, page by page.
func IDs(ctx context.Context, svc Service, appName, userID string) ([]string, error) {
	var ids []string
	req := &ListRequest{AppName: appName, UserID: userID, PageSize: MaxPageSize}
	for {
		resp, err := svc.List(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, s := range resp.Sessions {
			ids = append(ids, s.ID())
		}
		if resp.NextPageToken == "" {
			return ids, nil
		}
		req.PageToken = resp.NextPageToken
	}
}

// listPosition is where a page of List ended: sessions are ordered by
// creation time (or last update, ByUpdate) then ID, newest first, so a
// session created while a caller pages cannot shift the pages it has not
// read yet.
type listPosition struct {
	Ns       int64  `json:"c"` // the creation or update time of the page's last session
	ID       string `json:"i"`
	ByUpdate bool   `json:"u,omitempty"`
}

func (p listPosition) token() string {
	raw, _ := json.Marshal(p)
	return base64.RawURLEncoding.EncodeToString(raw)
}

func parsePageToken(token string) (*listPosition, error) {
	if token == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	var p listPosition
	if err == nil {
		err = json.Unmarshal(raw, &p)
	}
	if err != nil || p.ID == "" {
		return nil, invalid("page token %q is not one returned by List: start again with an empty token", token)
	}
	return &p, nil
}

// before reports whether a session of time ns (its creation or last
// update, as the listing is ordered) and id comes after p in List's order.
func (p *listPosition) before(ns int64, id string) bool {
	return p == nil || ns < p.Ns || (ns == p.Ns && id < p.ID)
}

func pageSize(n int) (int, error) {
	switch {
	case n < 0:
		return 0, invalid("page size %d is negative", n)
	case n == 0:
		return DefaultPageSize, nil
	case n > MaxPageSize:
		return 0, invalid("page size %d is over the maximum of %d", n, MaxPageSize)
	}
	return n, nil
}

func changesLimit(req *ChangesRequest) (int, error) {
	switch {
	case req == nil:
		return 0, invalid("changes request is nil")
	case req.After < 0:
		return 0, invalid("cursor %d is negative", req.After)
	case req.Limit < 0:
		return 0, invalid("limit %d is negative", req.Limit)
	case req.Limit == 0:
		return DefaultChangesLimit, nil
	case req.Limit > MaxChangesLimit:
		return 0, invalid("limit %d is over the maximum of %d", req.Limit, MaxChangesLimit)
	}
	return req.Limit, nil
}
