package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/demiurge-dev/demiurge/cas"
)

// Request is what one llm.generate call asks of the model, read from its
// params and the blobs they name: the system prompt, the transcript and
// the tools, each as the adapter reads it before it builds a provider's
// request. A cassette compares the Request of a call with the recorded
// call's (package cassette).
type Request struct {
	// Model is the model named in the params.
	Model string
	// Instructions is the system prompt: Params.Instructions, then the
	// text of the instructions_ref blob, as Generate joins them.
	Instructions string
	// Items are the transcript's items, oldest first, each as written in
	// its message blob (a text blob as the user message it becomes).
	Items []json.RawMessage
	// Tools are the tools of the tools blob, each as written (a nested
	// Chat Completions tool flattened); nil without tools_ref.
	Tools []json.RawMessage
	// ToolChoice and ResponseFormat are the params', nil when unset.
	ToolChoice     *ToolChoice
	ResponseFormat *TextFormat
}

// ReadRequest reads the Request of an llm.generate call with params p
// from g. A blob p names that g does not hold, or that does not parse,
// is an error wrapping ErrInvalidParams that names it, as Generate
// reports it.
func ReadRequest(ctx context.Context, g cas.Getter, p Params) (*Request, error) {
	r := &Request{Model: p.Model, ToolChoice: p.ToolChoice, ResponseFormat: p.ResponseFormat}
	if p.Instructions != nil {
		r.Instructions = *p.Instructions
	}
	if p.InstructionsRef != nil {
		b, err := g.Get(ctx, *p.InstructionsRef)
		if err != nil {
			return nil, fmt.Errorf("%w: instructions_ref %s: %w", ErrInvalidParams, p.InstructionsRef.Short(), err)
		}
		if r.Instructions != "" {
			r.Instructions += "\n\n"
		}
		r.Instructions += string(b)
	}
	refs := p.MessageRefs
	if p.Transcript != nil {
		more, err := p.Transcript.refs(ctx, g, nil)
		if err != nil {
			return nil, err
		}
		refs = append(slices.Clip(refs), more...)
	}
	items, err := loadTranscript(ctx, g, refs, nil)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		r.Items = append(r.Items, it.raw)
	}
	if p.ToolsRef != nil {
		tools, err := loadTools(ctx, g, *p.ToolsRef)
		if err != nil {
			return nil, err
		}
		r.Tools = []json.RawMessage{}
		for _, t := range tools {
			r.Tools = append(r.Tools, t.raw)
		}
	}
	return r, nil
}
