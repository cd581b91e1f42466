package hostproto

import (
	"encoding/json"
	"net/http"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/problem"
)

// The shapes of the replies that carry statuses (section 6) and refusals, by host.

// JSON-RPC 2.0 error codes (section 5.1) of a refusal at the handoff step: the handoff
// travels in the params, so a failed check is "Invalid params"; a check that could not
// be completed is the server's own "Internal error". The host protocols' own codes
// (A2A -32001 to -32009, MCP -32002, -32042) are left alone: their meanings are not
// ours. The stable code and kind are in the error's data.
const (
	jsonrpcInvalidParams = -32602
	jsonrpcInternalError = -32603
)

// WriteError answers the JSON-RPC request with id (ValidID) with the refusal err as a
// JSON-RPC error response on HTTP 200, as MCP Streamable HTTP and A2A's JSON-RPC binding
// carry errors in the body, so that an SDK client surfaces it as the call's error
// rather than as a failed transport: {"jsonrpc":"2.0","id":<the request's>,
// "error":{"code":-32602 (failed) or -32603 (could not be completed),"message":"<code>:
// <detail>","data":{"type","code","kind","detail","error"}}}, data holding the problem
// document's type, code, kind and detail, and "error" the message again (a2a-go 0.3
// surfaces only that member of the data).
//
// One refusal is MCP's own: errcode.MCPHeaderMismatch (CheckMCPHeaders) goes out as MCP
// 2026-07-28 answers fields that disagree with the body, HeaderMismatch (-32020) on HTTP
// 400, with the same data; go-sdk surfaces a JSON-RPC error on a 4xx as the call's error.
func WriteError(w http.ResponseWriter, id json.RawMessage, err error) {
	d := problem.From(err)
	code, status := jsonrpcInvalidParams, http.StatusOK
	switch {
	case errcode.KindOf(err) == errcode.Incomplete:
		code = jsonrpcInternalError
	case errcode.CodeOf(err) == errcode.MCPHeaderMismatch:
		code, status = JSONRPCHeaderMismatch, http.StatusBadRequest
	}
	msg := d.Code
	if d.Detail != "" {
		msg += ": " + d.Detail
	}
	type errorData struct {
		Type   string `json:"type"`
		Code   string `json:"code"`
		Kind   string `json:"kind"`
		Detail string `json:"detail,omitempty"`
		Error  string `json:"error"`
	}
	type rpcError struct {
		Code    int       `json:"code"`
		Message string    `json:"message"`
		Data    errorData `json:"data"`
	}
	body := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, msg, errorData{d.Type, d.Code, d.Kind, d.Detail, msg}}}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// WriteResult answers the JSON-RPC request with id (null when it has none) with result
// on HTTP 200.
func WriteResult(w http.ResponseWriter, id, result json.RawMessage) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]json.RawMessage{"jsonrpc": json.RawMessage(`"2.0"`), "id": id, "result": result})
}

// StatusResult is the JSON-RPC result with which a receiver answers a refused offer of
// host with its signed status, without running the work (section 5.1, 5.3): for A2A a
// Message with the status in its metadata under the extension URI, naming dialog as
// its contextId (A2A 1.0: wrapped as {"message": ...}); for MCP a CallToolResult with
// it in _meta and isError (the tool call was not run). The messageId names the status,
// so that a resent status is the same reply.
func StatusResult(host Host, dialog string, st handoff.Signed) (json.RawMessage, error) {
	msgID := "handoff-status-" + st.Digest().Val
	switch host {
	case A2A03:
		msg, _ := json.Marshal(map[string]any{"kind": "message", "role": "agent", "messageId": msgID,
			"contextId": dialog, "parts": []any{}})
		return handoff.PutA2AStatus(msg, st)
	case A2A10:
		// A 1.0 Message has at least one part; a SendMessage result names its kind.
		msg, _ := json.Marshal(map[string]any{"role": "ROLE_AGENT", "messageId": msgID,
			"contextId": dialog, "parts": []any{map[string]any{"text": "handoff status"}}})
		msg, err := handoff.PutA2AStatus(msg, st)
		if err != nil {
			return nil, err
		}
		return json.Marshal(map[string]json.RawMessage{"message": msg})
	}
	// isError: the tool call was refused and not run, whatever the status says; the
	// same for a first rejection and its retransmissions.
	res, _ := json.Marshal(map[string]any{"content": []any{}, "isError": true})
	return handoff.PutMCPResult(res, st)
}

