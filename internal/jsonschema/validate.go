package jsonschema

import (
	"math/big"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/internal/jsonschema/kind"
)

// Validate checks a value (as UnmarshalJSON decodes one: map[string]any,
// []any, string, bool, nil, json.Number or any Go number) against the
// schema. It returns nil or a *ValidationError, whose tree of causes says
// every problem found, at its place in the value.
func (s *Schema) Validate(v any) error {
	if err := s.validateTop(v, nil, nil); err != nil {
		return err
	}
	return nil
}

// validateTop validates v from the top: a new chain of scopes. meta and
// resources are set when s is a meta-schema checking a schema document:
// a subschema that is a resource of its own is checked against its own
// dialect's meta-schema.
func (s *Schema) validateTop(v any, meta *Schema, resources map[string]*resource) *ValidationError {
	vd := validator{
		v:         v,
		vloc:      make([]string, 0, 8),
		sch:       s,
		scp:       &scope{sch: s},
		uneval:    unevalFrom(v, s, false),
		meta:      meta,
		resources: resources,
	}
	_, err := vd.validate()
	if err == nil {
		return nil
	}
	causes := []*ValidationError{err}
	if _, ok := err.ErrorKind.(*kind.Group); ok {
		causes = err.Causes
	}
	return &ValidationError{SchemaURL: s.Location, ErrorKind: &kind.Schema{Location: s.Location}, Causes: causes}
}

// A scope is a schema applied to a value, and the scope that applied it:
// the chain a dynamic reference looks up, and where a reference cycle
// shows.
type scope struct {
	sch        *Schema
	refKeyword string // the reference keyword that led here, if one did
	vid        int    // which value: scopes of one value have the same
	parent     *scope
}

func (sc *scope) child(sch *Schema, refKeyword string, vid int) *scope {
	return &scope{sch: sch, refKeyword: refKeyword, vid: vid, parent: sc}
}

// cycle is the scope above that applied the same schema to the same
// value, or nil.
func (sc *scope) cycle() *scope {
	for p := sc.parent; p != nil && p.vid == sc.vid; p = p.parent {
		if p.sch == sc.sch {
			return p
		}
	}
	return nil
}

// keywordLocation is the path of keywords from the top schema to this one.
func (sc *scope) keywordLocation() string {
	loc := ""
	for ; sc.parent != nil; sc = sc.parent {
		if sc.refKeyword != "" {
			loc = "/" + escapeToken(sc.refKeyword) + loc
			continue
		}
		cur, parent := sc.sch.Location, sc.parent.sch.Location
		if len(cur) >= len(parent) {
			cur = cur[len(parent):]
		}
		loc = cur + loc
	}
	return loc
}

// uneval is what of a value no keyword has evaluated yet: properties of an
// object, items of an array. It is tracked only when some schema has
// unevaluatedProperties or unevaluatedItems.
type uneval struct {
	props map[string]bool
	items map[int]bool
}

func unevalFrom(v any, s *Schema, callerNeeds bool) *uneval {
	u := &uneval{}
	switch v := v.(type) {
	case map[string]any:
		if !s.allPropsEvaluated && (callerNeeds || s.unevaluatedProperties != nil) {
			u.props = make(map[string]bool, len(v))
			for k := range v {
				u.props[k] = true
			}
		}
	case []any:
		if !s.allItemsEvaluated && (callerNeeds || s.unevaluatedItems != nil) && s.numItemsEvaluated < len(v) {
			u.items = map[int]bool{}
			for i := s.numItemsEvaluated; i < len(v); i++ {
				u.items[i] = true
			}
		}
	}
	return u
}

// merge keeps unevaluated only what other left unevaluated too.
func (u *uneval) merge(other *uneval) {
	for k := range u.props {
		if !other.props[k] {
			delete(u.props, k)
		}
	}
	for i := range u.items {
		if !other.items[i] {
			delete(u.items, i)
		}
	}
}

func (u *uneval) isEmpty() bool { return len(u.props) == 0 && len(u.items) == 0 }

// A validator applies one schema to one value.
type validator struct {
	v      any
	vloc   []string
	sch    *Schema
	scp    *scope
	uneval *uneval
	errors []*ValidationError
	// boolResult: only whether the value is valid matters (under not, if,
	// the later branches of oneOf): errors are empty and the first ends
	// the work.
	boolResult bool

	meta      *Schema
	resources map[string]*resource
}

