package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// usageError is a command line cobra refused (a missing or extra argument, an unknown
// verb): Execute prints it with the command's usage line and the command lines the
// person probably meant.
type usageError struct {
	cmd   *cobra.Command
	err   error
	meant []string
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// print writes the error, the usage line (for a runnable command) and the suggestions.
func (e *usageError) print(w interface{ Write([]byte) (int, error) }) {
	fmt.Fprintln(w, "error:", e.err)
	if e.cmd.Runnable() {
		fmt.Fprintf(w, "\nUsage:\n  %s\n", e.cmd.UseLine())
	}
	if len(e.meant) > 0 {
		fmt.Fprint(w, "\nDid you mean this?\n")
		for _, m := range e.meant {
			fmt.Fprintf(w, "\t%s\n", m)
		}
	}
	fmt.Fprintf(w, "\nRun '%s --help' for examples and flags.\n", e.cmd.CommandPath())
}

// checkArgs wraps the argument check of c and of its subcommands: a wrong count says
// what the command takes and, for `VERB NAME`, that the kind comes first.
func checkArgs(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return &usageError{cmd: cmd, err: err, meant: kindFirst(cmd, args)}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		checkArgs(sub)
	}
}

// kindFirst is what `gitsync VERB NAME` means when VERB takes `KIND NAME`: one command
// line per kind its usage names (`tree app|...`), the NAME after the kind.
func kindFirst(cmd *cobra.Command, args []string) []string {
	if len(args) != 1 {
		return nil
	}
	if _, err := parseKind(args[0]); err == nil {
		return nil // the kind is there, the NAME is missing: the usage line says so
	}
	use := strings.Fields(cmd.Use)
	if len(use) < 3 || !strings.Contains(use[2], "NAME") {
		return nil
	}
	var meant []string
	for _, k := range strings.Split(use[1], "|") {
		if parsed, err := parseKind(k); err == nil {
			line := fmt.Sprintf("%s %s %s", cmd.CommandPath(), k, args[0])
			if parsed == kindApp { // the most common kind first
				meant = append([]string{line}, meant...)
			} else {
				meant = append(meant, line)
			}
		}
	}
	return meant
}

// unknownCommand rewrites cobra's "unknown command" error of root: other tools' habits
// (`argocd app list`, `flux get sources`, `kubectl get`-like `gitsync apps`) get the
// gitsync command line they mean, anything else cobra's closest verbs.
func unknownCommand(root *cobra.Command, err error, args []string) error {
	var word string
	if _, scanErr := fmt.Sscanf(err.Error(), "unknown command %q", &word); scanErr != nil {
		return err
	}
	var rest []string
	for i, a := range args {
		if a == word {
			for _, r := range args[i+1:] {
				if strings.HasPrefix(r, "-") {
					break
				}
				rest = append(rest, r)
			}
			break
		}
	}
	meant := habit(root, word, rest)
	if len(meant) == 0 {
		for _, s := range root.SuggestionsFor(word) {
			meant = append(meant, strings.Join(append([]string{root.Name(), s}, rest...), " "))
		}
	}
	return &usageError{cmd: root, err: fmt.Errorf("unknown command %q for %q", word, root.CommandPath()), meant: meant}
}

// verbsOnKinds are the verbs that take `KIND NAME`, by the words other tools use for them
// (`argocd app sync NAME` is `gitsync reconcile app NAME`).
var verbsOnKinds = map[string]string{
	"get": "get", "sync": "reconcile", "reconcile": "reconcile", "diff": "diff", "build": "build",
	"history": "history", "rollback": "rollback", "tree": "tree", "resources": "tree", "events": "events",
	"logs": "logs", "wait": "wait", "suspend": "suspend", "resume": "resume", "unpause": "resume",
}

// habit is what `gitsync WORD REST...` means when WORD is a kind (Argo CD's `app list`,
// `app sync NAME`) or a listing verb of another tool; nil otherwise.
func habit(root *cobra.Command, word string, rest []string) []string {
	name := root.Name()
	switch strings.ToLower(word) {
	case "list", "ls", "status":
		return []string{name + " get apps", name + " get sources"}
	}
	k, err := parseKind(word)
	if err != nil {
		return nil
	}
	if len(rest) == 0 {
		return []string{fmt.Sprintf("%s get %ss", name, k)}
	}
	verb := strings.ToLower(rest[0])
	switch {
	case verb == "list" || verb == "ls" || (verb == "get" && len(rest) == 1):
		return []string{fmt.Sprintf("%s get %ss", name, k)}
	case verbsOnKinds[verb] != "" && len(rest) > 1:
		return []string{fmt.Sprintf("%s %s %s %s", name, verbsOnKinds[verb], k, strings.Join(rest[1:], " "))}
	case verbsOnKinds[verb] != "":
		return []string{fmt.Sprintf("%s %s %s NAME", name, verbsOnKinds[verb], k)}
	}
	return []string{fmt.Sprintf("%s get %ss", name, k)}
}
