package facts_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/hectormem/hector/pkg/facts"
)

// Curated facts: stored under a user's scope through the policy, recalled,
// and a secret refused with the rule's code.
func ExampleService_Store() {
	key := make([]byte, 32) // keep it: the facts cannot be read without it
	rand.Read(key)
	svc, err := facts.NewInMemoryService(key)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	alice := facts.UserScope("app", "alice")
	if _, err := svc.Store(ctx, alice, facts.StoreRequest{Key: "deploy/tool", Value: "Konflux", Category: "ops"}); err != nil {
		panic(err)
	}
	f, _ := svc.Recall(ctx, alice, "deploy/tool")
	fmt.Println(f.Key, "=", f.Value)

	_, err = svc.Store(ctx, alice, facts.StoreRequest{Key: "aws", Value: "AKIAABCDEFGHIJKLMNOP"})
	var refused *facts.ValidationError
	if errors.As(err, &refused) {
		fmt.Println("refused:", refused.Code)
	}
	// Output:
	// deploy/tool = Konflux
	// refused: looks_like_secret
}
