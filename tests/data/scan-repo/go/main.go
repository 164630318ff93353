package main

import (
	"context"

	"github.com/Unleash/unleash-client-go/v4"
	"github.com/open-feature/go-sdk/openfeature"
)

func main() {
	if unleash.IsEnabled("new-checkout") {
		variant := unleash.GetVariant("checkout-colour")
		_ = variant
	}
	client := openfeature.NewClient("app")
	on, _ := client.BooleanValue(context.Background(), "dark-mode", false, openfeature.EvaluationContext{})
	_ = on
}
