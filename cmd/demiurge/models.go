package main

import (
	"fmt"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/schema"
)

// manifestModels turns the manifest's "models" into model overrides; each
// problem names the file and the JSON pointer of the option.
func manifestModels(cat *schema.Catalog) ([]llm.ModelOptions, schema.ErrorList) {
	var out []llm.ModelOptions
	var problems schema.ErrorList
	for _, ms := range cat.Manifest.Models {
		o := llm.ModelOptions{Match: ms.Match}
		for _, opt := range ms.Options {
			if err := o.SetOption(opt.Key, opt.Value); err != nil {
				problems = append(problems, &schema.ValidationError{File: cat.Manifest.At.File, Pointer: opt.Ptr, Msg: err.Error()})
			}
		}
		out = append(out, o)
	}
	return out, problems
}

// modelOptions returns the model overrides of a run: the manifest's, then
// those of --model-option for the run's model, which win.
func modelOptions(cat *schema.Catalog, model string, flags []string) ([]llm.ModelOptions, error) {
	out, problems := manifestModels(cat)
	if len(problems) > 0 {
		return nil, fmt.Errorf("the manifest's models: %w", problems)
	}
	if len(flags) == 0 {
		return out, nil
	}
	o := llm.ModelOptions{Match: model}
	for _, kv := range flags {
		if err := o.ParseModelOption(kv); err != nil {
			return nil, usagef("--model-option: %v", err)
		}
	}
	return append(out, o), nil
}
