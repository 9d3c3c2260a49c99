package userdata

import (
	"context"
	"io"
	"strings"

	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/state"
)

// StateFile holds the user's user: keys, as one JSON object.
const StateFile = UserState + "/state.json"

// userState is the user's user: keys (app: keys are every user's, and a
// session's own travel with it).
func userState(sessions session.Service, app, user string) Store {
	return Store{Name: UserState,
		Forget: func(ctx context.Context) (int, error) {
			st, err := sessions.UserState(ctx, app, user)
			if err != nil || len(st) == 0 {
				return 0, err
			}
			delta := map[string]any{}
			for k := range st {
				if !strings.HasPrefix(k, state.KeyPrefixUser) {
					k = state.KeyPrefixUser + k
				}
				delta[k] = nil
			}
			return len(st), sessions.UpdateUserState(ctx, app, user, delta)
		},
		Left: func(ctx context.Context) (int, error) {
			st, err := sessions.UserState(ctx, app, user)
			return len(st), err
		},
		Export: func(ctx context.Context, put Put) error {
			st, err := sessions.UserState(ctx, app, user)
			if err != nil {
				return err
			}
			return put.json(StateFile, st)
		},
		Import: func(context.Context, string) Importer {
			keys := 0
			return Importer{
				File: func(ctx context.Context, name string, body io.Reader) error {
					if name != StateFile || keys > 0 {
						return unexpected(name)
					}
					var st map[string]any
					if err := decodeFile(name, body, &st); err != nil {
						return err
					}
					if len(st) == 0 {
						return nil
					}
					keys = len(st)
					return sessions.UpdateUserState(ctx, app, user, st)
				},
				Done: func(context.Context) (int, error) { return keys, nil },
			}
		},
	}
}