func (vd *validator) validate() (*uneval, *ValidationError) {
	s, v := vd.sch, vd.v
	if s.boolean != nil {
		if *s.boolean {
			return vd.uneval, nil
		}
		return nil, vd.error(&kind.FalseSchema{})
	}
	if p := vd.scp.cycle(); p != nil {
		return nil, vd.error(&kind.RefCycle{URL: s.Location, KeywordLocation1: vd.scp.keywordLocation(), KeywordLocation2: p.keywordLocation()})
	}
	t := typeOf(v)
	if t == invalidType {
		return nil, vd.error(&kind.InvalidJSONValue{Value: v})
	}
	if s.types != 0 {
		if !s.types.has(t) && !(s.types.has(integerType) && t == numberType && isInteger(v)) {
			return nil, vd.error(&kind.Type{Got: t.String(), Want: s.types.names()})
		}
	}
	if s.constant != nil {
		eq, bad := equal(v, *s.constant)
		if bad != nil {
			return nil, vd.error(bad)
		}
		if !eq {
			return nil, vd.error(&kind.Const{Got: v, Want: *s.constant})
		}
	}
	if s.enum != nil {
		matched := false
		if s.enum.types.has(t) {
			for _, e := range s.enum.values {
				eq, bad := equal(v, e)
				if bad != nil {
					return nil, vd.error(bad)
				}
				if eq {
					matched = true
					break
				}
			}
		}
		if !matched {
			return nil, vd.error(&kind.Enum{Got: v, Want: s.enum.values})
		}
	}
	if s.format != nil {
		if err := s.format.check(v); err != nil {
			return nil, vd.error(&kind.Format{Got: v, Want: s.format.name, Err: err})
		}
	}
	if s.ref != nil {
		err := vd.validateRef(s.ref, "$ref")
		if s.DraftVersion < 2019 {
			if err != nil {
				return nil, err
			}
			return vd.uneval, nil
		}
		vd.addErr(err)
	}
	switch v := v.(type) {
	case map[string]any:
		vd.validateObject(v)
	case []any:
		vd.validateArray(v)
	case string:
		vd.validateString(v)
	default:
		if isNumber(v) {
			vd.validateNumber(v)
		}
	}
	if len(vd.errors) == 0 || !vd.boolResult {
		if s.DraftVersion >= 2019 {
			vd.validateDynamicRefs()
		}
		vd.validateApplicators()
		if s.DraftVersion >= 2019 {
			vd.validateUnevaluated()
		}
	}
	switch len(vd.errors) {
	case 0:
		return vd.uneval, nil
	case 1:
		return nil, vd.errors[0]
	}
	err := vd.error(&kind.Group{})
	err.Causes = vd.errors
	return nil, err
}

func (vd *validator) validateObject(obj map[string]any) {
	s := vd.sch
	if s.minProperties != nil && len(obj) < *s.minProperties {
		vd.addError(&kind.MinProperties{Got: len(obj), Want: *s.minProperties})
	}
	if s.maxProperties != nil && len(obj) > *s.maxProperties {
		vd.addError(&kind.MaxProperties{Got: len(obj), Want: *s.maxProperties})
	}
	if len(s.required) > 0 {
		if missing := vd.missing(obj, s.required); missing != nil {
			vd.addError(&kind.Required{Missing: missing})
		}
	}
	if vd.boolResult && len(vd.errors) > 0 {
		return
	}
	for _, name := range sortedKeys(s.dependencies) {
		if _, ok := obj[name]; !ok {
			continue
		}
		switch dep := s.dependencies[name].(type) {
		case []string:
			if missing := vd.missing(obj, dep); missing != nil {
				vd.addError(&kind.Dependency{Prop: name, Missing: missing})
			}
		case *Schema:
			vd.addErr(vd.validateSelf(dep, "", false))
		}
	}
	names := sortedKeys(obj)
	var additional []string
	for _, name := range names {
		if vd.boolResult && len(vd.errors) > 0 {
			return
		}
		value := obj[name]
		evaluated := false
		if sch, ok := s.properties[name]; ok {
			evaluated = true
			vd.addErr(vd.validateVal(sch, value, name))
		}
		for _, pp := range s.patternProperties {
			if pp.re.MatchString(name) {
				evaluated = true
				vd.addErr(vd.validateVal(pp.sch, value, name))
			}
		}
		if !evaluated && s.additionalProperties != nil {
			evaluated = true
			switch ap := s.additionalProperties.(type) {
			case bool:
				if !ap {
					additional = append(additional, name)
				}
			case *Schema:
				vd.addErr(vd.validateVal(ap, value, name))
			}
		}
		if evaluated {
			delete(vd.uneval.props, name)
		}
	}
	if len(additional) > 0 {
		vd.addError(&kind.AdditionalProperties{Properties: additional})
	}
	if s.DraftVersion == 4 {
		return
	}
	if s.propertyNames != nil {
		for _, name := range names {
			sch, meta := s.propertyNames, vd.meta
			if res := vd.metaResource(sch); res != nil {
				m, err := res.dialect.metaSchema()
				if err == nil {
					sch, meta = m, m
				}
			}
			if err := sch.validateTop(name, meta, vd.resources); err != nil {
				// The object's place. (santhosh keeps vd.vloc itself here, a
				// slice the validator goes on appending to, so its node shows
				// whatever place was visited next at each level: see
				// TestDifferential's note.)
				err.InstanceLocation = slices.Clone(vd.vloc)
				err.SchemaURL = s.propertyNames.Location
				err.ErrorKind = &kind.PropertyNames{Property: name}
				vd.addErr(err)
			}
		}
	}
	if s.DraftVersion == 6 {
		return
	}
	for _, name := range sortedKeys(s.dependentSchemas) {
		if _, ok := obj[name]; ok {
			vd.addErr(vd.validateSelf(s.dependentSchemas[name], "", false))
		}
	}
	for _, name := range sortedKeys(s.dependentRequired) {
		if _, ok := obj[name]; ok {
			if missing := vd.missing(obj, s.dependentRequired[name]); missing != nil {
				vd.addError(&kind.DependentRequired{Prop: name, Missing: missing})
			}
		}
	}
}

