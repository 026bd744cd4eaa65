package llm

import (
	"context"
	"errors"
	"fmt"

	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
)

// Adapter runs llm.generate effects for a world's dispatcher.
type Adapter struct {
	Generator *Generator
	// APIKey, if set, is used when the params carry no api_key (a world
	// whose manifest does not bind a secret).
	APIKey string
}

// Run generates one response. The receipt is sys/LlmGenerateReceipt@1; a
// provider failure is an error receipt whose message says what happened
// and what to do. Streamed text goes to the call's Progress.
func (a *Adapter) Run(ctx context.Context, c *effects.Call) effects.Receipt {
	const id = "llm"
	params, err := schema.Encode(c.Params)
	if err != nil {
		return effects.Errorf(id, "llm.generate: %v", err)
	}
	key := a.APIKey
	if m, ok := c.Params.(*schema.Map); ok {
		if k, ok := m.Get("api_key"); ok {
			if km, ok := k.(*schema.Map); ok {
				if tag, v, ok := km.VariantTag(); ok && tag == "literal" {
					if s, ok := v.(string); ok {
						key = s
					}
				}
			}
		}
	}
	out, err := a.Generator.GenerateCBOR(ctx, c.CAS, params, key, c.Progress)
	if err != nil {
		var pe *ProviderError
		if errors.As(err, &pe) && pe.Kind == KindTimeout {
			return effects.Receipt{Status: effects.StatusTimeout, Error: err.Error(), AdapterID: id}
		}
		return effects.Errorf(id, "%v", err)
	}
	v, err := schema.Decode(out)
	if err != nil {
		return effects.Errorf(id, "llm.generate: receipt: %v", err)
	}
	r := effects.OK(id, v)
	if m, ok := v.(*schema.Map); ok {
		if c, ok := m.Get("cost_cents"); ok {
			r.CostCents, _ = c.(uint64)
		}
	}
	return r
}

// StartsEarly reports that the adapter may start before its intent is
// durable (see effects.EarlyAdapter): it reads the transcript and builds
// and encodes the request meanwhile, and sends nothing before
// effects.WaitDurable returns (the request waits for it at the last
// moment, in the SDK's middleware).
func (a *Adapter) StartsEarly() bool { return true }

var _ effects.EarlyAdapter = (*Adapter)(nil)

// String describes the adapter for logs.
func (a *Adapter) String() string { return fmt.Sprintf("llm adapter (%s)", a.Generator.cfg.Provider) }
