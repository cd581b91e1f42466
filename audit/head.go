package audit

import "errors"

// SignedCheckpoint returns the signed note of the writer's latest checkpoint, after
// appending one when records came since the last (so that it covers every record
// written so far): the octets package handoff/auditref names in a handoff's context
// reference. It fails when the log has no record yet or the checkpoint could not be
// written.
func (l *Log) SignedCheckpoint() ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seq != l.cpSize && !l.closed {
		if err := l.checkpointLocked(); err != nil {
			return nil, err
		}
	}
	if l.lastNote == nil {
		return nil, errors.New("audit: no checkpoint yet: the log has no record")
	}
	return append([]byte(nil), l.lastNote...), nil
}