func (vd *validator) validateArray(arr []any) {
	s := vd.sch
	if s.minItems != nil && len(arr) < *s.minItems {
		vd.addError(&kind.MinItems{Got: len(arr), Want: *s.minItems})
	}
	if s.maxItems != nil && len(arr) > *s.maxItems {
		vd.addError(&kind.MaxItems{Got: len(arr), Want: *s.maxItems})
	}
	if s.uniqueItems && len(arr) > 1 {
		i, j, bad := duplicates(arr)
		if bad != nil {
			vd.addError(bad)
		} else if i != -1 {
			vd.addError(&kind.UniqueItems{Duplicates: [2]int{i, j}})
		}
	}
	if s.DraftVersion < 2020 {
		evaluated := 0
		switch items := s.items.(type) {
		case *Schema:
			for i, item := range arr {
				vd.addErr(vd.validateVal(items, item, strconv.Itoa(i)))
			}
			evaluated = len(arr)
		case []*Schema:
			evaluated = min(len(arr), len(items))
			for i, item := range arr[:evaluated] {
				vd.addErr(vd.validateVal(items[i], item, strconv.Itoa(i)))
			}
		}
		switch additional := s.additionalItems.(type) {
		case bool:
			if !additional && evaluated != len(arr) {
				vd.addError(&kind.AdditionalItems{Count: len(arr) - evaluated})
			}
		case *Schema:
			for i, item := range arr[evaluated:] {
				vd.addErr(vd.validateVal(additional, item, strconv.Itoa(evaluated+i)))
			}
		}
	} else {
		evaluated := min(len(s.prefixItems), len(arr))
		for i, item := range arr[:evaluated] {
			vd.addErr(vd.validateVal(s.prefixItems[i], item, strconv.Itoa(i)))
		}
		if s.items2020 != nil {
			for i, item := range arr[evaluated:] {
				vd.addErr(vd.validateVal(s.items2020, item, strconv.Itoa(evaluated+i)))
			}
		}
	}
	if s.contains != nil {
		var errs []*ValidationError
		var matched []int
		for i, item := range arr {
			if err := vd.validateVal(s.contains, item, strconv.Itoa(i)); err != nil {
				errs = append(errs, err)
			} else {
				matched = append(matched, i)
				if s.DraftVersion >= 2020 {
					delete(vd.uneval.items, i)
				}
			}
		}
		if s.minContains != nil {
			if len(matched) < *s.minContains {
				vd.addErrors(errs, &kind.MinContains{Got: matched, Want: *s.minContains})
			}
		} else if len(matched) == 0 {
			vd.addErrors(errs, &kind.Contains{})
		}
		if s.maxContains != nil && len(matched) > *s.maxContains {
			vd.addError(&kind.MaxContains{Got: matched, Want: *s.maxContains})
		}
	}
}

