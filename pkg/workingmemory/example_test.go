package workingmemory_test

import (
	"fmt"

	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/workingmemory"
)

// A buffer window keeps the newest messages for the model.
func ExampleNew() {
	strategy, err := workingmemory.New(workingmemory.Config{Type: "buffer_window", MaxMessages: 2})
	if err != nil {
		panic(err)
	}
	var events []*session.Event
	for i, text := range []string{"hello", "my dog is Rex", "what is my dog called?"} {
		events = append(events, &session.Event{Seq: int64(i + 1), Author: "user", Message: session.NewTextMessage(session.RoleUser, text)})
	}
	for _, ev := range strategy.FilterEvents(events) {
		fmt.Println(ev.Seq, ev.Message.Text())
	}
	// Output:
	// 2 my dog is Rex
	// 3 what is my dog called?
}
