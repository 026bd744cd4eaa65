package jsonschema_test

// The differential test: this package against santhosh-tekuri/jsonschema
// v6.0.3, the validator it replaces, which stays a test-only dependency
// for this. Both compile the same schemas and validate the same values;
// they must agree on what compiles, on the text of every compile error a
// user can see, on what is valid, and on the tree of errors (the same
// nodes, kinds, places, schema URLs and messages; the order of causes
// aside, which santhosh takes from Go's map order where this package
// sorts), so that tools.SchemaErrorText, which the chat reducers journal,
// gives the same bytes.

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/internal/jsonschema/kind"
	santhosh "github.com/santhosh-tekuri/jsonschema/v6"
	skind "github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var printer = message.NewPrinter(language.English)

const testURL = "mem:///test/schema.json"

// refuse is both compilers' loader: the message tools.NewSchemaCompiler
// gives.
func refuse(u string) (any, error) {
	return nil, fmt.Errorf("external schema %q not allowed: tool schemas must be self-contained", u)
}

type santhoshLoader struct{}

func (santhoshLoader) Load(u string) (any, error) { return refuse(u) }

// outcome is what one validator made of a schema and its instances.
type outcome struct {
	compileErr string   // "" when it compiled
	results    []string // per instance: "valid", or the error rendered
	panicked   any
}

// leaves renders a tree's leaves as tools.SchemaErrorText does (without
// its cut at eight): "at /path: message", sorted.
func leaves(path func(int) []string, msg func(int) string, n int) string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("at /%s: %s", strings.Join(path(i), "/"), msg(i)))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// ourTree and theirTree render a tree canonically: each node's schema
// URL, place, keyword and message, its causes sorted. The text of leaves
// (SchemaErrorText's) comes first, then Error() of the tree with its
// causes sorted the same way, then the canonical form.
func ourRender(e *jsonschema.ValidationError) string {
	var ls []*jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			ls = append(ls, e)
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(e)
	text := leaves(func(i int) []string { return ls[i].InstanceLocation }, func(i int) string { return ls[i].ErrorKind.Message() }, len(ls))
	canon := ourSort(e)
	return text + "\n--- Error():\n" + e.Error() + "\n--- tree:\n" + canon
}

func ourSort(e *jsonschema.ValidationError) string {
	type kc struct {
		key string
		e   *jsonschema.ValidationError
	}
	var cs []kc
	for _, c := range e.Causes {
		cs = append(cs, kc{ourSort(c), c})
	}
	slices.SortStableFunc(cs, func(a, b kc) int { return cmp.Compare(a.key, b.key) })
	var keys []string
	for i, c := range cs {
		e.Causes[i] = c.e
		keys = append(keys, c.key)
	}
	if _, ok := e.ErrorKind.(*kind.PropertyNames); ok {
		e.InstanceLocation = []string{"(propertyNames)"}
	}
	return fmt.Sprintf("(%s %q %q %s [%s])", e.SchemaURL, e.InstanceLocation, e.ErrorKind.KeywordPath(), e.ErrorKind.Message(), strings.Join(keys, " "))
}

func theirRender(e *santhosh.ValidationError) string {
	var ls []*santhosh.ValidationError
	var walk func(e *santhosh.ValidationError)
	walk = func(e *santhosh.ValidationError) {
		if k, ok := e.ErrorKind.(*skind.AdditionalProperties); ok {
			slices.Sort(k.Properties) // in map order, as tools.SortSchemaError knew
		}
		if len(e.Causes) == 0 {
			ls = append(ls, e)
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(e)
	text := leaves(func(i int) []string { return ls[i].InstanceLocation }, func(i int) string { return ls[i].ErrorKind.LocalizedString(printer) }, len(ls))
	canon := theirSort(e)
	return text + "\n--- Error():\n" + e.Error() + "\n--- tree:\n" + canon
}

func theirSort(e *santhosh.ValidationError) string {
	type kc struct {
		key string
		e   *santhosh.ValidationError
	}
	var cs []kc
	for _, c := range e.Causes {
		cs = append(cs, kc{theirSort(c), c})
	}
	slices.SortStableFunc(cs, func(a, b kc) int { return cmp.Compare(a.key, b.key) })
	var keys []string
	for i, c := range cs {
		e.Causes[i] = c.e
		keys = append(keys, c.key)
	}
	if _, ok := e.ErrorKind.(*skind.PropertyNames); ok {
		e.InstanceLocation = []string{"(propertyNames)"}
	}
	return fmt.Sprintf("(%s %q %q %s [%s])", e.SchemaURL, e.InstanceLocation, e.ErrorKind.KeywordPath(), e.ErrorKind.LocalizedString(printer), strings.Join(keys, " "))
}

func ourCompileErr(err error) string {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			ourSort(ve)
		}
	}
	return err.Error()
}

