package revoke_test

import (
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// newClock is a movable clock for WithClock, at a fixed start.
func newClock() *testkit.Clock { return testkit.NewClock(time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)) }
