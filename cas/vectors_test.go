package cas_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
)

// agentOSVectors are the canonical CBOR test vectors of AgentOS
// (spec/test-vectors at 84d1a9e5): JSON in, exact bytes out. AgentOS
// hashes the bytes with SHA-256; demiurge hashes the same bytes with BLAKE3.
var agentOSVectors = []struct {
	label   string
	json    string
	cborHex string
	sha256  string
}{
	{"empty_map", `{}`, "d9d9f7a0", "75bd49cb964988d6fd2c058f51230c3dc2a254753751fbe0f313b4b1e0681b69"},
	{"simple_record", `{"a":1,"b":2}`, "d9d9f7a2616101616202", "7d5fc784e8d341244b992c902413575266e3140e9081fe12fc95849cf27e7df6"},
	{"list_mixed", `["hi",1,true,null]`, "d9d9f78462686901f5f6", "0e2c2f23ecdea86fcc33f4975460ea705a19da61c5eef7218112387036581271"},
	{"defschema_point", `{"$kind":"defschema","name":"com.acme/Point@1","type":{"record":{"x":{"int":{}},"y":{"int":{}}}}}`,
		"d9d9f7a3646e616d6570636f6d2e61636d652f506f696e7440316474797065a1667265636f7264a26178a163696e74a06179a163696e74a065246b696e6469646566736368656d61",
		"9b74eadb8810612f1becfbf9b4502cccb0ef290b90e3e912b316fc279e779add"},
	{"defplan_min_end", `{"$kind":"defplan","name":"com.acme/Plan@1","input":"com.acme/Point@1","steps":[{"id":"end","op":"end"}],"edges":[],"required_caps":[],"allowed_effects":[]}`,
		"d9d9f7a7646e616d656f636f6d2e61636d652f506c616e403165246b696e6467646566706c616e6565646765738065696e70757470636f6d2e61636d652f506f696e74403165737465707381a262696463656e64626f7063656e646d72657175697265645f63617073806f616c6c6f7765645f6566666563747380",
		"d22044a0312bc264029427c93af440d1c27749468f7bd94cdad3100849b343ae"},
}

func TestAgentOSVectors(t *testing.T) {
	for _, tc := range agentOSVectors {
		t.Run(tc.label, func(t *testing.T) {
			var v any
			d := json.NewDecoder(stringReader(tc.json))
			d.UseNumber()
			if err := d.Decode(&v); err != nil {
				t.Fatal(err)
			}
			ref, got, err := cas.NodeRef(jsonToCBOR(v))
			if err != nil {
				t.Fatal(err)
			}
			if h := hex.EncodeToString(got); h != tc.cborHex {
				t.Fatalf("cbor = %s; want %s", h, tc.cborHex)
			}
			if s := sha256.Sum256(got); hex.EncodeToString(s[:]) != tc.sha256 {
				t.Errorf("sha256 = %x; want %s (AgentOS's hash of the same bytes)", s, tc.sha256)
			}
			if ref != cas.Sum(got) {
				t.Errorf("NodeRef = %v; want BLAKE3 of the bytes %v", ref, cas.Sum(got))
			}
			if err := cas.CheckCanonical(got); err != nil {
				t.Errorf("CheckCanonical: %v", err)
			}
		})
	}
}
