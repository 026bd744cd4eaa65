// Package kind holds the kinds of JSON Schema validation errors: what
// failed, with the values a message needs. Each kind says its keyword
// (KeywordPath) and its message (Message), in the words of
// santhosh-tekuri/jsonschema v6, which the recorded sessions journal.
package kind

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/demiurge-dev/demiurge/internal/jsonschema/internal/msg"
)

// InvalidJSONValue is a Go value that is not JSON (a channel, NaN).
type InvalidJSONValue struct{ Value any }

// KeywordPath is empty: no keyword failed.
func (*InvalidJSONValue) KeywordPath() []string { return nil }

// Message says the value's Go type.
func (k *InvalidJSONValue) Message() string { return fmt.Sprintf("invalid jsonType %T", k.Value) }

// Schema is the root of a validation's errors: the schema that failed.
type Schema struct{ Location string }

// KeywordPath is empty.
func (*Schema) KeywordPath() []string { return nil }

// Message names the schema.
func (k *Schema) Message() string {
	return msg.Sprintf("jsonschema validation failed with %s", msg.Quote(k.Location))
}

// Group holds the errors of several keywords of one schema.
type Group struct{}

// KeywordPath is empty.
func (*Group) KeywordPath() []string { return nil }

// Message is generic: the causes say what failed.
func (*Group) Message() string { return msg.Sprintf("validation failed") }

// Not is a value that matched the schema under not.
type Not struct{}

// KeywordPath is empty, as santhosh's.
func (*Not) KeywordPath() []string { return nil }

// Message says not failed.
func (*Not) Message() string { return msg.Sprintf("'not' failed") }

// AllOf is a value that failed some schemas of allOf (the causes).
type AllOf struct{}

// KeywordPath is allOf.
func (*AllOf) KeywordPath() []string { return []string{"allOf"} }

// Message says allOf failed.
func (*AllOf) Message() string { return msg.Sprintf("'allOf' failed") }

// AnyOf is a value that failed every schema of anyOf (the causes).
type AnyOf struct{}

// KeywordPath is anyOf.
func (*AnyOf) KeywordPath() []string { return []string{"anyOf"} }

// Message says anyOf failed.
func (*AnyOf) Message() string { return msg.Sprintf("'anyOf' failed") }

// OneOf is a value that matched none of oneOf's schemas (Subschemas nil,
// the causes say why) or two of them (their indexes).
type OneOf struct{ Subschemas []int }

// KeywordPath is oneOf.
func (*OneOf) KeywordPath() []string { return []string{"oneOf"} }

// Message says none or which two matched.
func (k *OneOf) Message() string {
	if len(k.Subschemas) == 0 {
		return msg.Sprintf("'oneOf' failed, none matched")
	}
	return msg.Sprintf("'oneOf' failed, subschemas %d, %d matched", k.Subschemas[0], k.Subschemas[1])
}

// FalseSchema is any value against the schema false.
type FalseSchema struct{}

// KeywordPath is empty.
func (*FalseSchema) KeywordPath() []string { return nil }

// Message says false schema.
func (*FalseSchema) Message() string { return msg.Sprintf("false schema") }

// RefCycle is a reference that leads back to a schema already applied to
// the same value.
type RefCycle struct {
	URL              string
	KeywordLocation1 string
	KeywordLocation2 string
}

// KeywordPath is empty.
func (*RefCycle) KeywordPath() []string { return nil }

// Message names both keyword locations.
func (k *RefCycle) Message() string {
	return msg.Sprintf("both %s and %s resolve to %q causing reference cycle", k.KeywordLocation1, k.KeywordLocation2, k.URL)
}

// Type is a value of another JSON type than the schema's.
type Type struct {
	Got  string
	Want []string
}

// KeywordPath is type.
func (*Type) KeywordPath() []string { return []string{"type"} }

