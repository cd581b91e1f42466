package cmdutil

import (
	"reflect"
	"testing"
)

func TestCheckConfigFlag(t *testing.T) {
	for _, c := range []struct {
		in    []string
		out   []string
		check bool
	}{
		{[]string{"-listen", ":1"}, []string{"-listen", ":1"}, false},
		{[]string{"-check-config", "-listen", ":1"}, []string{"-listen", ":1"}, true},
		{[]string{"--check-config=true"}, nil, true},
		{[]string{"--check-config=false"}, nil, false},
		{[]string{"--check-config=maybe"}, []string{"--check-config=maybe"}, false},
		{[]string{"--", "-check-config"}, []string{"--", "-check-config"}, false},
		{[]string{"check-config"}, []string{"check-config"}, false},
	} {
		out, check := CheckConfigFlag(c.in)
		if !reflect.DeepEqual(out, c.out) || check != c.check {
			t.Errorf("%v: got %v %v", c.in, out, check)
		}
	}
}
