// Package revoketest is the contract every revoke.Store passes (RunStore), for the
// tests of revoke.Memory and store/redisstore's Revocations: what is put is listed
// until it expires or is deleted, a second put of one key replaces the first, invalid
// revocations are refused and stored nothing, a store that cannot answer says so
// (store_unavailable, never an empty list), and a Notifier tells of every change.
//
// Read store.go.
package revoketest
