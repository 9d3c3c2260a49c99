package hectoradk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"

	"google.golang.org/adk/v2/artifact"
	"google.golang.org/genai"

	"github.com/hectormem/hector/pkg/artifacts"
)

// artifactService is ADK's artifact.Service on Hector's artifacts. A name
// starting with "user:" is the user's, seen from every session of theirs.
// A text part is stored as UTF-8 text/plain marked as a text part, so that
// it loads back as text; inline data keeps its MIME type.
type artifactService struct{ b backend }

// textPart marks, in a version's metadata, content that was a text part.
const textPart = "adk_text_part"

func ref(app, user, sessionID, name string) artifacts.Ref {
	return artifacts.Ref{AppName: app, UserID: user, SessionID: sessionID, Name: name}
}

// notFound wraps err as ADK's services say an artifact is missing.
func notFound(err error) error {
	if errors.Is(err, artifacts.ErrNotFound) {
		return fmt.Errorf("hectoradk: %w (%w)", fs.ErrNotExist, err)
	}
	return fmt.Errorf("hectoradk: %w", err)
}

// Save stores a new version. Hector numbers versions itself, 1, 2, 3, …,
// and keeps every one: a request for a version of one's own choosing is
// refused.
func (a artifactService) Save(ctx context.Context, req *artifact.SaveRequest) (*artifact.SaveResponse, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if req.Version != 0 {
		return nil, fmt.Errorf("hectoradk: saving %q as version %d: Hector numbers versions itself; leave Version 0", req.FileName, req.Version)
	}
	mimeType, body := textMIME, []byte(req.Part.Text)
	if d := req.Part.InlineData; d != nil {
		mimeType, body = d.MIMEType, d.Data
	}
	info, err := a.b.saveArtifact(ctx, ref(req.AppName, req.UserID, req.SessionID, req.FileName), mimeType, req.Part.InlineData == nil, bytes.NewReader(body))
	if err != nil {
		return nil, notFound(err)
	}
	return &artifact.SaveResponse{Version: info.Version}, nil
}

const textMIME = "text/plain; charset=utf-8"

func (a artifactService) Load(ctx context.Context, req *artifact.LoadRequest) (*artifact.LoadResponse, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	info, body, err := a.b.openArtifact(ctx, ref(req.AppName, req.UserID, req.SessionID, req.FileName), req.Version)
	if err != nil {
		return nil, notFound(err)
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("hectoradk: reading %q: %w", req.FileName, err)
	}
	if info.Metadata[textPart] == true {
		return &artifact.LoadResponse{Part: genai.NewPartFromText(string(data))}, nil
	}
	return &artifact.LoadResponse{Part: genai.NewPartFromBytes(data, info.MimeType)}, nil
}

// Delete deletes every version of a name. Hector keeps a name's versions
// together: deleting one of them is refused.
func (a artifactService) Delete(ctx context.Context, req *artifact.DeleteRequest) error {
	if err := req.Validate(); err != nil {
		return err
	}
	if req.Version != 0 {
		return fmt.Errorf("hectoradk: deleting version %d of %q: Hector deletes a name with all its versions; leave Version 0", req.Version, req.FileName)
	}
	err := a.b.deleteArtifact(ctx, ref(req.AppName, req.UserID, req.SessionID, req.FileName))
	if errors.Is(err, artifacts.ErrNotFound) {
		return nil
	}
	return err
}

// List names the artifacts a session sees, its own and its user's, in order.
func (a artifactService) List(ctx context.Context, req *artifact.ListRequest) (*artifact.ListResponse, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	infos, err := a.b.listArtifacts(ctx, req.AppName, req.UserID, req.SessionID)
	if err != nil {
		return nil, notFound(err)
	}
	out := &artifact.ListResponse{FileNames: []string{}}
	for _, info := range infos {
		out.FileNames = append(out.FileNames, info.Name)
	}
	return out, nil
}

// Versions lists a name's versions, newest first, as ADK's own services do.
func (a artifactService) Versions(ctx context.Context, req *artifact.VersionsRequest) (*artifact.VersionsResponse, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	infos, err := a.b.artifactVersions(ctx, ref(req.AppName, req.UserID, req.SessionID, req.FileName))
	if err == nil && len(infos) == 0 {
		err = artifacts.ErrNotFound
	}
	if err != nil {
		return nil, notFound(err)
	}
	out := &artifact.VersionsResponse{}
	for i := len(infos) - 1; i >= 0; i-- {
		out.Versions = append(out.Versions, infos[i].Version)
	}
	return out, nil
}

// GetArtifactVersion describes a version (0: the latest).
func (a artifactService) GetArtifactVersion(ctx context.Context, req *artifact.GetArtifactVersionRequest) (*artifact.GetArtifactVersionResponse, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	infos, err := a.b.artifactVersions(ctx, ref(req.AppName, req.UserID, req.SessionID, req.FileName))
	if err != nil {
		return nil, notFound(err)
	}
	for i := len(infos) - 1; i >= 0; i-- {
		info := infos[i]
		if req.Version != 0 && info.Version != req.Version {
			continue
		}
		v := &artifact.ArtifactVersion{Version: info.Version, MimeType: info.MimeType, CreateTime: info.CreatedAt, CustomMetadata: info.Metadata}
		if info.Metadata[textPart] == true {
			v.MimeType, _, _ = mime.ParseMediaType(info.MimeType)
		}
		return &artifact.GetArtifactVersionResponse{ArtifactVersion: v}, nil
	}
	return nil, notFound(fmt.Errorf("version %d of %q: %w", req.Version, req.FileName, artifacts.ErrNotFound))
}

// textMetadata is the metadata of a version saved from a text part.
func textMetadata(text bool) map[string]any {
	if !text {
		return nil
	}
	return map[string]any{textPart: true}
}
