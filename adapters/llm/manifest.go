package llm

import "github.com/demiurge-dev/demiurge/schema"

// ManifestModels turns the manifest's "models" into model overrides; each
// problem names the file and the JSON pointer of the option.
func ManifestModels(cat *schema.Catalog) ([]ModelOptions, schema.ErrorList) {
	var out []ModelOptions
	var problems schema.ErrorList
	for _, ms := range cat.Manifest.Models {
		o := ModelOptions{Match: ms.Match}
		for _, opt := range ms.Options {
			if err := o.SetOption(opt.Key, opt.Value); err != nil {
				problems = append(problems, &schema.ValidationError{File: cat.Manifest.At.File, Pointer: opt.Ptr, Msg: err.Error()})
			}
		}
		out = append(out, o)
	}
	return out, problems
}
