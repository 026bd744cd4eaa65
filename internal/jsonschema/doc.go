// Package jsonschema compiles and validates JSON Schemas: the project's
// own validator, for tool schemas (the inputs tools declare, those MCP
// servers send) and the arguments models send them.
//
// # Why our own
//
// It replaces santhosh-tekuri/jsonschema v6.0.3, which compiled the
// meta-schemas of five drafts in its package init: 3.5 ms of every start
// of every program that links it, demiurge sh -c true included (see
// docs/BENCHMARKS.md, "Start-up, fourth round"). google/jsonschema-go,
// which the MCP SDK links, reports one problem only, found in map order,
// names the schema's place instead of the value's, types json.Number as a
// string, and refuses draft-04 and 2019-09. And the recorded sessions
// journal santhosh's words: the chat reducers refuse a call's arguments
// with tools.SchemaErrorText ("at /limit: got string, want integer"), and
// old worlds replay only if the same text comes out. So this package
// produces the same tree of errors and the same messages as santhosh
// v6.0.3, and nothing at init: the meta-schemas are compiled when a
// schema first needs one.
//
// # What it supports
//
// Drafts 4, 6, 7, 2019-09 and 2020-12, chosen by $schema (2020-12 when
// none): type, enum, const, properties, required, additionalProperties,
// patternProperties, propertyNames, items, prefixItems, additionalItems,
// contains, minContains, maxContains, the min/max keywords, multipleOf,
// uniqueItems, pattern (Go's regexp syntax), format, allOf, anyOf, oneOf,
// not, if/then/else, dependencies, dependentRequired, dependentSchemas,
// unevaluatedProperties, unevaluatedItems, $ref, $defs, definitions,
// $id, $anchor, $recursiveRef/$recursiveAnchor, $dynamicRef/$dynamicAnchor.
// Every schema is checked against its draft's meta-schema (embedded, the
// files json-schema.org publishes; see metaFS) before it compiles, and a
// refusal names every problem. format is checked in drafts 4, 6 and 7
// (date, time, date-time, duration, period, email, hostname, ipv4, ipv6,
// uri, uri-reference, iri, iri-reference, uri-template, json-pointer,
// relative-json-pointer, uuid, regex, semver; others pass), and in later
// drafts only when the meta-schema requires its vocabulary, as santhosh
// does by default. contentEncoding, contentMediaType and contentSchema are
// annotations only (santhosh's default).
//
// A schema names other documents only through its Compiler: those added
// (AddResource), the drafts' meta-schemas, and what the loader gives
// (UseLoader); tools.NewSchemaCompiler's refuses every one, so a tool
// schema must be self-contained.
//
// # Where it differs from santhosh, on purpose
//
//   - Order: santhosh lists the causes of an error, the properties an
//     additionalProperties error names, and which of several compile
//     problems it reports in Go's map order, so its text changes from run
//     to run; here objects' properties and keywords' maps are visited in
//     sorted order, so the same schema and value give the same bytes.
//   - A propertyNames error node is at the object's place; santhosh's
//     shows whatever place its validator visited next (it keeps a slice it
//     goes on appending to). SchemaErrorText shows only leaves, so its
//     text is the same.
//   - A number whose exponent is past math/big's bound (1e10000000) is
//     compared with bounds as ±10^400; santhosh panics.
//   - Schema URLs must be absolute; santhosh reads a relative one as a file
//     of the working directory.
//
// The differential tests (diff_test.go) hold it to the rest: on
// JSON-Schema-Test-Suite, the project's tool schemas, the recorded
// sessions' tool schemas and arguments, real MCP servers' schemas and
// random schemas and values, both must agree on what compiles, every
// compile error's text, what is valid, and every error tree.
package jsonschema
