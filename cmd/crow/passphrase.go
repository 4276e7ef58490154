package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// Where passphrases come from.
//
//   - passphrase (init --import, identity export): CROW_PASSPHRASE, else a
//     prompt; on a terminal it does not echo, otherwise a line of stdin is
//     read (scripts).
//   - newPassphrase (identity lock): CROW_PASSPHRASE, else a prompt on the
//     terminal, asked twice; with neither, an error.
//   - lockedPassphrase (serve, identity unlock, export of a locked
//     identity): CROW_PASSPHRASE, else the content of the file named by
//     CROW_PASSPHRASE_FILE (trailing newline trimmed; e.g. a systemd
//     credential), else a prompt on the terminal; with none, an error.
//
// A passphrase is never printed or logged.

// passphrase returns CROW_PASSPHRASE, or asks for it on stdin. With confirm
// it asks twice.
func passphrase(g *globals, prompt string, confirm bool) ([]byte, error) {
	if p, ok, err := envPassphrase(); ok || err != nil {
		return p, err
	}
	var read func(prompt string) (string, error)
	if fd, ok := terminal(g.stdin); ok {
		read = func(prompt string) (string, error) { return readTerminal(g, fd, prompt) }
	} else {
		in := bufio.NewReader(g.stdin)
		read = func(prompt string) (string, error) {
			fmt.Fprint(g.stderr, prompt)
			line, err := in.ReadString('\n')
			if err != nil && line == "" {
				return "", errors.New("no passphrase: set CROW_PASSPHRASE or type it at the prompt")
			}
			return strings.TrimRight(line, "\r\n"), nil
		}
	}
	return ask(read, prompt, confirm)
}

// newPassphrase is the passphrase that locks the identity.
func newPassphrase(g *globals, prompt string) ([]byte, error) {
	if p, ok, err := envPassphrase(); ok || err != nil {
		return p, err
	}
	fd, ok := terminal(g.stdin)
	if !ok {
		return nil, errors.New("no passphrase: set CROW_PASSPHRASE or run this command on a terminal")
	}
	return ask(func(prompt string) (string, error) { return readTerminal(g, fd, prompt) }, prompt, true)
}

// lockedPassphrase is the passphrase that opens a locked identity.
func lockedPassphrase(g *globals, prompt string) ([]byte, error) {
	if p, ok, err := envPassphrase(); ok || err != nil {
		return p, err
	}
	if path, ok := os.LookupEnv("CROW_PASSPHRASE_FILE"); ok {
		if path == "" {
			return nil, errors.New("CROW_PASSPHRASE_FILE is set but empty")
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading CROW_PASSPHRASE_FILE: %w", err)
		}
		p := strings.TrimRight(string(b), "\r\n")
		if p == "" {
			return nil, fmt.Errorf("CROW_PASSPHRASE_FILE %s is empty", path)
		}
		return []byte(p), nil
	}
	fd, ok := terminal(g.stdin)
	if !ok {
		return nil, errors.New("the identity is locked and no passphrase was given: set CROW_PASSPHRASE or CROW_PASSPHRASE_FILE, or run on a terminal")
	}
	return ask(func(prompt string) (string, error) { return readTerminal(g, fd, prompt) }, prompt, false)
}

func envPassphrase() ([]byte, bool, error) {
	p, ok := os.LookupEnv("CROW_PASSPHRASE")
	if !ok {
		return nil, false, nil
	}
	if p == "" {
		return nil, true, errors.New("CROW_PASSPHRASE is set but empty")
	}
	return []byte(p), true, nil
}

func ask(read func(string) (string, error), prompt string, confirm bool) ([]byte, error) {
	p, err := read(prompt)
	if err != nil {
		return nil, err
	}
	if p == "" {
		return nil, errors.New("the passphrase must not be empty")
	}
	if confirm {
		again, err := read("again: ")
		if err != nil {
			return nil, err
		}
		if again != p {
			return nil, errors.New("the two passphrases differ")
		}
	}
	return []byte(p), nil
}

// terminal returns the file descriptor of r if it is a terminal.
func terminal(r io.Reader) (int, bool) {
	f, ok := r.(*os.File)
	if !ok || f == nil {
		return 0, false
	}
	fd := int(f.Fd())
	return fd, term.IsTerminal(fd)
}

// readTerminal prompts on stderr and reads a line from the terminal fd
// without echo.
func readTerminal(g *globals, fd int, prompt string) (string, error) {
	fmt.Fprint(g.stderr, prompt)
	b, err := term.ReadPassword(fd)
	fmt.Fprintln(g.stderr)
	if err != nil {
		return "", fmt.Errorf("reading the passphrase: %w", err)
	}
	return string(b), nil
}
