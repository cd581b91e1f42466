// Package dialoga2a carries dialogs and signed handoffs over the A2A Go SDK
// (github.com/a2aproject/a2a-go, which speaks A2A 0.3: "message/send", "tasks/cancel",
// X-A2A-Extensions, task states "working", "completed" ...): dialog-binding-wimse-oauth
// on every HTTP request of the JSON-RPC transport, and handoff-context section 6
// ("A2A", "Carrying the Element") with the lifecycle of section 4 (Table 1) on A2A
// tasks. It is a module of its own so that the core module does not follow the SDK.
//
// Client side: ClientOptions gives the a2aclient factory options: the JSON-RPC
// transport over an *http.Client built on agent.Transport (every request proved, with
// the Dialog-Context and Txn-Token attached, signed responses verified) and the
// Interceptor, which lists the extension URI under both names of the service parameter
// (A2A-Extensions, and X-A2A-Extensions that a 0.3 server reads) and adds the
// delegator's "canceled" status to the tasks/cancel of a task an offer opened. PutOffer
// places a Handoff in a Message's metadata as JSON-native values (a2a-go's task store
// refuses json.RawMessage) with the URI in its extensions; ReplyStatus reads the
// delegate's status from a reply Message or from TaskStatus.message, and EventStatus
// from an event of message/stream.
//
// Server side: Handler puts a dialog.Receiver in front of a2a-go's JSON-RPC handler;
// build the receiver with dialog.WithHandoffsIn(hr, hostproto.A2A03), so that a handoff
// anywhere but params.message.metadata of "message/send" or "message/stream" is
// refused, a message whose contextId is not its Dialog-Context dlg is refused, a
// retransmission is answered from the records (only to an authenticated offer.iss) and
// a rejection with its signed status, both without the executor, and the delegator's
// "canceled" status in tasks/cancel is checked and recorded. Verified gives an executor
// what the receiver verified; Executor runs an agent's Work as a task and signs the
// statuses into the task's status messages, in the task states Table 1 maps them to
// (TaskState, HopState). An A2A task is used only by the workload that opened it
// (errcode.SessionOwnerMismatch, answered as a2a-go's "task not found").
package dialoga2a
