package authzen

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Subject is the AuthZEN Subject (section 5.1): the principal asking.
type Subject struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	// Properties, when not nil, is a JSON object: a map with string keys, or a struct
	// (which encodes without sorting, on the TTS's per-token path).
	Properties any `json:"properties,omitempty"`
}

// Resource is the AuthZEN Resource (section 5.2): what is asked for.
type Resource struct {
	Type       string `json:"type"`
	ID         string `json:"id"`
	Properties any    `json:"properties,omitempty"` // as Subject.Properties
}

// Action is the AuthZEN Action (section 5.3): what the subject would do.
type Action struct {
	Name       string `json:"name"`
	Properties any    `json:"properties,omitempty"` // as Subject.Properties
}

// EvaluationRequest is the Access Evaluation API request (section 6.1): the 4-tuple.
// Context (section 5.4) is optional.
type EvaluationRequest struct {
	Subject  Subject  `json:"subject"`
	Action   Action   `json:"action"`
	Resource Resource `json:"resource"`
	Context  any      `json:"context,omitempty"` // as Subject.Properties
}

// check refuses a request that section 6.1 would not allow: subject type and id,
// resource type and id and the action name are REQUIRED strings.
func (r *EvaluationRequest) check() error {
	switch {
	case r.Subject.Type == "" || r.Subject.ID == "":
		return errors.New("authzen: the subject needs a type and an id")
	case r.Resource.Type == "" || r.Resource.ID == "":
		return errors.New("authzen: the resource needs a type and an id")
	case r.Action.Name == "":
		return errors.New("authzen: the action needs a name")
	}
	switch {
	case !isObject(r.Subject.Properties):
		return errors.New("authzen: subject.properties is not a JSON object")
	case !isObject(r.Action.Properties):
		return errors.New("authzen: action.properties is not a JSON object")
	case !isObject(r.Resource.Properties):
		return errors.New("authzen: resource.properties is not a JSON object")
	case !isObject(r.Context):
		return errors.New("authzen: context is not a JSON object")
	}
	return nil
}

// isObject says whether v encodes as a JSON object (or is absent): a map with string
// keys, a struct, or a pointer to either.
func isObject(v any) bool {
	if v == nil {
		return true
	}
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct || t.Kind() == reflect.Map && t.Key().Kind() == reflect.String
}

// DefaultMaxResponse bounds a PDP's response body (an evaluation or the metadata).
const DefaultMaxResponse = 64 << 10

// maxReason bounds the reason kept for the log.
const maxReason = 512

// evaluationResponse is the Access Evaluation API response (section 6.2): decision is
// REQUIRED and boolean; context MAY carry reasons.
type evaluationResponse struct {
	Decision *bool          `json:"decision"`
	Context  map[string]any `json:"context"`
}

// ParseEvaluationResponse reads a PDP's response body: a JSON object whose decision
// member is a boolean (section 6.2: "The response object MUST contain this
// boolean-valued Decision key"). Anything else, a member named twice included, is an
// error, never a decision. The second result is the PDP's reason for the log: the
// context's reason or reason_admin (section 5.5.1) when present, else the context
// itself, cut to 512 bytes.
func ParseEvaluationResponse(body []byte) (allow bool, reason string, err error) {
	var resp evaluationResponse
	if err := decodeObject(body, &resp); err != nil {
		return false, "", fmt.Errorf("authzen: malformed response: %w", err)
	}
	if resp.Decision == nil {
		return false, "", errors.New("authzen: the response has no boolean decision")
	}
	return *resp.Decision, reasonOf(resp.Context), nil
}

// reasonOf picks the reason a PDP gave in its response context.
func reasonOf(ctx map[string]any) string {
	if len(ctx) == 0 {
		return ""
	}
	var v any = ctx
	for _, name := range []string{"reason_admin", "reason"} {
		if r, ok := ctx[name]; ok {
			v = r
			break
		}
	}
	var s string
	if str, ok := v.(string); ok {
		s = str
	} else if b, err := json.Marshal(v); err == nil {
		s = string(b)
	}
	if len(s) > maxReason {
		s = s[:maxReason]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// Metadata is the PDP metadata document (section 9): the members this client uses.
type Metadata struct {
	PolicyDecisionPoint      string `json:"policy_decision_point"`
	AccessEvaluationEndpoint string `json:"access_evaluation_endpoint"`
}
