package jsonschema

import (
	"math/big"
	"regexp"
)

// A Schema is a compiled schema. It is immutable, and safe to use from
// many goroutines.
type Schema struct {
	// Location is the schema's URL, with a JSON pointer as its fragment.
	Location string
	// DraftVersion is the draft the schema is read in: 4, 6, 7, 2019 or
	// 2020.
	DraftVersion int

	loc            location
	resource       *Schema            // the schema of the resource it is in
	dynamicAnchors map[string]*Schema // of a resource: its $dynamicAnchors

	// Which of an instance's properties or items the schema itself
	// evaluates, for unevaluated*.
	allPropsEvaluated bool
	allItemsEvaluated bool
	numItemsEvaluated int

	boolean *bool // the schema true or false (an empty object is true)

	ref              *Schema
	recursiveRef     *Schema
	recursiveAnchor  bool
	dynamicRef       *Schema
	dynamicRefAnchor string
	dynamicAnchor    string

	types    typeSet
	enum     *enum
	constant *any
	format   *format

	not                   *Schema
	allOf, anyOf, oneOf   []*Schema
	ifSchema, thenSchema  *Schema
	elseSchema            *Schema
	maxProperties         *int
	minProperties         *int
	required              []string
	propertyNames         *Schema
	properties            map[string]*Schema
	patternProperties     []patternSchema // sorted by pattern
	additionalProperties  any             // nil, bool or *Schema
	dependencies          map[string]any  // []string or *Schema
	dependentRequired     map[string][]string
	dependentSchemas      map[string]*Schema
	unevaluatedProperties *Schema
	minItems, maxItems    *int
	uniqueItems           bool
	contains              *Schema
	minContains           *int
	maxContains           *int
	items                 any // before 2020-12: nil, *Schema or []*Schema
	additionalItems       any // nil, bool or *Schema
	prefixItems           []*Schema
	items2020             *Schema
	unevaluatedItems      *Schema
	minLength, maxLength  *int
	pattern               *regexp.Regexp
	maximum, minimum      *big.Rat
	exclusiveMaximum      *big.Rat
	exclusiveMinimum      *big.Rat
	multipleOf            *big.Rat
}

type enum struct {
	values []any
	types  typeSet // the types of the values, to refuse others at once
}

type patternSchema struct {
	re  *regexp.Regexp
	sch *Schema
}