// Message says the types.
func (k *Type) Message() string {
	return msg.Sprintf("got %s, want %s", k.Got, strings.Join(k.Want, " or "))
}

// Enum is a value that is none of enum's.
type Enum struct {
	Got  any
	Want []any
}

// KeywordPath is enum.
func (*Enum) KeywordPath() []string { return []string{"enum"} }

// Message lists the values when none is an array or an object.
func (k *Enum) Message() string {
	for _, v := range k.Want {
		switch v.(type) {
		case []any, map[string]any:
			return msg.Sprintf("'enum' failed")
		}
	}
	if len(k.Want) == 1 {
		return msg.Sprintf("value must be %s", display(k.Want[0]))
	}
	want := make([]string, len(k.Want))
	for i, v := range k.Want {
		want[i] = display(v)
	}
	return msg.Sprintf("value must be one of %s", strings.Join(want, ", "))
}

// Const is a value other than const's.
type Const struct {
	Got  any
	Want any
}

// KeywordPath is const.
func (*Const) KeywordPath() []string { return []string{"const"} }

// Message says the value when it is neither an array nor an object.
func (k *Const) Message() string {
	switch k.Want.(type) {
	case []any, map[string]any:
		return msg.Sprintf("'const' failed")
	}
	return msg.Sprintf("value must be %s", display(k.Want))
}

// Format is a value that is not of the format's form.
type Format struct {
	Got  any
	Want string
	Err  error
}

// KeywordPath is format.
func (*Format) KeywordPath() []string { return []string{"format"} }

// Message says why.
func (k *Format) Message() string {
	return msg.Sprintf("%s is not valid %s: %v", display(k.Got), k.Want, localized(k.Err))
}

// Reference is a value that failed the schema a reference keyword ($ref,
// $recursiveRef, $dynamicRef) leads to; the causes say how.
type Reference struct {
	Keyword string
	URL     string
}

// KeywordPath is the keyword.
func (k *Reference) KeywordPath() []string { return []string{k.Keyword} }

// Message is generic.
func (*Reference) Message() string { return msg.Sprintf("validation failed") }

// MinProperties is an object with too few properties.
type MinProperties struct{ Got, Want int }

// KeywordPath is minProperties.
func (*MinProperties) KeywordPath() []string { return []string{"minProperties"} }

// Message says the counts.
func (k *MinProperties) Message() string {
	return msg.Sprintf("minProperties: got %d, want %d", k.Got, k.Want)
}

// MaxProperties is an object with too many properties.
type MaxProperties struct{ Got, Want int }

// KeywordPath is maxProperties.
func (*MaxProperties) KeywordPath() []string { return []string{"maxProperties"} }

// Message says the counts.
func (k *MaxProperties) Message() string {
	return msg.Sprintf("maxProperties: got %d, want %d", k.Got, k.Want)
}

// MinItems is an array with too few items.
type MinItems struct{ Got, Want int }

// KeywordPath is minItems.
func (*MinItems) KeywordPath() []string { return []string{"minItems"} }

// Message says the counts.
func (k *MinItems) Message() string { return msg.Sprintf("minItems: got %d, want %d", k.Got, k.Want) }

// MaxItems is an array with too many items.
type MaxItems struct{ Got, Want int }

// KeywordPath is maxItems.
func (*MaxItems) KeywordPath() []string { return []string{"maxItems"} }

// Message says the counts.
func (k *MaxItems) Message() string { return msg.Sprintf("maxItems: got %d, want %d", k.Got, k.Want) }

// AdditionalItems is an array with items past those items lists, where
// additionalItems is false.
type AdditionalItems struct{ Count int }

// KeywordPath is additionalItems.
func (*AdditionalItems) KeywordPath() []string { return []string{"additionalItems"} }

// Message says how many.
func (k *AdditionalItems) Message() string {
	return msg.Sprintf("last %d additionalItem(s) not allowed", k.Count)
}

