package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Config holds what the tool reads from its flags.
type Config struct {
	Name    string
	Verbose bool
	Limit   int
}

var errEmpty = errors.New("empty name")

func parse(args []string) (Config, error) {
	cfg := Config{Limit: 10}
	for _, arg := range args {
		switch {
		case arg == "-v":
			cfg.Verbose = true
		case strings.HasPrefix(arg, "-name="):
			cfg.Name = strings.TrimPrefix(arg, "-name=")
		default:
			return cfg, fmt.Errorf("unknown flag %q", arg)
		}
	}
	if cfg.Name == "" {
		return cfg, errEmpty
	}
	return cfg, nil
}

func greet(cfg Config) string {
	if cfg.Verbose {
		return fmt.Sprintf("Hello, %s! (limit %d)", cfg.Name, cfg.Limit)
	}
	return "Hello, " + cfg.Name
}

func main() {
	cfg, err := parse(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println(greet(cfg))
}