func theirCompileErr(err error) string {
	var sve *santhosh.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *santhosh.ValidationError
		if errors.As(sve.Err, &ve) {
			theirSort(ve)
		}
	}
	return err.Error()
}

func runOurs(doc any, instances []any) (o outcome) {
	c := jsonschema.NewCompiler()
	c.UseLoader(refuse)
	if err := c.AddResource(testURL, doc); err != nil {
		o.compileErr = err.Error()
		return o
	}
	s, err := c.Compile(testURL)
	if err != nil {
		o.compileErr = ourCompileErr(err)
		return o
	}
	for _, inst := range instances {
		err := s.Validate(inst)
		if err == nil {
			o.results = append(o.results, "valid")
			continue
		}
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			o.results = append(o.results, "not a ValidationError: "+err.Error())
			continue
		}
		o.results = append(o.results, ourRender(ve))
	}
	return o
}

func runTheirs(doc any, instances []any) (o outcome) {
	defer func() {
		if p := recover(); p != nil {
			o.panicked = p
		}
	}()
	c := santhosh.NewCompiler()
	c.UseLoader(santhoshLoader{})
	if err := c.AddResource(testURL, doc); err != nil {
		o.compileErr = err.Error()
		return o
	}
	s, err := c.Compile(testURL)
	if err != nil {
		o.compileErr = theirCompileErr(err)
		return o
	}
	for _, inst := range instances {
		err := s.Validate(inst)
		if err == nil {
			o.results = append(o.results, "valid")
			continue
		}
		var ve *santhosh.ValidationError
		if !errors.As(err, &ve) {
			o.results = append(o.results, "not a ValidationError: "+err.Error())
			continue
		}
		o.results = append(o.results, theirRender(ve))
	}
	return o
}

// stats counts what a differential run compared.
type stats struct {
	schemas, compileErrs, instances, invalid, santhoshPanics int
}

// compare runs both on a schema and its instances and reports any
// difference. A compile error of santhosh's that names one of several
// problems in map order may differ from ours: santhosh is run again, up
// to 20 times, for the same text.
func compare(t testing.TB, name string, doc any, instances []any, st *stats) bool {
	t.Helper()
	theirs := runTheirs(doc, instances)
	if theirs.panicked != nil {
		st.santhoshPanics++
		return true
	}
	ours := runOurs(doc, instances)
	st.schemas++
	if ours.compileErr != theirs.compileErr {
		for range 20 {
			if again := runTheirs(doc, instances); again.compileErr == ours.compileErr {
				theirs = again
				break
			}
		}
	}
	if ours.compileErr != theirs.compileErr &&
		(sameDuplicate(ours.compileErr, theirs.compileErr) || sameUnresolved(ours.compileErr, theirs.compileErr)) {
		theirs.compileErr = ours.compileErr
	}
	if ours.compileErr != theirs.compileErr {
		t.Errorf("%s: compile:\nours:     %s\nsanthosh: %s", name, ours.compileErr, theirs.compileErr)
		return false
	}
	if ours.compileErr != "" {
		st.compileErrs++
		return true
	}
	ok := true
	for i := range instances {
		st.instances++
		if theirs.results[i] != "valid" {
			st.invalid++
		}
		if ours.results[i] != theirs.results[i] {
			t.Errorf("%s: instance %d %s:\nours:\n%s\nsanthosh:\n%s", name, i, show(instances[i]), ours.results[i], theirs.results[i])
			ok = false
		}
	}
	return ok
}

// sameDuplicate: two errors of a duplicate anchor or id. Which of several
// duplicates santhosh names first depends on Go's map order.
func sameDuplicate(a, b string) bool {
	if !strings.HasPrefix(a, "duplicate anchor") && !strings.HasPrefix(a, "duplicate id") {
		return false
	}
	return strings.HasPrefix(b, "duplicate anchor") || strings.HasPrefix(b, "duplicate id")
}

// sameUnresolved: two errors of a reference that does not resolve. When a
// schema holds several, which one santhosh meets first depends on Go's map
// order (CI once saw 21 runs in a row name another than ours).
func sameUnresolved(a, b string) bool {
	return isUnresolved(a) && isUnresolved(b)
}

func isUnresolved(e string) bool {
	return (strings.HasPrefix(e, "json-pointer in ") || strings.HasPrefix(e, "anchor in ")) &&
		strings.Contains(e, " not found")
}

func show(v any) string {
	s := fmt.Sprintf("%v", v)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
