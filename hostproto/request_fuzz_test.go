package hostproto

import (
	"testing"

	"github.com/dialogtrust/dialogtrust/handoff"
)

// Section 6, fail-closed: whatever the body, a handoff key is either read where its
// host carries one or the body is refused. Every key the scanner counts is one that
// was read (else handoff_unplaced), and nothing is read that the scanner did not count.
func FuzzHandoffSec6_EveryHandoffKeyIsPlacedOrRefused(f *testing.F) {
	k, a := handoff.MCPMetaKey, handoff.A2AExtensionURI
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"` + k + `":{"offer":"a.b.c"}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"metadata":{"` + a + `":{"offer":"a.b.c"}},"extensions":["` + a + `"]}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"_meta":{"` + k + `":"a.b.c"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"id":"t","metadata":{"` + a + `":"a.b.c"}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"` + k + `":{}}}}]`,
		`{"method":"tools/call","params":{"_meta":{"` + k + `":1,"` + k + `":2}}}`,
		`{"METHOD":"message/send","params":{"message":{"metadata":{"` + a + `":{}}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, hosts := range [][]Host{Hosts(), {MCP}, {A2A03}, {A2A10}} {
			p, err := Find(body, hosts)
			if err != nil {
				continue
			}
			n, err := handoffKeys(body)
			if err != nil {
				t.Fatalf("placed a body the scanner refuses: %v", err)
			}
			read := count(p.Handoff != nil) + count(p.Cancel != nil)
			if n != read {
				t.Fatalf("%d handoff keys in the body, %d read, hosts %v: %q", n, read, hosts, body)
			}
		}
	})
}
