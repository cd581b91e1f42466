// Package boundtest checks, in one place, that every in-memory structure that grows
// with traffic has a bound and frees what has expired (issue 7, item 5): the replay
// store (store.Memory), the record store (store.MemoryRecords) and the structures built
// on it (the dialog registry, handoff receiver records), the verified-WIT cache
// (wit.WithCache) and the handoff delegator's hops. Structures whose state is private
// to their package are checked by that package's *_bound_test.go: the TTS subject-token
// cache (tts), jose's header cache (jose) and the Txn-Token cache of agent.TTSSource
// (agent).
//
// Everything is in bound_test.go.
//
// Each test floods a structure with unique entries and checks the bound holds. A
// replay store must also refuse (fail closed, errcode.StoreUnavailable, kind
// Incomplete) when it is full of live entries, never forget a live entry to make room,
// and take new entries again once the clock has moved past the old ones' expiry. No
// test sleeps: the clocks are injected.
package boundtest
