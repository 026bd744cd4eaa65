package schema

// receiptEvents are the built-in events that carry the receipt of a
// reducer's micro-effect back to the cell that emitted it, by effect kind.
var receiptEvents = map[string]string{
	"blob.put":  "sys/BlobPutResult@1",
	"blob.get":  "sys/BlobGetResult@1",
	"timer.set": "sys/TimerFired@1",
}

// ReceiptEvent returns the built-in event that carries the receipt of a
// micro-effect of kind (blob.put, blob.get, timer.set) back to the reducer
// cell that emitted it, and whether there is one.
func ReceiptEvent(kind string) (string, bool) {
	s, ok := receiptEvents[kind]
	return s, ok
}

// IsReceiptEvent reports whether the schema name is one of the events
// ReceiptEvent returns. Such an event carries its cell's key (the world
// delivers it to the cell that emitted the effect), so a route of it to a
// keyed reducer needs no key_field, as in AgentOS.
func IsReceiptEvent(name string) bool {
	for _, s := range receiptEvents {
		if s == name {
			return true
		}
	}
	return false
}
