// Package arm splits the event of an example reducer into the arm it is:
// its tag and its payload.
//
// The example reducers' events are variants whose every arm carries a
// payload (Start{…}, Complete{…}, PlanEnded{…}), so a unit arm is as bad
// an event as a value that is no variant at all.
package arm

import "github.com/demiurge-dev/demiurge/schema"

// Split returns the tag and payload of event, a canonical variant value
// ({"$tag": T, "$value": V}). ok is false if event is not a variant or its
// arm has no payload; the reducer reports that as a bad event, in its own
// words.
func Split(event schema.Value) (tag string, payload schema.Value, ok bool) {
	m, isMap := event.(*schema.Map)
	if !isMap {
		return "", nil, false
	}
	tag, payload, ok = m.VariantTag()
	if !ok || payload == nil {
		return "", nil, false
	}
	return tag, payload, true
}
