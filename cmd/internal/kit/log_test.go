package kit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestIssue24Point6LogFormat: log.format (--log-format, <PREFIX>LOG_FORMAT) is json by
// default, text on request (slog's key=value lines, for a terminal), and nothing else.
func TestIssue24Point6LogFormat(t *testing.T) {
	for format, isJSON := range map[string]bool{"": true, "json": true, "text": false} {
		var b bytes.Buffer
		l, err := NewLogger("info", format, &b)
		if err != nil {
			t.Fatal(err)
		}
		l.Info("hello", "k", "v")
		var m map[string]any
		gotJSON := json.Unmarshal(b.Bytes(), &m) == nil
		if gotJSON != isJSON || (!isJSON && !strings.Contains(b.String(), `level=INFO msg=hello k=v`)) {
			t.Errorf("format %q: %q", format, b.String())
		}
	}
	if _, err := NewLogger("info", "yaml", &bytes.Buffer{}); err == nil || err.Error() != `log.format "yaml": json or text` {
		t.Errorf("yaml: %v", err)
	}
	cfg, _, err := Load(testSpec(), []string{"--log-format", "text"}, nil, nil)
	if err != nil || cfg.Log.Format != "text" {
		t.Errorf("flag: %v %+v", err, cfg.Log)
	}
	cfg, _, err = Load(testSpec(), nil, []string{"T_LOG_FORMAT=text"}, nil)
	if err != nil || cfg.Log.Format != "text" {
		t.Errorf("env: %v %+v", err, cfg.Log)
	}
}
