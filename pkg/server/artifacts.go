package server

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/hectormem/hector/pkg/artifacts"
)

func artifactRef(r *http.Request) artifacts.Ref {
	return artifacts.Ref{AppName: r.PathValue("app"), UserID: r.PathValue("user"), SessionID: r.PathValue("id"), Name: r.PathValue("name")}
}

// putArtifact streams the body into a new version. Metadata, if any, is a
// JSON object in the X-Hector-Metadata header.
func (s *Server) putArtifact(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.handle(r); err != nil { // the session must exist
		return err
	}
	var meta map[string]any
	if h := r.Header.Get("X-Hector-Metadata"); h != "" {
		if err := json.Unmarshal([]byte(h), &meta); err != nil {
			return badRequest("header X-Hector-Metadata is not a JSON object: %v", err)
		}
	}
	contentType := r.Header.Get("Content-Type")
	if t, _, err := mime.ParseMediaType(contentType); err == nil && (t == "application/octet-stream" || t == "application/x-www-form-urlencoded") {
		// The client did not say: detect it. curl --data-binary sends
		// every file as a form unless told otherwise.
		contentType = ""
	}
	info, err := s.svcs.Artifacts.Save(r.Context(), &artifacts.SaveRequest{Ref: artifactRef(r), MimeType: contentType, Metadata: meta, Body: r.Body})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, info)
	return nil
}

func (s *Server) getArtifact(w http.ResponseWriter, r *http.Request) error {
	version, err := intParam(r, "version")
	if err != nil {
		return err
	}
	info, body, err := s.svcs.Artifacts.Open(r.Context(), artifactRef(r), int64(version))
	if err != nil {
		return err
	}
	defer body.Close()
	h := w.Header()
	h.Set("Content-Type", info.MimeType)
	// The content is the uploader's, on the API's origin: a browser must
	// never run it there. It keeps its type for API clients, is not
	// sniffed as another, runs sandboxed if shown at all, and anything a
	// browser would do more with than display is a download.
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'; img-src 'self'")
	if !displayedInert(info.MimeType) {
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": info.Name}))
	}
	h.Set("Content-Length", strconv.FormatInt(info.Size, 10))
	h.Set("ETag", `"`+info.SHA256+`"`)
	h.Set("X-Hector-Version", strconv.FormatInt(info.Version, 10))
	if len(info.Metadata) > 0 { // as it was saved with
		if meta, err := json.Marshal(info.Metadata); err == nil {
			h.Set("X-Hector-Metadata", string(meta))
		}
	}
	w.WriteHeader(http.StatusOK)
	_, err = io.Copy(w, body)
	if err != nil {
		s.logger.Warn("artifact download cut short", "name", info.Name, "error", err)
	}
	return nil
}

// displayedInert reports whether a browser shows content of this type
// without interpreting it as a document: plain text, JSON and raster images.
func displayedInert(contentType string) bool {
	media, _, err := mime.ParseMediaType(contentType)
	return err == nil && (media == "text/plain" || media == "application/json" || artifacts.InlineImage(media))
}

func (s *Server) listArtifacts(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.handle(r); err != nil {
		return err
	}
	infos, err := s.svcs.Artifacts.List(r.Context(), r.PathValue("app"), r.PathValue("user"), r.PathValue("id"))
	if err != nil {
		return err
	}
	if infos == nil {
		infos = []*artifacts.Info{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"artifacts": infos})
	return nil
}

func (s *Server) artifactVersions(w http.ResponseWriter, r *http.Request) error {
	infos, err := s.svcs.Artifacts.Versions(r.Context(), artifactRef(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"artifacts": infos})
	return nil
}

func (s *Server) deleteArtifact(w http.ResponseWriter, r *http.Request) error {
	if err := s.svcs.Artifacts.Delete(r.Context(), artifactRef(r)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
