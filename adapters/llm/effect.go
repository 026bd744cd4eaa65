package llm

import (
	"context"
	"errors"
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
)

// EffectKind is the kind of the effect this package runs.
const EffectKind = "llm.generate"

// The defeffects of llm.generate. A world whose manifest declares
// EffectV1 gets sys/LlmGenerateReceipt@1 receipts, which count an unknown
// usage or cost as 0; EffectV2 (examples/demiurge) gets @2, which says
// they are unknown; EffectV3 gets @3, which counts cache writes apart and
// says where the cost came from and who served the call.
const (
	EffectV1 = "sys/llm.generate@1"
	EffectV2 = "sys/llm.generate@2"
	EffectV3 = "sys/llm.generate@3"
)

// Adapter runs llm.generate effects for a world's dispatcher.
type Adapter struct {
	Generator *Generator
	// APIKey, if set, is used when the params carry no api_key (a world
	// whose manifest does not bind a secret).
	APIKey string
}

// Run generates one response. The receipt is sys/LlmGenerateReceipt@3 for
// an intent of EffectV3, @1 for one of EffectV1, else @2; a provider failure is an error receipt whose message says what happened
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
	var p Params
	if err := cas.Unmarshal(params, &p); err != nil {
		return effects.Errorf(id, "llm.generate: decode sys/LlmGenerateParams@1: %v", err)
	}
	rc, err := a.Generator.Generate(ctx, c.CAS, p, key, c.Progress)
	var out []byte
	if err == nil {
		// A world takes the receipt of the defeffect its manifest
		// declares.
		effect := ""
		if c.Intent != nil {
			effect = c.Intent.Effect
		}
		switch effect {
		case EffectV1:
			out, err = rc.MarshalV1()
		case EffectV3:
			out, err = rc.MarshalCBOR()
		default:
			out, err = rc.MarshalV2()
		}
	}
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
	r.CostCents = rc.CostCents
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