func (vd *validator) validateString(str string) {
	s := vd.sch
	n := -1
	if s.minLength != nil || s.maxLength != nil {
		n = utf8.RuneCountInString(str)
	}
	if s.minLength != nil && n < *s.minLength {
		vd.addError(&kind.MinLength{Got: n, Want: *s.minLength})
	}
	if s.maxLength != nil && n > *s.maxLength {
		vd.addError(&kind.MaxLength{Got: n, Want: *s.maxLength})
	}
	if s.pattern != nil && !s.pattern.MatchString(str) {
		vd.addError(&kind.Pattern{Got: str, Want: s.pattern.String()})
	}
	// contentEncoding, contentMediaType and contentSchema are annotations:
	// santhosh checks them only when asked to (AssertContent), and no
	// caller asks.
}

func (vd *validator) validateNumber(v any) {
	s := vd.sch
	var n *big.Rat
	num := func() *big.Rat {
		if n == nil {
			n = ratOf(v)
		}
		return n
	}
	if s.minimum != nil && num().Cmp(s.minimum) < 0 {
		vd.addError(&kind.Minimum{Got: num(), Want: s.minimum})
	}
	if s.maximum != nil && num().Cmp(s.maximum) > 0 {
		vd.addError(&kind.Maximum{Got: num(), Want: s.maximum})
	}
	if s.exclusiveMinimum != nil && num().Cmp(s.exclusiveMinimum) <= 0 {
		vd.addError(&kind.ExclusiveMinimum{Got: num(), Want: s.exclusiveMinimum})
	}
	if s.exclusiveMaximum != nil && num().Cmp(s.exclusiveMaximum) >= 0 {
		vd.addError(&kind.ExclusiveMaximum{Got: num(), Want: s.exclusiveMaximum})
	}
	if s.multipleOf != nil && s.multipleOf.Sign() != 0 {
		if q := new(big.Rat).Quo(num(), s.multipleOf); !q.IsInt() {
			vd.addError(&kind.MultipleOf{Got: num(), Want: s.multipleOf})
		}
	}
}

// validateApplicators applies not, allOf, anyOf, oneOf and if/then/else.
func (vd *validator) validateApplicators() {
	s := vd.sch
	if s.not != nil && vd.validateSelf(s.not, "", true) == nil {
		vd.addError(&kind.Not{})
	}
	if len(s.allOf) > 0 {
		var errs []*ValidationError
		for _, sch := range s.allOf {
			if err := vd.validateSelf(sch, "", false); err != nil {
				errs = append(errs, err)
				if vd.boolResult {
					break
				}
			}
		}
		if len(errs) > 0 {
			vd.addErrors(errs, &kind.AllOf{})
		}
	}
	if len(s.anyOf) > 0 {
		matched := false
		var errs []*ValidationError
		for _, sch := range s.anyOf {
			if err := vd.validateSelf(sch, "", false); err != nil {
				errs = append(errs, err)
			} else {
				matched = true
				// unevaluated* needs every branch that matches
				if vd.uneval.isEmpty() {
					break
				}
			}
		}
		if !matched {
			vd.addErrors(errs, &kind.AnyOf{})
		}
	}
	if len(s.oneOf) > 0 {
		matched := -1
		var errs []*ValidationError
		for i, sch := range s.oneOf {
			err := vd.validateSelf(sch, "", matched != -1)
			if err != nil {
				if matched == -1 {
					errs = append(errs, err)
				}
				continue
			}
			if matched != -1 {
				vd.addError(&kind.OneOf{Subschemas: []int{matched, i}})
				break
			}
			matched = i
		}
		if matched == -1 {
			vd.addErrors(errs, &kind.OneOf{})
		}
	}
	if s.ifSchema != nil {
		if vd.validateSelf(s.ifSchema, "", true) == nil {
			if s.thenSchema != nil {
				vd.addErr(vd.validateSelf(s.thenSchema, "", false))
			}
		} else if s.elseSchema != nil {
			vd.addErr(vd.validateSelf(s.elseSchema, "", false))
		}
	}
}

