package hectoradk_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"
)

// artifactScript drives an artifact.Service as an agent does, and writes
// down what each call answered: the same script on ADK's in-memory
// service and on Hector must read the same.
func artifactScript(ctx context.Context, a artifact.Service) []string {
	var log []string
	note := func(what string, v any, err error) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			log = append(log, what+": not found")
		case err != nil:
			log = append(log, what+": error")
		default:
			log = append(log, fmt.Sprintf("%s: %v", what, v))
		}
	}
	save := func(sid, name string, p *genai.Part) {
		r, err := a.Save(ctx, &artifact.SaveRequest{AppName: "notes", UserID: "ana", SessionID: sid, FileName: name, Part: p})
		var v any
		if err == nil {
			v = r.Version
		}
		note("save "+sid+"/"+name, v, err)
	}
	load := func(sid, name string, version int64) {
		r, err := a.Load(ctx, &artifact.LoadRequest{AppName: "notes", UserID: "ana", SessionID: sid, FileName: name, Version: version})
		var v any
		if err == nil {
			if r.Part.InlineData != nil {
				v = fmt.Sprintf("bytes %q %s", r.Part.InlineData.Data, r.Part.InlineData.MIMEType)
			} else {
				v = fmt.Sprintf("text %q", r.Part.Text)
			}
		}
		note(fmt.Sprintf("load %s/%s@%d", sid, name, version), v, err)
	}
	list := func(sid string) {
		r, err := a.List(ctx, &artifact.ListRequest{AppName: "notes", UserID: "ana", SessionID: sid})
		var v any
		if err == nil {
			v = r.FileNames
		}
		note("list "+sid, v, err)
	}
	versions := func(sid, name string) {
		r, err := a.Versions(ctx, &artifact.VersionsRequest{AppName: "notes", UserID: "ana", SessionID: sid, FileName: name})
		var v any
		if err == nil {
			v = r.Versions
		}
		note("versions "+sid+"/"+name, v, err)
	}
	describe := func(sid, name string, version int64) {
		r, err := a.GetArtifactVersion(ctx, &artifact.GetArtifactVersionRequest{AppName: "notes", UserID: "ana", SessionID: sid, FileName: name, Version: version})
		var v any
		if err == nil {
			v = fmt.Sprintf("v%d %s", r.ArtifactVersion.Version, r.ArtifactVersion.MimeType)
		}
		note(fmt.Sprintf("describe %s/%s@%d", sid, name, version), v, err)
	}
	del := func(sid, name string) {
		note("delete "+sid+"/"+name, "ok", a.Delete(ctx, &artifact.DeleteRequest{AppName: "notes", UserID: "ana", SessionID: sid, FileName: name}))
	}

	list("s1")
	load("s1", "plan.txt", 0)
	save("s1", "plan.txt", genai.NewPartFromText("draft one"))
	save("s1", "plan.txt", genai.NewPartFromText("draft two, café"))
	save("s1", "chart.png", genai.NewPartFromBytes([]byte("\x89PNG fake"), "image/png"))
	save("s1", "user:profile.json", genai.NewPartFromBytes([]byte(`{"name":"Ana"}`), "application/json"))
	load("s1", "plan.txt", 0)
	load("s1", "plan.txt", 1)
	load("s1", "plan.txt", 7)
	load("s1", "chart.png", 0)
	list("s1")
	list("s2") // a user: name is seen from every session of the user's
	load("s2", "user:profile.json", 0)
	load("s2", "plan.txt", 0) // a session's own name is not
	save("s2", "user:profile.json", genai.NewPartFromBytes([]byte(`{"name":"Ana B."}`), "application/json"))
	load("s1", "user:profile.json", 0)
	versions("s1", "plan.txt")
	versions("s1", "user:profile.json")
	versions("s1", "missing")
	describe("s1", "plan.txt", 0)
	describe("s1", "chart.png", 1)
	describe("s1", "plan.txt", 9)
	del("s1", "plan.txt")
	load("s1", "plan.txt", 0)
	list("s1")
	del("s1", "never-saved")
	del("s2", "user:profile.json")
	list("s1")
	return log
}

func TestArtifactsAnswerAsADKsOwn(t *testing.T) {
	want := artifactScript(t.Context(), artifact.InMemoryService())
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			h := m.open(t)
			for _, sid := range []string{"s1", "s2"} { // Hector keeps artifacts beside a session
				if _, err := h.Session.Create(t.Context(), &session.CreateRequest{AppName: "notes", UserID: "ana", SessionID: sid}); err != nil {
					t.Fatal(err)
				}
			}
			got := artifactScript(t.Context(), h.Artifact)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Hector answered otherwise than ADK's in-memory service (-ADK +Hector):\n%s", diff)
			}
			t.Logf("%d calls answered alike:\n%s", len(want), strings.Join(want, "\n"))
		})
	}
}

// What Hector does otherwise than ADK's in-memory service is refused with
// a reason, and changes nothing: it numbers versions itself, and deletes a
// name with all its versions.
func TestArtifactsRefuseWhatHectorDoesNotDo(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			ctx := t.Context()
			h := m.open(t)
			if _, err := h.Session.Create(ctx, &session.CreateRequest{AppName: "notes", UserID: "ana", SessionID: "s1"}); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Artifact.Save(ctx, &artifact.SaveRequest{AppName: "notes", UserID: "ana", SessionID: "s1", FileName: "a.txt", Part: genai.NewPartFromText("one")}); err != nil {
				t.Fatal(err)
			}
			_, err := h.Artifact.Save(ctx, &artifact.SaveRequest{AppName: "notes", UserID: "ana", SessionID: "s1", FileName: "a.txt", Part: genai.NewPartFromText("two"), Version: 5})
			if err == nil || !strings.Contains(err.Error(), "numbers versions itself") {
				t.Errorf("saving as version 5: %v", err)
			}
			err = h.Artifact.Delete(ctx, &artifact.DeleteRequest{AppName: "notes", UserID: "ana", SessionID: "s1", FileName: "a.txt", Version: 1})
			if err == nil || !strings.Contains(err.Error(), "all its versions") {
				t.Errorf("deleting version 1: %v", err)
			}
			v, err := h.Artifact.Versions(ctx, &artifact.VersionsRequest{AppName: "notes", UserID: "ana", SessionID: "s1", FileName: "a.txt"})
			if err != nil || !slices.Equal(v.Versions, []int64{1}) {
				t.Errorf("versions after the refusals: %v, %v; want [1]", v, err)
			}
		})
	}
}
