package kit

import (
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
)

// Spec says how a binary's configuration C is read: its embedded default, its
// environment prefix and which variables and flags set which members.
type Spec[C any] struct {
	// Name is the flag set's name (the binary's).
	Name string
	// EnvPrefix starts every environment override: DIALOGTRUST_TTS_.
	EnvPrefix string
	// Default is the embedded development configuration, used without --config and
	// <EnvPrefix>CONFIG. Without one (nil) a configuration file is required.
	Default []byte
	// Env binds <EnvPrefix>NAME to members; CONFIG is taken (it names the file).
	Env []EnvVar[C]
	// Flags bind command-line flags (all of them strings) to members; --config is
	// taken.
	Flags []Flag
}

// EnvVar binds one environment variable, named without the prefix, to a member of
// the configuration by its YAML path (keys.data_dir), or to Set for an override that
// is more than one member.
type EnvVar[C any] struct {
	Name   string
	Member string
	Set    func(cfg *C, value string) error
}

// Flag binds a string flag to a member by its YAML path.
type Flag struct {
	Name, Member, Usage string
}

// Source says where the configuration came from.
type Source struct {
	File     string // "" for the embedded default
	Embedded bool

	// raw is what was read (the file or the default), overrides what the environment
	// and the flags set, in that order: Locate finds a check's member in them.
	raw       []byte
	overrides []override
}

// override records that an environment variable or a flag set a member.
type override struct{ member, by string }

// String is what the start-up log line says.
func (s Source) String() string {
	if s.Embedded {
		return "embedded development default"
	}
	return s.File
}

// CommonEnv binds the variables both services have, with the same meaning: a
// configuration with listen, issuer, trust_domains, keys, store, tls and log members.
func CommonEnv[C any]() []EnvVar[C] {
	return []EnvVar[C]{
		{Name: "LISTEN", Member: "listen"},
		{Name: "ISSUER", Member: "issuer"},
		{Name: "TRUST_DOMAINS", Member: "trust_domains"},
		{Name: "DATA_DIR", Member: "keys.data_dir"},
		{Name: "SIGNING_KEY_FILE", Member: "keys.signing_key_file"},
		{Name: "KEY_ALG", Member: "keys.alg"},
		{Name: "ROTATION_PERIOD", Member: "keys.rotation_period"},
		{Name: "PUBLISH_DELAY", Member: "keys.publish_delay"},
		{Name: "STORE", Member: "store.type"},
		{Name: "REDIS_ADDRS", Member: "store.redis.addrs"},
		{Name: "REDIS_CLUSTER", Member: "store.redis.cluster"},
		{Name: "REDIS_PREFIX", Member: "store.redis.prefix"},
		{Name: "REDIS_SENTINEL_MASTER_NAME", Member: "store.redis.sentinel.master_name"},
		{Name: "REDIS_SENTINEL_ADDRS", Member: "store.redis.sentinel.addrs"},
		{Name: "TLS_CERT_FILE", Member: "tls.cert_file"},
		{Name: "TLS_KEY_FILE", Member: "tls.key_file"},
		{Name: "LOG_LEVEL", Member: "log.level"},
		{Name: "LOG_FORMAT", Member: "log.format"},
		{Name: "LOG_ISSUED_LEVEL", Member: "log.issued_level"},
		{Name: "PPROF_LISTEN", Member: "debug.pprof_listen"},
	}
}

// CommonFlags are the flags both services have with the same text; issuer and data-dir
// say something different in each, and are the binary's.
func CommonFlags() []Flag {
	return []Flag{
		{Name: "listen", Member: "listen", Usage: "listen address host:port"},
		{Name: "signing-key-file", Member: "keys.signing_key_file", Usage: "private JWK file of the signing key"},
		{Name: "store", Member: "store.type", Usage: "replay store: memory or redis"},
		{Name: "redis-addrs", Member: "store.redis.addrs", Usage: "comma-separated Redis addresses"},
		{Name: "log-level", Member: "log.level", Usage: "debug, info, warn or error"},
		{Name: "log-format", Member: "log.format", Usage: "json (the default) or text"},
	}
}