// Required is an object without some required properties.
type Required struct{ Missing []string }

// KeywordPath is required.
func (*Required) KeywordPath() []string { return []string{"required"} }

// Message names the missing properties.
func (k *Required) Message() string {
	if len(k.Missing) == 1 {
		return msg.Sprintf("missing property %s", msg.Quote(k.Missing[0]))
	}
	return msg.Sprintf("missing properties %s", joinQuoted(k.Missing))
}

// Dependency is an object with a property whose dependencies (an array of
// names) are missing.
type Dependency struct {
	Prop    string
	Missing []string
}

// KeywordPath is dependency and the property.
func (k *Dependency) KeywordPath() []string { return []string{"dependency", k.Prop} }

// Message names the missing properties.
func (k *Dependency) Message() string {
	return msg.Sprintf("properties %s required, if %s exists", joinQuoted(k.Missing), msg.Quote(k.Prop))
}

// DependentRequired is an object with a property whose dependentRequired
// names are missing.
type DependentRequired struct {
	Prop    string
	Missing []string
}

// KeywordPath is dependentRequired and the property.
func (k *DependentRequired) KeywordPath() []string { return []string{"dependentRequired", k.Prop} }

// Message names the missing properties.
func (k *DependentRequired) Message() string {
	return msg.Sprintf("properties %s required, if %s exists", joinQuoted(k.Missing), msg.Quote(k.Prop))
}

// AdditionalProperties is an object with properties the schema does not
// allow, sorted.
type AdditionalProperties struct{ Properties []string }

// KeywordPath is additionalProperties.
func (*AdditionalProperties) KeywordPath() []string { return []string{"additionalProperties"} }

// Message names them.
func (k *AdditionalProperties) Message() string {
	return msg.Sprintf("additional properties %s not allowed", joinQuoted(k.Properties))
}

// PropertyNames is a property name that failed propertyNames.
type PropertyNames struct{ Property string }

// KeywordPath is propertyNames.
func (*PropertyNames) KeywordPath() []string { return []string{"propertyNames"} }

// Message names the property.
func (k *PropertyNames) Message() string {
	return msg.Sprintf("invalid propertyName %s", msg.Quote(k.Property))
}

// UniqueItems is an array with two equal items.
type UniqueItems struct{ Duplicates [2]int }

// KeywordPath is uniqueItems.
func (*UniqueItems) KeywordPath() []string { return []string{"uniqueItems"} }

// Message says where.
func (k *UniqueItems) Message() string {
	return msg.Sprintf("items at %d and %d are equal", k.Duplicates[0], k.Duplicates[1])
}

// Contains is an array none of whose items matches contains.
type Contains struct{}

// KeywordPath is contains.
func (*Contains) KeywordPath() []string { return []string{"contains"} }

// Message says so.
func (*Contains) Message() string { return msg.Sprintf("no items match contains schema") }

// MinContains is an array with too few items matching contains.
type MinContains struct {
	Got  []int
	Want int
}

// KeywordPath is minContains.
func (*MinContains) KeywordPath() []string { return []string{"minContains"} }

// Message says which items matched.
func (k *MinContains) Message() string {
	if len(k.Got) == 0 {
		return msg.Sprintf("min %d items required to match contains schema, but none matched", k.Want)
	}
	return msg.Sprintf("min %d items required to match contains schema, but matched %d items at %v", k.Want, len(k.Got), indexes(k.Got))
}

// MaxContains is an array with too many items matching contains.
type MaxContains struct {
	Got  []int
	Want int
}

// KeywordPath is maxContains.
func (*MaxContains) KeywordPath() []string { return []string{"maxContains"} }

// Message says which items matched.
func (k *MaxContains) Message() string {
	return msg.Sprintf("max %d items required to match contains schema, but matched %d items at %v", k.Want, len(k.Got), indexes(k.Got))
}

// MinLength is a string of too few characters.
type MinLength struct{ Got, Want int }

