package userdata

import (
	"context"
	"io"

	"github.com/hectormem/hector/pkg/facts"
)

// FactsFile holds every version of the user's facts and their sessions',
// as one JSON array.
const FactsFile = Facts + "/versions.json"

// userFacts are the versions of the user's facts and their sessions'
// (app: facts are every user's), with their history.
func userFacts(svc *facts.Service, app, user string) Store {
	versions := func(ctx context.Context) ([]facts.ScopedFact, error) { return svc.UserFacts(ctx, app, user) }
	return Store{Name: Facts,
		Forget: func(ctx context.Context) (int, error) { return svc.ForgetUser(ctx, app, user) },
		Left: func(ctx context.Context) (int, error) {
			all, err := versions(ctx)
			return len(all), err
		},
		Export: func(ctx context.Context, put Put) error {
			all, err := versions(ctx)
			if err != nil {
				return err
			}
			return put.json(FactsFile, all)
		},
		Import: func(_ context.Context, by string) Importer {
			restored := -1
			return Importer{
				File: func(ctx context.Context, name string, body io.Reader) error {
					if name != FactsFile || restored >= 0 {
						return unexpected(name)
					}
					var all []facts.ScopedFact
					if err := decodeFile(name, body, &all); err != nil {
						return err
					}
					restored = len(all)
					if len(all) == 0 {
						return nil
					}
					return svc.Restore(ctx, app, user, by, all)
				},
				Done: func(context.Context) (int, error) { return max(restored, 0), nil },
			}
		},
	}
}
