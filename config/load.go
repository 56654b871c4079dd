package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/subsync/subsync/internal/tomlguard"
)

// Load reads the configuration file at path and returns it with the environment overrides
// applied, defaults filled and everything validated. getenv reads environment variables
// (os.Getenv when nil). A missing or unreadable file is an error wrapping the *fs.PathError;
// a file with problems yields an *Error that lists them all.
func Load(path string, getenv func(string) string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read configuration: %w", err)
	}
	defer f.Close()
	data, err := tomlguard.Read(f)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("read configuration: %w", err)
		}
		return nil, &Error{Path: path, Problems: []error{&FieldError{Reason: err.Error()}}}
	}
	return Parse(path, data, getenv)
}

// Parse is [Load] on data already read. path names the file in messages and anchors relative
// paths; with path empty, relative paths are relative to the working directory (a run
// configured by the environment alone: Parse("", nil, os.Getenv)).
func Parse(path string, data []byte, getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	// Before parsing: the parser's memory is out of proportion to some small files.
	if err := tomlguard.Check(data); err != nil {
		return nil, &Error{Path: path, Problems: []error{&FieldError{Reason: err.Error()}}}
	}
	var c Config
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&c)
	if err != nil {
		return nil, &Error{Path: path, Problems: []error{decodeProblem(err)}}
	}
	var probs problems
	probs = append(probs, unknownKeys(data, md)...)
	c.Path = path
	c.resolve(&probs, getenv)
	c.setDefaults()
	c.validate(&probs)
	if len(probs) > 0 {
		return nil, &Error{Path: path, Problems: probs}
	}
	return &c, nil
}

var tomlErrRE = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)

// decodeProblem turns a BurntSushi error into a FieldError naming the line and the key.
func decodeProblem(err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &FieldError{Key: pe.LastKey, Line: pe.Position.Line, Reason: pe.Message}
	}
	msg := err.Error()
	if m := tomlErrRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &FieldError{Key: m[2], Line: line, Reason: m[3]}
	}
	return &FieldError{Reason: strings.TrimPrefix(msg, "toml: ")}
}

// unknownKeys reports every key of the file that no field took, with array indexes restored
// ("syncs[1].source.kindd"); a table is reported once, not with each of its keys.
func unknownKeys(data []byte, md toml.MetaData) []error {
	undecoded := md.Undecoded()
	if len(undecoded) == 0 {
		return nil
	}
	var tree map[string]any
	if _, err := toml.Decode(string(data), &tree); err != nil {
		tree = nil
	}
	var out []error
	var reported []string
	for _, k := range undecoded {
		ks := k.String()
		covered := false
		for _, r := range reported {
			if strings.HasPrefix(ks, r+".") {
				covered = true
				break
			}
		}
		if covered {
			continue
		}
		reported = append(reported, ks)
		names := locate(tree, k, "")
		if len(names) == 0 {
			names = []string{ks}
		}
		reason := "unknown key"
		if s := suggest(k[len(k)-1], knownKeys(k[:len(k)-1])); s != "" {
			reason += " (did you mean " + s + "?)"
		}
		line := keyLine(data, k)
		for _, n := range names {
			out = append(out, &FieldError{Key: n, Line: line, Reason: reason})
		}
	}
	return out
}

// locate finds where key occurs in tree, naming elements of arrays by index.
func locate(node any, key toml.Key, prefix string) []string {
	if len(key) == 0 {
		return []string{prefix}
	}
	switch n := node.(type) {
	case map[string]any:
		child, ok := n[key[0]]
		if !ok {
			return nil
		}
		name := key[0]
		if prefix != "" {
			name = prefix + "." + name
		}
		return locate(child, key[1:], name)
	case []map[string]any:
		var out []string
		for i, e := range n {
			out = append(out, locate(e, key, fmt.Sprintf("%s[%d]", prefix, i))...)
		}
		return out
	case []any:
		var out []string
		for i, e := range n {
			out = append(out, locate(e, key, fmt.Sprintf("%s[%d]", prefix, i))...)
		}
		return out
	}
	return nil
}

// resolve applies the environment overrides, reads secrets from files and environment
// variables, and makes relative paths relative to the configuration file.
func (c *Config) resolve(probs *problems, getenv func(string) string) {
	dir := ""
	if c.Path != "" {
		dir = filepath.Dir(c.Path)
	}
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) || dir == "" {
			return p
		}
		return filepath.Join(dir, p)
	}

	if v := getenv(EnvUserID); v != "" {
		c.API.UserID = v
	}
	if v := getenv(EnvDatabaseURL); v != "" {
		c.Database.URL = v
	}
	if c.API.APIKey != "" && c.API.APIKeyFile != "" {
		probs.add("api.api_key", "", "set api.api_key or api.api_key_file, not both")
	}
	c.API.APIKeyFile = rel(c.API.APIKeyFile)
	switch v := getenv(EnvAPIKey); {
	case v != "":
		c.API.APIKey = v
	case c.API.APIKey == "" && c.API.APIKeyFile != "":
		key, err := readSecret(c.API.APIKeyFile)
		if err != nil {
			probs.add("api.api_key_file", c.API.APIKeyFile, "%v", err)
		}
		c.API.APIKey = key
	}
	if c.Database.DataDir != "" {
		c.Database.DataDir = rel(c.Database.DataDir)
	} else if dir != "" {
		c.Database.DataDir = filepath.Join(dir, DataDirDefault)
	}
	for i, d := range c.Database.SharedDirs {
		c.Database.SharedDirs[i] = rel(d)
	}

	for i := range c.Syncs {
		s := &c.Syncs[i]
		key := fmt.Sprintf("syncs[%d]", i)
		s.Source.Path = rel(s.Source.Path)
		s.Source.DSN = resolveDSN(probs, key+".source", s.Source.DSN, s.Source.DSNEnv, rel(s.Source.DSNFile), getenv)
		if s.Mapping.File != "" {
			s.Mapping.File = rel(s.Mapping.File)
		}
		s.Mapping.resolve(probs, key+".mapping")
	}
	for name, src := range c.Sources {
		key := "sources." + name
		src.Path = rel(src.Path)
		src.DSN = resolveDSN(probs, key, src.DSN, src.DSNEnv, rel(src.DSNFile), getenv)
		c.Sources[name] = src
	}
	wb := &c.Status.WriteBack
	wb.Path = rel(wb.Path)
	wb.DSN = resolveDSN(probs, "status.write_back", wb.DSN, wb.DSNEnv, rel(wb.DSNFile), getenv)
	c.resolveWeb(probs, getenv, rel)
}

// resolveDSN returns the DSN from exactly one of dsn, dsn_env and dsn_file.
func resolveDSN(probs *problems, key, dsn, env, file string, getenv func(string) string) string {
	n := 0
	for _, v := range []string{dsn, env, file} {
		if v != "" {
			n++
		}
	}
	if n > 1 {
		probs.add(key+".dsn", "", "set one of dsn, dsn_env and dsn_file")
		return dsn
	}
	switch {
	case env != "":
		v := getenv(env)
		if v == "" {
			probs.add(key+".dsn_env", env, "environment variable is not set")
		}
		return v
	case file != "":
		v, err := readSecret(file)
		if err != nil {
			probs.add(key+".dsn_file", file, "%v", err)
		}
		return v
	}
	return dsn
}

// readSecret reads a one-line secret file. The error never holds the file's content.
func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", unwrapPath(err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", errors.New("file is empty")
	}
	return s, nil
}
