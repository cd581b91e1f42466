package netjson

// The fast paths, for the tests of package netjson_test that hold them equal to the
// reference path on every token kind's claims.
var (
	DecodePlain  = decodePlain
	PlainMembers = plainMembers
)
