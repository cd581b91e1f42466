package handoff

// A2A TaskState names (A2A 1.0).
const (
	A2ATaskSubmitted     = "TASK_STATE_SUBMITTED"
	A2ATaskWorking       = "TASK_STATE_WORKING"
	A2ATaskRejected      = "TASK_STATE_REJECTED"
	A2ATaskCompleted     = "TASK_STATE_COMPLETED"
	A2ATaskFailed        = "TASK_STATE_FAILED"
	A2ATaskCanceled      = "TASK_STATE_CANCELED"
	A2ATaskInputRequired = "TASK_STATE_INPUT_REQUIRED"
	A2ATaskAuthRequired  = "TASK_STATE_AUTH_REQUIRED"
)

// A2A TaskState names of A2A 0.3 (JSON-RPC "message/send", a2a-go 0.3): the same
// states, spelled in lower case with hyphens.
const (
	A2A03TaskSubmitted     = "submitted"
	A2A03TaskWorking       = "working"
	A2A03TaskRejected      = "rejected"
	A2A03TaskCompleted     = "completed"
	A2A03TaskFailed        = "failed"
	A2A03TaskCanceled      = "canceled"
	A2A03TaskInputRequired = "input-required"
	A2A03TaskAuthRequired  = "auth-required"
)

// table1 is Table 1 of section 4, with the A2A 1.0 and 0.3 spellings.
var table1 = []struct {
	state  State
	task   string
	task03 string
}{
	{StateOffered, A2ATaskSubmitted, A2A03TaskSubmitted},
	{StateAccepted, A2ATaskWorking, A2A03TaskWorking},
	{StateRejected, A2ATaskRejected, A2A03TaskRejected},
	{StateCompleted, A2ATaskCompleted, A2A03TaskCompleted},
	{StateFailed, A2ATaskFailed, A2A03TaskFailed},
	{StateCanceled, A2ATaskCanceled, A2A03TaskCanceled},
}

// A2A03TaskState is A2ATaskState in the A2A 0.3 spelling ("working", "completed" ...).
func A2A03TaskState(s State) (task string, ok bool) {
	for _, r := range table1 {
		if r.state == s {
			return r.task03, true
		}
	}
	return "", false
}

// A2ATaskState returns the nearest A2A TaskState of a hop state (Table 1). The local
// state "expired" has none: ok is false.
func A2ATaskState(s State) (task string, ok bool) {
	for _, r := range table1 {
		if r.state == s {
			return r.task, true
		}
	}
	return "", false
}

// StateForA2ATask returns the hop state nearest to an A2A TaskState, in the A2A 1.0
// spelling (TASK_STATE_COMPLETED) or the 0.3 one (completed); the two never collide.
// States with no entry in Table 1, such as TASK_STATE_INPUT_REQUIRED and
// TASK_STATE_AUTH_REQUIRED (input-required, auth-required), stay in the host protocol
// and do not change the hop's state: ok is false.
func StateForA2ATask(task string) (s State, ok bool) {
	for _, r := range table1 {
		if r.task == task || r.task03 == task {
			return r.state, true
		}
	}
	return "", false
}
