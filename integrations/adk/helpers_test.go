package hectoradk_test

import (
	"strings"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"
)

func genaiText(text string, role genai.Role) model.LLMResponse {
	return model.LLMResponse{Content: genai.NewContentFromText(text, role)}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
