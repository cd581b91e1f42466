package httpsig

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dunglas/httpsfv"
)

const fuzzMaxInput = 4096

var fuzzSeedInputs = []string{
	`wimse=("@method" "@path" "@query" "content-type" "content-digest" "workload-identity-token");created=1700000000;expires=1700000300;nonce="abcd1111";tag="wimse-workload-to-workload";wimse-aud="https://service.example/transfer";wimse-sign-response`,
	`proxy=("@target-uri" "content-type";sf);created=1700000000;tag="example-proxy-hop", wimse=("@method" "@path" "@query");created=1;expires=2;nonce="n";tag="wimse-workload-to-workload";wimse-aud="a"`,
	`wimse=("@status" "@method";req "@path";req "@query";req "content-type");created=1700000000;expires=1700000300;nonce="abcd2222";tag="wimse-workload-to-workload";wimse-req-nonce="abcd1111"`,
	`a=("@method");tag="wimse-workload-to-workload", b=("@path");tag="wimse-workload-to-workload"`,
	`wimse=("@method" "@method");created=1;expires=2;nonce="n";tag="wimse-workload-to-workload";alg="ed25519"`,
	`wimse=?1;tag="wimse-workload-to-workload"`,
	`wimse=("\"" "@x");created=1.5`,
}

// FuzzParseSignatureInput drives selection, parameter and component parsing with
// arbitrary Signature-Input and Signature fields: no panic, every rejection carries a
// code, and what is accepted re-serializes to something that parses back the same.
func FuzzParseSignatureInput(f *testing.F) {
	sig := "wimse=:" + b64.EncodeToString(make([]byte, 64)) + ":"
	for _, s := range fuzzSeedInputs {
		f.Add(s, sig)
		f.Add(s, "proxy=:AAAA:, "+sig)
	}
	f.Fuzz(func(t *testing.T, si, sg string) {
		if len(si) > fuzzMaxInput || len(sg) > fuzzMaxInput {
			return
		}
		h := http.Header{"Signature-Input": {si}, "Signature": {sg}}
		rcv, err := selectSignature(h, DefaultMaxSignatureHeaderSize)
		if err != nil {
			if errcode.CodeOf(err) == errcode.Unmapped {
				t.Fatalf("uncoded error %v", err)
			}
			return
		}
		if len(rcv.sig) != 64 || rcv.label == "" {
			t.Fatalf("selected %q with a %d-octet signature", rcv.label, len(rcv.sig))
		}
		ser, err := httpsfv.Marshal(rcv.input)
		if err != nil {
			t.Fatalf("a parsed member does not serialize: %v", err)
		}
		back, err := httpsfv.UnmarshalDictionary([]string{"x=" + ser})
		if err != nil {
			t.Fatalf("serialization %q does not parse: %v", ser, err)
		}
		m, _ := back.Get("x")
		if ser2, _ := httpsfv.Marshal(m.(httpsfv.InnerList)); ser2 != ser {
			t.Fatalf("serialization is not stable: %q vs %q", ser, ser2)
		}
		for _, response := range []bool{false, true} {
			if _, err := checkParams(rcv.input.Params, response); err != nil && errcode.CodeOf(err) == errcode.Unmapped {
				t.Fatalf("uncoded error %v", err)
			}
			comps, err := parseCovered(rcv.input.Items, response)
			if err != nil {
				if errcode.CodeOf(err) == errcode.Unmapped {
					t.Fatalf("uncoded error %v", err)
				}
				continue
			}
			for _, c := range comps {
				c2, err := parseComponentID(c.id(), response)
				if err != nil || c2 != c {
					t.Fatalf("component %s does not round-trip: %v", c.id(), err)
				}
			}
		}
	})
}

// FuzzSignatureBase builds bases from arbitrary component values: no panic, and an
// accepted base has exactly one line per component plus the parameters line, so no
// value can forge a line.
func FuzzSignatureBase(f *testing.F) {
	f.Add("POST", "/a", "x=1", "Host.Example:443", "v1", "v2")
	f.Add("GET", "", "", "", "a\r\nb", "")
	f.Add("GET", "/%0A", "a=\n", "h", " \t", "\x00")
	f.Fuzz(func(t *testing.T, method, path, query, authority, v1, v2 string) {
		if len(method)+len(path)+len(query)+len(authority)+len(v1)+len(v2) > fuzzMaxInput {
			return
		}
		h := http.Header{"X-A": {v1, v2}}
		if v2 == "" {
			h["X-A"] = []string{v1}
		}
		m := &message{header: h, method: method, scheme: "https", authority: authority, path: path, query: query}
		comps, err := parseComponentIDs([]string{`"@method"`, `"@path"`, `"@query"`, `"@authority"`, `"@target-uri"`, `"x-a"`}, false)
		if err != nil {
			t.Fatal(err)
		}
		base, err := signatureBase(m, comps, `("@method");created=1`)
		if err != nil {
			if c := errcode.CodeOf(err); c != errcode.InvalidComponentValue && c != errcode.MissingComponent {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if n := bytes.Count(base, []byte{'\n'}); n != len(comps) {
			t.Fatalf("base has %d line breaks for %d components:\n%s", n, len(comps), base)
		}
		if bytes.ContainsAny(base, "\r\x00") {
			t.Fatal("control character in the base")
		}
		for i, line := range strings.Split(string(base), "\n")[:len(comps)] {
			if !strings.HasPrefix(line, comps[i].id()+": ") {
				t.Fatalf("line %d is %q", i, line)
			}
		}
	})
}
