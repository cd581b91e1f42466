package proc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
)

// PostJSON posts body as JSON to a peer's API at url, the way the tests set a peer up
// (Hydra's clients and trust relationships, OpenFGA's stores and tuples). An answer
// whose status is not one of accept is an error carrying the status and the body's
// first 64 KiB; otherwise, with out not nil, the body (at most 1 MiB) is decoded into it.
func PostJSON(ctx context.Context, url string, body, out any, accept ...int) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	rb, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if !slices.Contains(accept, res.StatusCode) {
		return fmt.Errorf("HTTP %d: %s", res.StatusCode, rb[:min(len(rb), 64<<10)])
	}
	if out != nil {
		return json.Unmarshal(rb, out)
	}
	return nil
}