// ServiceSpec is the Spec of a service binary: CommonEnv and CommonFlags, then the
// binary's own variables and flags.
func ServiceSpec[C any](name, envPrefix string, def []byte, env []EnvVar[C], flags ...Flag) Spec[C] {
	return Spec[C]{Name: name, EnvPrefix: envPrefix, Default: def,
		Env: append(CommonEnv[C](), env...), Flags: append(CommonFlags(), flags...)}
}

// Load builds the configuration: the embedded default, or the file named by --config
// or <EnvPrefix>CONFIG; then the environment overrides; then the flags. Each later
// layer wins.
func Load[C any](spec Spec[C], args, env []string, stderr io.Writer) (*C, Source, error) {
	if err := spec.check(); err != nil {
		return nil, Source{}, err
	}
	envm := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if ok && strings.HasPrefix(k, spec.EnvPrefix) {
			envm[strings.TrimPrefix(k, spec.EnvPrefix)] = v
		}
	}
	fs := flag.NewFlagSet(spec.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configUsage := "YAML configuration file (default: the embedded development configuration)"
	if spec.Default == nil {
		configUsage = "YAML configuration file; required (or " + spec.EnvPrefix + "CONFIG): " + spec.Name + " has no default configuration"
	}
	configFile := fs.String("config", "", configUsage)
	values := make([]*string, len(spec.Flags))
	for i, f := range spec.Flags {
		values[i] = fs.String(f.Name, "", f.Usage)
	}
	if err := fs.Parse(args); err != nil {
		return nil, Source{}, err
	}
	if fs.NArg() > 0 {
		return nil, Source{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	file := *configFile
	if file == "" {
		file = envm["CONFIG"]
	}
	src := Source{File: file, Embedded: file == ""}
	raw := spec.Default
	if src.Embedded && raw == nil {
		return nil, src, fmt.Errorf("--config FILE is required (or %sCONFIG): %s has no default configuration", spec.EnvPrefix, spec.Name)
	}
	if !src.Embedded {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, src, err
		}
		raw = b
	}
	cfg := new(C)
	if err := ParseYAML(raw, cfg); err != nil {
		if src.Embedded {
			return nil, src, fmt.Errorf("embedded default: %w", err)
		}
		return nil, src, fmt.Errorf("%s: %w", file, err)
	}
	src.raw = raw
	if s, ok := any(cfg).(SourceSetter); ok {
		s.SetSource(src)
	}
	if err := spec.applyEnv(cfg, envm); err != nil {
		return nil, src, err
	}
	for name := range envm {
		if i := spec.envIndex(name); i >= 0 && spec.Env[i].Member != "" {
			src.overrides = append(src.overrides, override{spec.Env[i].Member, "environment variable " + spec.EnvPrefix + name})
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for i, f := range spec.Flags {
		if set[f.Name] {
			if err := setMember(cfg, f.Member, *values[i]); err != nil {
				return nil, src, fmt.Errorf("--%s: %w", f.Name, err)
			}
			src.overrides = append(src.overrides, override{f.Member, "flag --" + f.Name})
		}
	}
	return cfg, src, nil
}

// Load is Load(spec, ...), for the binary's tests.
func (spec Spec[C]) Load(args, env []string, stderr io.Writer) (*C, Source, error) {
	return Load(spec, args, env, stderr)
}

// applyEnv applies the overrides. An unknown name is an error, like an unknown YAML
// member.
func (spec Spec[C]) applyEnv(cfg *C, env map[string]string) error {
	for name, v := range env {
		if name == "CONFIG" {
			continue
		}
		i := spec.envIndex(name)
		var err error
		switch {
		case i >= 0 && spec.Env[i].Set != nil:
			err = spec.Env[i].Set(cfg, v)
		case i >= 0:
			err = setMember(cfg, spec.Env[i].Member, v)
		default:
			// The tracing section's own variables (TRACING_OTLP_ENDPOINT,
			// TRACING_SAMPLE_RATIO), when the configuration has a Base.
			known := false
			if b := baseOf(cfg); b != nil {
				known, err = b.Tracing.ApplyEnv(name, v)
			}
			if !known {
				return fmt.Errorf("unknown environment variable %s%s", spec.EnvPrefix, name)
			}
		}
		if err != nil {
			return fmt.Errorf("%s%s: %w", spec.EnvPrefix, name, err)
		}
	}
	return nil
}

func (spec Spec[C]) envIndex(name string) int {
	for i, e := range spec.Env {
		if e.Name == name {
			return i
		}
	}
	return -1
}

// check makes sure that every binding names a member of C, so that a mistake in a
// table fails every start (and every test) rather than the one run that sets it.
func (spec Spec[C]) check() error {
	var zero C
	for _, e := range spec.Env {
		if e.Set == nil {
			if _, err := member(&zero, e.Member); err != nil {
				return fmt.Errorf("%s: environment variable %s%s: %w", spec.Name, spec.EnvPrefix, e.Name, err)
			}
		}
	}
	for _, f := range spec.Flags {
		if _, err := member(&zero, f.Member); err != nil {
			return fmt.Errorf("%s: flag -%s: %w", spec.Name, f.Name, err)
		}
	}
	return nil
}

// setMember sets the member at path from its textual form: a string as it is, a list
// comma-separated (SplitList), a duration (time.ParseDuration), a bool
// (strconv.ParseBool).
func setMember(cfg any, path, v string) error {
	m, err := member(cfg, path)
	if err != nil {
		return err
	}
	switch p := m.Addr().Interface().(type) {
	case *string:
		*p = v
	case *[]string:
		*p = SplitList(v)
	case *time.Duration:
		*p, err = time.ParseDuration(v)
	case *bool:
		*p, err = strconv.ParseBool(v)
	}
	return err
}

// member finds the member at a YAML path (keys.data_dir) in *cfg.
func member(cfg any, path string) (reflect.Value, error) {
	v := reflect.ValueOf(cfg).Elem()
	for _, name := range strings.Split(path, ".") {
		var ok bool
		if v, ok = field(v, name); !ok {
			return reflect.Value{}, fmt.Errorf("no member %q", path)
		}
	}
	switch v.Interface().(type) {
	case string, []string, time.Duration, bool:
		return v, nil
	}
	return reflect.Value{}, fmt.Errorf("member %q is a %s, not a string, list, duration or bool", path, v.Type())
}

// field finds the member name of the struct v, also in the structs v inlines.
func field(v reflect.Value, name string) (reflect.Value, bool) {
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	for i := range v.NumField() {
		tag, opts, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		if tag == name {
			return v.Field(i), true
		}
		if tag == "" && opts == "inline" {
			if f, ok := field(v.Field(i), name); ok {
				return f, true
			}
		}
	}
	return reflect.Value{}, false
}

// ParseYAML decodes strictly: an unknown member anywhere is an error, so a misspelt
// option cannot be silently ignored.
func ParseYAML(b []byte, v any) error {
	return yaml.UnmarshalWithOptions(b, v, yaml.Strict())
}

// SplitList splits a comma-separated list, trimming blanks and dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// CheckConfigFlag removes -check-config (or --check-config[=bool]) from args, before a
// "--" terminator, and reports whether it asked for a check only. It is handled apart
// from the configuration's flag set so that that set keeps meaning "the configuration".
func CheckConfigFlag(args []string) ([]string, bool) {
	var out []string
	check := false
	for i, a := range args {
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if name == a || name != "check-config" {
			out = append(out, a)
			continue
		}
		b, err := strconv.ParseBool(val)
		switch {
		case !hasVal:
			check = true
		case err != nil:
			out = append(out, a) // let the flag set report the bad value
		default:
			check = b
		}
	}
	return out, check
}