// KeywordPath is minLength.
func (*MinLength) KeywordPath() []string { return []string{"minLength"} }

// Message says the lengths.
func (k *MinLength) Message() string { return msg.Sprintf("minLength: got %d, want %d", k.Got, k.Want) }

// MaxLength is a string of too many characters.
type MaxLength struct{ Got, Want int }

// KeywordPath is maxLength.
func (*MaxLength) KeywordPath() []string { return []string{"maxLength"} }

// Message says the lengths.
func (k *MaxLength) Message() string { return msg.Sprintf("maxLength: got %d, want %d", k.Got, k.Want) }

// Pattern is a string the pattern does not match.
type Pattern struct {
	Got  string
	Want string
}

// KeywordPath is pattern.
func (*Pattern) KeywordPath() []string { return []string{"pattern"} }

// Message quotes both.
func (k *Pattern) Message() string {
	return msg.Sprintf("%s does not match pattern %s", msg.Quote(k.Got), msg.Quote(k.Want))
}

// Minimum is a number below minimum.
type Minimum struct{ Got, Want *big.Rat }

// KeywordPath is minimum.
func (*Minimum) KeywordPath() []string { return []string{"minimum"} }

// Message says both, as floats.
func (k *Minimum) Message() string { return bound("minimum", k.Got, k.Want) }

// Maximum is a number above maximum.
type Maximum struct{ Got, Want *big.Rat }

// KeywordPath is maximum.
func (*Maximum) KeywordPath() []string { return []string{"maximum"} }

// Message says both, as floats.
func (k *Maximum) Message() string { return bound("maximum", k.Got, k.Want) }

// ExclusiveMinimum is a number at or below exclusiveMinimum.
type ExclusiveMinimum struct{ Got, Want *big.Rat }

// KeywordPath is exclusiveMinimum.
func (*ExclusiveMinimum) KeywordPath() []string { return []string{"exclusiveMinimum"} }

// Message says both, as floats.
func (k *ExclusiveMinimum) Message() string { return bound("exclusiveMinimum", k.Got, k.Want) }

// ExclusiveMaximum is a number at or above exclusiveMaximum.
type ExclusiveMaximum struct{ Got, Want *big.Rat }

// KeywordPath is exclusiveMaximum.
func (*ExclusiveMaximum) KeywordPath() []string { return []string{"exclusiveMaximum"} }

// Message says both, as floats.
func (k *ExclusiveMaximum) Message() string { return bound("exclusiveMaximum", k.Got, k.Want) }

// MultipleOf is a number that is not a multiple of multipleOf.
type MultipleOf struct{ Got, Want *big.Rat }

// KeywordPath is multipleOf.
func (*MultipleOf) KeywordPath() []string { return []string{"multipleOf"} }

// Message says both, as floats.
func (k *MultipleOf) Message() string { return bound("multipleOf", k.Got, k.Want) }

func bound(keyword string, got, want *big.Rat) string {
	g, _ := got.Float64()
	w, _ := want.Float64()
	return msg.Sprintf(keyword+": got %v, want %v", g, w)
}

// indexes writes a list of indexes as "1 2 3".
func indexes(is []int) string {
	s := fmt.Sprint(is)
	return s[1 : len(s)-1]
}

func joinQuoted(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = msg.Quote(s)
	}
	return strings.Join(q, ", ")
}

// display writes a scalar for a message: a string quoted, anything else as
// fmt's %v does.
func display(v any) string {
	switch v := v.(type) {
	case string:
		return msg.Quote(v)
	case []any, map[string]any:
		return "value"
	}
	return fmt.Sprintf("%v", v)
}

// localized is an error's message, through the English printer when the
// error formats its own (the format checks' errors do).
func localized(err error) string {
	if l, ok := err.(interface{ Localized() string }); ok {
		return l.Localized()
	}
	return err.Error()
}
