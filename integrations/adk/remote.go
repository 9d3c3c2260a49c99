package hectoradk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/index"
	hsession "github.com/hectormem/hector/pkg/session"
)

// remote is a `hector serve` reached over its REST API.
type remote struct {
	base   string // without a trailing slash
	apiKey string
	client *http.Client
}

// apiError is an error the server answered with.
type apiError struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string {
	return fmt.Sprintf("hector answered %d %s: %s", e.Status, e.Code, e.Message)
}

// Is lets callers test a remote answer as they test a local error.
func (e *apiError) Is(target error) bool {
	switch e.Status {
	case http.StatusNotFound:
		return target == hsession.ErrNotFound || target == artifacts.ErrNotFound
	case http.StatusConflict:
		return target == hsession.ErrAlreadyExists
	}
	return false
}

func userPath(app, user string, rest ...string) string {
	p := "/v1/apps/" + url.PathEscape(app) + "/users/" + url.PathEscape(user)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// do sends a request and decodes a JSON answer into out (if not nil); an
// answer of 300 or more is an *apiError.
func (r remote) do(ctx context.Context, method, path string, query url.Values, body io.Reader, header http.Header, out any) (*http.Response, error) {
	u := r.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if r.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+r.apiKey)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var e struct{ Error apiError }
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if json.Unmarshal(raw, &e) != nil || e.Error.Code == "" {
			e.Error = apiError{Code: "unexpected", Message: strings.TrimSpace(string(raw))}
		}
		e.Error.Status = resp.StatusCode
		return nil, &e.Error
	}
	if out == nil {
		return resp, nil
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return nil, fmt.Errorf("hectoradk: reading %s %s: %w", method, path, err)
	}
	return resp, nil
}

func (r remote) json(ctx context.Context, method, path string, query url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(raw)
	}
	resp, err := r.do(ctx, method, path, query, body, http.Header{"Content-Type": {"application/json"}}, out)
	if err == nil && out == nil {
		resp.Body.Close()
	}
	return err
}