func (vd *validator) validateUnevaluated() {
	s := vd.sch
	if obj, ok := vd.v.(map[string]any); ok && s.unevaluatedProperties != nil {
		for _, name := range sortedKeys(vd.uneval.props) {
			if value, ok := obj[name]; ok {
				vd.addErr(vd.validateVal(s.unevaluatedProperties, value, name))
			}
		}
		vd.uneval.props = nil
	}
	if arr, ok := vd.v.([]any); ok && s.unevaluatedItems != nil {
		idx := make([]int, 0, len(vd.uneval.items))
		for i := range vd.uneval.items {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		for _, i := range idx {
			vd.addErr(vd.validateVal(s.unevaluatedItems, arr[i], strconv.Itoa(i)))
		}
		vd.uneval.items = nil
	}
}

// validateSelf applies another schema to the same value (allOf, $ref…);
// what it evaluates counts as evaluated here.
func (vd *validator) validateSelf(sch *Schema, refKeyword string, boolResult bool) *ValidationError {
	sub := validator{
		v:          vd.v,
		vloc:       vd.vloc,
		sch:        sch,
		scp:        vd.scp.child(sch, refKeyword, vd.scp.vid),
		uneval:     unevalFrom(vd.v, sch, !vd.uneval.isEmpty()),
		boolResult: vd.boolResult || boolResult,
		meta:       vd.meta,
		resources:  vd.resources,
	}
	sub.handleMeta()
	u, err := sub.validate()
	if err == nil {
		vd.uneval.merge(u)
	}
	return err
}

// validateVal applies a schema to a property or an item of the value.
func (vd *validator) validateVal(sch *Schema, v any, tok string) *ValidationError {
	sub := validator{
		v:          v,
		vloc:       append(vd.vloc, tok),
		sch:        sch,
		scp:        vd.scp.child(sch, "", vd.scp.vid+1),
		uneval:     unevalFrom(v, sch, false),
		boolResult: vd.boolResult,
		meta:       vd.meta,
		resources:  vd.resources,
	}
	sub.handleMeta()
	_, err := sub.validate()
	return err
}

// metaResource: when checking a schema document against its meta-schema,
// the resource (a subschema with its own $schema) at the value's place,
// where the meta-schema applies itself again.
func (vd *validator) metaResource(sch *Schema) *resource {
	if vd.meta == nil || sch != vd.meta {
		return nil
	}
	return vd.resources[instancePointer(vd.vloc)]
}

func (vd *validator) handleMeta() {
	res := vd.metaResource(vd.sch)
	if res == nil {
		return
	}
	if m, err := res.dialect.metaSchema(); err == nil {
		vd.meta, vd.sch = m, m
	}
}

func (vd *validator) validateRef(sch *Schema, keyword string) *ValidationError {
	err := vd.validateSelf(sch, keyword, false)
	if err == nil {
		return nil
	}
	refErr := vd.error(&kind.Reference{Keyword: keyword, URL: sch.Location})
	if _, ok := err.ErrorKind.(*kind.Group); ok {
		refErr.Causes = err.Causes
	} else {
		refErr.Causes = append(refErr.Causes, err)
	}
	return refErr
}

// validateDynamicRefs applies $recursiveRef (2019-09) and $dynamicRef
// (2020-12): the outermost schema of the scopes that declares the anchor.
func (vd *validator) validateDynamicRefs() {
	if sch := vd.sch.recursiveRef; sch != nil {
		if sch.recursiveAnchor {
			for sc := vd.scp; sc != nil; sc = sc.parent {
				if sc.sch.resource.recursiveAnchor {
					sch = sc.sch
				}
			}
		}
		vd.addErr(vd.validateRef(sch, "$recursiveRef"))
	}
	if sch := vd.sch.dynamicRef; sch != nil {
		name := vd.sch.dynamicRefAnchor
		if name != "" && sch.dynamicAnchor == name {
			for sc := vd.scp; sc != nil; sc = sc.parent {
				if d, ok := sc.sch.resource.dynamicAnchors[name]; ok {
					sch = d
				}
			}
		}
		vd.addErr(vd.validateRef(sch, "$dynamicRef"))
	}
}

func (vd *validator) error(k ErrorKind) *ValidationError {
	if vd.boolResult {
		return &ValidationError{}
	}
	return &ValidationError{SchemaURL: vd.sch.Location, InstanceLocation: slices.Clone(vd.vloc), ErrorKind: k}
}

func (vd *validator) addErr(err *ValidationError) {
	if err != nil {
		vd.errors = append(vd.errors, err)
	}
}

func (vd *validator) addError(k ErrorKind) { vd.errors = append(vd.errors, vd.error(k)) }

func (vd *validator) addErrors(causes []*ValidationError, k ErrorKind) {
	err := vd.error(k)
	err.Causes = causes
	vd.errors = append(vd.errors, err)
}

// missing lists the names obj lacks (in boolResult, a non-nil empty list
// at the first).
func (vd *validator) missing(obj map[string]any, names []string) []string {
	var out []string
	for _, n := range names {
		if _, ok := obj[n]; !ok {
			if vd.boolResult {
				return []string{}
			}
			out = append(out, n)
		}
	}
	return out
}
