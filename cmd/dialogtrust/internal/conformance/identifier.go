package conformance

import (
	"encoding/json"
	"fmt"

	"github.com/dialogtrust/dialogtrust/identifier"
)

func init() { register("identifier", runIdentifier) }

func runIdentifier(file string, raw []byte) []Result {
	var v struct {
		Accept []struct {
			ID, Identifier, Scheme, Path, Origin string
			TrustDomain                          string `json:"trust_domain"`
		} `json:"accept"`
		Reject []struct {
			ID, Identifier, Expect string
		} `json:"reject"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return []Result{{Suite: "identifier", File: file, Case: "(file)", Detail: err.Error()}}
	}
	var out []Result
	for _, c := range v.Accept {
		id, err := identifier.Parse(c.Identifier)
		if err == nil {
			got := [4]string{id.Scheme(), id.TrustDomain(), id.Path(), id.Origin()}
			want := [4]string{c.Scheme, c.TrustDomain, c.Path, c.Origin}
			if got != want {
				err = fmt.Errorf("decomposed as %q, want %q", got, want)
			} else if id.String() != c.Identifier {
				err = fmt.Errorf("re-serialized as %q", id.String())
			}
		}
		out = append(out, pass("identifier", file, c.ID, err))
	}
	for _, c := range v.Reject {
		_, err := identifier.Parse(c.Identifier)
		out = append(out, expectCode("identifier", file, c.ID, err, c.Expect))
	}
	return out
}
