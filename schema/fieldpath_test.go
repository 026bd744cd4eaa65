package schema_test

import (
	"testing"

	"github.com/demiurge-dev/demiurge/schema"
)

func TestFieldPath(t *testing.T) {
	v := schema.Record("a", schema.Record("b", "x"), "n", uint64(2))
	var nilMap *schema.Map
	for _, tc := range []struct {
		v    schema.Value
		path []string
		want schema.Value
	}{
		{v, []string{"a", "b"}, "x"},
		{v, []string{"n"}, uint64(2)},
		{v, nil, v},
		{v, []string{"a", "c"}, nil},
		{v, []string{"n", "b"}, nil}, // n is not a map
		{nilMap, []string{"a"}, nil},
		{nil, []string{"a"}, nil},
	} {
		if got := schema.FieldPath(tc.v, tc.path...); !schema.Equal(got, tc.want) {
			t.Errorf("FieldPath(%s, %q) = %s; want %s", schema.String(tc.v), tc.path, schema.String(got), schema.String(tc.want))
		}
	}
}
