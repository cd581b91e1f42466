// Package proof names the two ways a workload proves possession of its WIT key on a
// request (workload-creds-02 section 5.2): the WIMSE HTTP signature (package httpsig,
// http-signature-07 section 3), the default, and the Workload Proof Token (package wpt,
// wpt-02 section 2). Every client and receiver of the module uses this one type.
//
// Everything is in proof.go.
package proof
