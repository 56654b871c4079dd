package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// EnvConfig names the configuration file when --config is not given.
const EnvConfig = "SUBSYNC_CONFIG"

// SystemPath is the last place [Find] looks.
const SystemPath = "/etc/subsync/subsync.toml"

// Find returns the configuration file to read, in this order: flag (the --config flag, when
// given), the SUBSYNC_CONFIG environment variable, ./subsync.toml, then
// $XDG_CONFIG_HOME/subsync/subsync.toml ($HOME/.config when XDG_CONFIG_HOME is unset), then
// /etc/subsync/subsync.toml. A file named by the flag or the variable must exist; of the
// others, the first that exists is taken. With none, Find returns "" and the places it
// looked in, for a message. getenv reads environment variables (os.Getenv when nil).
func Find(flag string, getenv func(string) string) (path string, looked []string, err error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	named := func(p, by string) (string, []string, error) {
		if _, err := os.Stat(p); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return "", nil, fmt.Errorf("configuration file %s: %w (named by %s)", p, err, by)
		}
		return p, nil, nil
	}
	if flag != "" {
		return named(flag, "--config")
	}
	if p := getenv(EnvConfig); p != "" {
		return named(p, EnvConfig)
	}
	for _, p := range SearchPath(getenv) {
		looked = append(looked, p)
		st, err := os.Stat(p)
		switch {
		case err == nil && !st.IsDir():
			return p, nil, nil
		case err == nil:
			return "", nil, fmt.Errorf("configuration file %s: is a directory", p)
		case !errors.Is(err, fs.ErrNotExist):
			return "", nil, fmt.Errorf("configuration file %s: %w", p, unwrapPath(err))
		}
	}
	return "", looked, nil
}

// SearchPath lists where [Find] looks when neither --config nor SUBSYNC_CONFIG names a file.
func SearchPath(getenv func(string) string) []string {
	if getenv == nil {
		getenv = os.Getenv
	}
	paths := []string{DefaultPath}
	xdg := getenv("XDG_CONFIG_HOME")
	if xdg == "" {
		if home := getenv("HOME"); home != "" {
			xdg = filepath.Join(home, ".config")
		}
	}
	if xdg != "" {
		paths = append(paths, filepath.Join(xdg, "subsync", "subsync.toml"))
	}
	return append(paths, SystemPath)
}
