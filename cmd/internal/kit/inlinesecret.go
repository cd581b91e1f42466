package kit

import "fmt"

// InlineSecret is a configuration member that no file may give: a secret (a password,
// a client secret) written into the YAML ends up in ConfigMaps, repositories and
// backups. Decoding it is an error naming the member and the ones to use instead, a
// file holding the secret or an environment variable, which M says.
type InlineSecret[M SecretMember] struct{}

// SecretMember names a member an InlineSecret stands for: its path in the
// configuration, and the members naming the file and the environment variable that
// give the secret instead.
type SecretMember interface {
	SecretMember() (path, file, env string)
}

// UnmarshalYAML refuses every value, present at all.
func (InlineSecret[M]) UnmarshalYAML(func(any) error) error {
	var m M
	path, file, env := m.SecretMember()
	return fmt.Errorf("%s: a secret is never written in the configuration: name a file (%s) or an environment variable (%s) holding it", path, file, env)
}