func (r remote) createSession(ctx context.Context, app, user, id string, st map[string]any) (*stored, error) {
	var out stored
	err := r.json(ctx, http.MethodPost, userPath(app, user, "sessions"), nil, map[string]any{"session_id": id, "state": st}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

func (r remote) getSession(ctx context.Context, app, user, id string, recent int, after time.Time) (*stored, error) {
	q := url.Values{}
	if recent > 0 {
		q.Set("recent", strconv.Itoa(recent))
	}
	if !after.IsZero() {
		q.Set("after", after.Add(-time.Nanosecond).Format(time.RFC3339Nano)) // see local.getSession
	}
	var out stored
	err := r.json(ctx, http.MethodGet, userPath(app, user, "sessions", id), q, nil, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

func (r remote) listSessions(ctx context.Context, app, user string) ([]*stored, error) {
	if user != "" {
		return r.listOwn(ctx, app, user)
	}
	var all []*stored
	for token := ""; ; {
		var page struct {
			Users []struct {
				User string `json:"user"`
			} `json:"users"`
			NextPageToken string `json:"next_page_token"`
		}
		q := url.Values{"page_size": {"1000"}}
		if token != "" {
			q.Set("page_token", token)
		}
		if err := r.json(ctx, http.MethodGet, "/v1/apps/"+url.PathEscape(app)+"/users", q, nil, &page); err != nil {
			return nil, fmt.Errorf("hectoradk: listing every user's sessions needs an admin or app key: %w", err)
		}
		for _, u := range page.Users {
			own, err := r.listOwn(ctx, app, u.User)
			if err != nil {
				return nil, err
			}
			all = append(all, own...)
		}
		if token = page.NextPageToken; token == "" {
			return all, nil
		}
	}
}

func (r remote) listOwn(ctx context.Context, app, user string) ([]*stored, error) {
	var all []*stored
	for token := ""; ; {
		var page struct {
			Sessions      []*stored `json:"sessions"`
			NextPageToken string    `json:"next_page_token"`
		}
		q := url.Values{"page_size": {"1000"}}
		if token != "" {
			q.Set("page_token", token)
		}
		if err := r.json(ctx, http.MethodGet, userPath(app, user, "sessions"), q, nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Sessions...)
		if token = page.NextPageToken; token == "" {
			return all, nil
		}
	}
}

func (r remote) deleteSession(ctx context.Context, app, user, id string) error {
	err := r.json(ctx, http.MethodDelete, userPath(app, user, "sessions", id), nil, nil, nil)
	if errors.Is(err, hsession.ErrNotFound) {
		return nil
	}
	return err
}

func (r remote) appendEvent(ctx context.Context, app, user, id string, ev *hsession.Event) error {
	var out hsession.Event
	if err := r.json(ctx, http.MethodPost, userPath(app, user, "sessions", id, "events"), nil, ev, &out); err != nil {
		return err
	}
	ev.ID, ev.Timestamp, ev.Seq, ev.Cursor = out.ID, out.Timestamp, out.Seq, out.Cursor
	return nil
}

func (r remote) search(ctx context.Context, app, user, query string, limit int) ([]index.SearchResult, error) {
	var out struct {
		Results []index.SearchResult `json:"results"`
	}
	err := r.json(ctx, http.MethodPost, userPath(app, user)+"/memory:search", nil, map[string]any{"query": query, "limit": limit, "full_content": true}, &out)
	return out.Results, err
}

func artifactPath(ref artifacts.Ref, rest ...string) string {
	return userPath(ref.AppName, ref.UserID, append([]string{"sessions", ref.SessionID, "artifacts", ref.Name}, rest...)...)
}

func (r remote) saveArtifact(ctx context.Context, ref artifacts.Ref, mimeType string, text bool, body io.Reader) (*artifacts.Info, error) {
	var out artifacts.Info
	header := http.Header{"Content-Type": {mimeType}}
	if meta := textMetadata(text); meta != nil {
		raw, _ := json.Marshal(meta)
		header.Set("X-Hector-Metadata", string(raw))
	}
	_, err := r.do(ctx, http.MethodPut, artifactPath(ref), nil, body, header, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

func (r remote) openArtifact(ctx context.Context, ref artifacts.Ref, version int64) (*artifacts.Info, io.ReadCloser, error) {
	q := url.Values{}
	if version > 0 {
		q.Set("version", strconv.FormatInt(version, 10))
	}
	resp, err := r.do(ctx, http.MethodGet, artifactPath(ref), q, nil, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	info := &artifacts.Info{Name: ref.Name, MimeType: resp.Header.Get("Content-Type"), Size: resp.ContentLength}
	info.Version, _ = strconv.ParseInt(resp.Header.Get("X-Hector-Version"), 10, 64)
	if meta := resp.Header.Get("X-Hector-Metadata"); meta != "" {
		if err := json.Unmarshal([]byte(meta), &info.Metadata); err != nil {
			resp.Body.Close()
			return nil, nil, fmt.Errorf("hectoradk: the server sent metadata that is not JSON: %w", err)
		}
	}
	return info, resp.Body, nil
}

func (r remote) listArtifacts(ctx context.Context, app, user, sessionID string) ([]*artifacts.Info, error) {
	var out struct {
		Artifacts []*artifacts.Info `json:"artifacts"`
	}
	err := r.json(ctx, http.MethodGet, userPath(app, user, "sessions", sessionID, "artifacts"), nil, nil, &out)
	return out.Artifacts, err
}

func (r remote) artifactVersions(ctx context.Context, ref artifacts.Ref) ([]*artifacts.Info, error) {
	var out struct {
		Artifacts []*artifacts.Info `json:"artifacts"`
	}
	err := r.json(ctx, http.MethodGet, artifactPath(ref, "versions"), nil, nil, &out)
	return out.Artifacts, err
}

func (r remote) deleteArtifact(ctx context.Context, ref artifacts.Ref) error {
	return r.json(ctx, http.MethodDelete, artifactPath(ref), nil, nil, nil)
}