// ResultStatus takes the delegate's signed status out of a JSON-RPC result, in any of
// the shapes section 6 places it in: an A2A Message (in metadata), an A2A Task (in its
// status message), either wrapped as A2A 1.0 does ({"message": ...}, {"task": ...}), or
// an MCP CallToolResult (in _meta). It returns (nil, nil) when the result carries none.
func ResultStatus(result json.RawMessage) (*handoff.Signed, error) {
	for _, take := range []func([]byte) (*handoff.Signed, error){handoff.A2AMessageStatus, handoff.A2ATaskStatus, handoff.MCPResultStatus} {
		if s, err := take(result); err != nil || s != nil {
			return s, err
		}
	}
	// An A2A 1.0 SendMessage result names its kind: {"message": ...} or {"task": ...}.
	var wrapped struct {
		Message json.RawMessage `json:"message"`
		Task    json.RawMessage `json:"task"`
	}
	if netjson.DecodeObject(result, &wrapped) == nil {
		if len(wrapped.Message) > 0 && string(wrapped.Message) != "null" {
			return handoff.A2AMessageStatus(wrapped.Message)
		}
		if len(wrapped.Task) > 0 && string(wrapped.Task) != "null" {
			return handoff.A2ATaskStatus(wrapped.Task)
		}
	}
	return nil, nil
}

// StatusUpdateStatus takes a status out of the status message of an A2A 1.0 streamed
// status update ({"result": {"statusUpdate": ...}}), which ResultStatus does not read.
func StatusUpdateStatus(body []byte) (*handoff.Signed, error) {
	var env struct {
		Result struct {
			StatusUpdate json.RawMessage `json:"statusUpdate"`
		} `json:"result"`
	}
	if json.Unmarshal(body, &env) != nil || len(env.Result.StatusUpdate) == 0 || string(env.Result.StatusUpdate) == "null" {
		return nil, nil
	}
	return handoff.A2ATaskStatus(env.Result.StatusUpdate)
}

// IsResult reports whether body is a JSON-RPC response with a result.
func IsResult(body []byte) bool {
	var env map[string]json.RawMessage
	if json.Unmarshal(body, &env) != nil || env == nil {
		return false
	}
	r, ok := env["result"]
	return ok && string(r) != "null"
}

// IsError reports whether body is a JSON-RPC response with an error.
func IsError(body []byte) bool {
	var env map[string]json.RawMessage
	if json.Unmarshal(body, &env) != nil || env == nil {
		return false
	}
	_, ok := env["error"]
	return ok
}

// A2ATask returns the Task of an A2A result (A2A 0.3: kind "task"; A2A 1.0: {"task":
// ...}), or the status update of a streamed one (A2A 0.3: kind "status-update"; A2A
// 1.0: {"statusUpdate": ...}), which carries a TaskStatus as a Task does; and the
// member of an A2A 1.0 result it is wrapped in ("" for 0.3). Nil for a Message.
func A2ATask(host Host, result json.RawMessage) (json.RawMessage, string) {
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil || m == nil {
		return nil, ""
	}
	if host == A2A10 {
		for _, member := range []string{"task", "statusUpdate"} {
			if t, ok := m[member]; ok && string(t) != "null" {
				return t, member
			}
		}
		return nil, ""
	}
	if k := string(m["kind"]); k == `"task"` || k == `"status-update"` {
		return result, ""
	}
	return nil, ""
}

// TaskState is the status.state of an A2A Task or status update ("" without one), in
// the spelling of its version (handoff.StateForA2ATask reads both).
func TaskState(task json.RawMessage) string {
	var tk struct {
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	_ = json.Unmarshal(task, &tk)
	return tk.Status.State
}

// PlaceStatus puts st in a JSON-RPC result of host (section 6): the _meta of an MCP
// CallToolResult, the metadata of an A2A reply Message or of a returned Task's status
// message (A2A 1.0 results wrapped as {"message": ...} or {"task": ...}).
func PlaceStatus(host Host, result json.RawMessage, st handoff.Signed) (json.RawMessage, error) {
	if host == MCP {
		return handoff.PutMCPResult(result, st)
	}
	if task, member := A2ATask(host, result); task != nil {
		placed, err := handoff.PutA2ATaskStatus(task, st)
		if err != nil || member == "" {
			return placed, err
		}
		return rewrap(result, member, placed)
	}
	if host == A2A10 {
		var m map[string]json.RawMessage
		if json.Unmarshal(result, &m) != nil || m == nil || len(m["message"]) == 0 || string(m["message"]) == "null" {
			return nil, errcode.New(errcode.InvalidEncoding, "an A2A 1.0 result that is neither {\"message\": ...} nor {\"task\": ...}")
		}
		placed, err := handoff.PutA2AStatus(m["message"], st)
		if err != nil {
			return nil, err
		}
		return rewrap(result, "message", placed)
	}
	return handoff.PutA2AStatus(result, st)
}

func rewrap(result json.RawMessage, member string, inner []byte) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(result, &m); err != nil {
		return nil, errcode.Wrap(errcode.InvalidEncoding, err, "result")
	}
	m[member] = inner
	return json.Marshal(m)
}
