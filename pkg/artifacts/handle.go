package artifacts

import (
	"bytes"
	"context"
	"io"
	"iter"
	"maps"
	"sync"
	"time"
)

// Artifact is a whole artifact in memory, for the simple calls of a Handle.
// Stream large content with Service.Save and Service.Open instead.
type Artifact struct {
	Name     string
	MimeType string
	Data     []byte
	Metadata map[string]any

	// Set by the store.
	Version   int64
	Size      int64
	SHA256    string
	CreatedAt time.Time
}

// Handle is one invocation's view of its session's artifacts:
//
//	h.Save(&Artifact{Name: "chart.png", MimeType: "image/png", Data: b})
//	a, err := h.Get("chart.png")
//	for a, err := range h.All() { … }
//
// It remembers what it saved, for the event's Actions.ArtifactDelta.
type Handle struct {
	ctx                context.Context
	svc                Service
	app, user, session string
	mu                 sync.Mutex
	saved              map[string]int64
}

// NewHandle returns a handle on one session's artifacts; its calls use ctx.
func NewHandle(ctx context.Context, svc Service, appName, userID, sessionID string) *Handle {
	return &Handle{ctx: ctx, svc: svc, app: appName, user: userID, session: sessionID, saved: map[string]int64{}}
}

func (h *Handle) ref(name string) Ref { return Ref{h.app, h.user, h.session, name} }

// Save stores a as the next version of its name and returns the version.
func (h *Handle) Save(a *Artifact) (int64, error) {
	if a == nil {
		return 0, invalid("artifact is nil")
	}
	info, err := h.svc.Save(h.ctx, &SaveRequest{Ref: h.ref(a.Name), MimeType: a.MimeType, Metadata: a.Metadata, Body: bytes.NewReader(a.Data)})
	if err != nil {
		return 0, err
	}
	h.mu.Lock()
	h.saved[a.Name] = info.Version
	h.mu.Unlock()
	return info.Version, nil
}

// Get returns the latest version of name with its content.
func (h *Handle) Get(name string) (*Artifact, error) {
	return h.GetVersion(name, 0)
}

// GetVersion returns one version of name (0: the latest) with its content.
func (h *Handle) GetVersion(name string, version int64) (*Artifact, error) {
	info, body, err := h.svc.Open(h.ctx, h.ref(name), version)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	a := fromInfo(info)
	a.Data = data
	return a, nil
}

// All yields the latest version of every artifact the session sees, its own
// and its user's, in name order, without content (use Get for that).
func (h *Handle) All() iter.Seq2[*Artifact, error] {
	return func(yield func(*Artifact, error) bool) {
		infos, err := h.svc.List(h.ctx, h.app, h.user, h.session)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, info := range infos {
			if !yield(fromInfo(info), nil) {
				return
			}
		}
	}
}

// Delta returns name -> version of every artifact saved through this
// handle: what the invocation's event records as Actions.ArtifactDelta.
func (h *Handle) Delta() map[string]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.saved)
}

func fromInfo(i *Info) *Artifact {
	return &Artifact{Name: i.Name, MimeType: i.MimeType, Metadata: i.Metadata, Version: i.Version, Size: i.Size, SHA256: i.SHA256, CreatedAt: i.CreatedAt}
}
