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

// table1 is Table 1 of section 4.
var table1 = []struct {
	state State
	task  string
}{
	{StateOffered, A2ATaskSubmitted},
	{StateAccepted, A2ATaskWorking},
	{StateRejected, A2ATaskRejected},
	{StateCompleted, A2ATaskCompleted},
	{StateFailed, A2ATaskFailed},
	{StateCanceled, A2ATaskCanceled},
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

// StateForA2ATask returns the hop state nearest to an A2A TaskState. States with no
// entry in Table 1, such as TASK_STATE_INPUT_REQUIRED and TASK_STATE_AUTH_REQUIRED,
// stay in the host protocol and do not change the hop's state: ok is false.
func StateForA2ATask(task string) (s State, ok bool) {
	for _, r := range table1 {
		if r.task == task {
			return r.state, true
		}
	}
	return "", false
}
