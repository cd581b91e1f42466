package handoff

import (
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Issue 23 point 3: the A2A and MCP objects the carriage functions walk are read with
// exact member names and no repeated member (RFC 8259 section 4 leaves a repetition to
// the reader, so a peer and this package could find different handoffs in one
// message; encoding/json alone would also read "METADATA" as metadata).
func TestIssue23_CarriageNamesAreExactAndUnique(t *testing.T) {
	for _, msg := range []string{
		`{"metadata":{"x":1},"metadata":{"y":2}}`,
		`{"metadata":{"x":1,"x":2}}`,
		`{"extensions":["a"],"\u0065xtensions":["b"],"metadata":{}}`,
	} {
		if _, err := A2AMessageHandoff([]byte(msg)); errcode.CodeOf(err) != errcode.InvalidEncoding {
			t.Errorf("%s: %v, want invalid_encoding", msg, err)
		}
	}
	for _, msg := range []string{
		`{"MESSAGEID":"m","role":"agent","parts":[]}`,
		`{"messageId":"m","Role":"agent","parts":[]}`,
		`{"messageId":"m","role":"agent","role":"user","parts":[]}`,
	} {
		if err := validA2AMessage([]byte(msg)); errcode.CodeOf(err) != errcode.InvalidEncoding {
			t.Errorf("%s: %v, want invalid_encoding", msg, err)
		}
	}
	if err := validA2AMessage([]byte(`{"messageId":"m","role":"agent","parts":[]}`)); err != nil {
		t.Errorf("a plain A2A Message: %v", err)
	}
}
